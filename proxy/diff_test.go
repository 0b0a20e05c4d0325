package proxy

import (
	"bufio"
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The differential test runs every script of diffScripts through sluice (the
// proxy behind its own server, and behind net/http's on a GuardListener) and
// through net/http
// (httputil.ReverseProxy and http.Transport behind an http.Server), each
// against the same scripted upstream, and compares what the client and the
// upstream saw:
//
//   - a valid exchange must look the same through both: the request the
//     upstream got and the response the client got, hop-by-hop fields, framing
//     (a body is compared decoded), Date and X-Forwarded-Host aside (net/http
//     always writes the latter, sluice only when it rewrites Host); where
//     sluice differs on purpose, the script says how (sluiceLine: the path
//     normalised; dropped: a spoofable forwarding field an untrusted client
//     sent), and the comparison checks that difference instead;
//   - on any exchange sluice is never laxer: what net/http refused to pass
//     (an error status, a cut response, a request kept from the upstream)
//     sluice refuses too, and a connection (client's or upstream's) that
//     net/http does not keep for the next request, sluice does not keep;
//   - and the next request after the exchange gets its own answer through
//     sluice, whatever the exchange left on the connection. (net/http's
//     Transport may lose that race: its read loop must see unsolicited bytes
//     before the next request is written.)
//
// runDifferential takes the candidate as a diffTarget, so that another proxy (a
// transport being tried) can be run through the same scripts.

// diffScript is one exchange: the request bytes a client sends, the response
// bytes the upstream answers with, and what may follow.
type diffScript struct {
	name     string
	valid    bool   // a well-formed exchange: both must show the same bytes
	method   string // of the request, for reading the response; default GET
	request  string
	response string // "" when the request should not reach the upstream
	late     string // written after the client got its response (or gave up)
	close    bool   // the upstream closes its end after the response

	// On purpose, sluice sends the upstream something else than net/http
	// does: sluiceLine is its request line where net/http's differs (sluice
	// forwards the normalised path, net/http the raw one); dropped are the
	// request fields net/http passes on and sluice drops (forwarding fields
	// of a client that is no trusted proxy).
	sluiceLine string
	dropped    []string
}

// diffScripts is the table of exchanges.
var diffScripts = []diffScript{
	// Valid exchanges.
	{name: "get", valid: true, request: "GET /a?b=c HTTP/1.1\r\nHost: app\r\nUser-Agent: t\r\nAccept: */*\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"},
	{name: "chunked with trailers", valid: true, request: "GET / HTTP/1.1\r\nHost: app\r\nTe: trailers\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 42\r\n\r\n"},
	{name: "head", valid: true, method: "HEAD", request: "HEAD / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n"},
	{name: "204", valid: true, request: "DELETE /x HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n"},
	{name: "304", valid: true, request: "GET / HTTP/1.1\r\nHost: app\r\nIf-None-Match: \"v\"\r\n\r\n",
		response: "HTTP/1.1 304 Not Modified\r\nEtag: \"v\"\r\n\r\n"},
	{name: "post with a length", valid: true, request: "POST /p HTTP/1.1\r\nHost: app\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nbody",
		response: "HTTP/1.1 201 Created\r\nLocation: /p/1\r\nContent-Length: 0\r\n\r\n"},
	{name: "post chunked", valid: true, request: "POST /p HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"},
	{name: "body until close", valid: true, request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it", close: true},
	{name: "connection close", valid: true, request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", close: true},
	{name: "HTTP/1.0 keep-alive", valid: true, request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"},
	{name: "HTTP/1.0 close", valid: true, request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok", close: true},
	{name: "100 continue", valid: true, request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"},
	{name: "hop-by-hop fields", valid: true,
		request:  "GET / HTTP/1.1\r\nHost: app\r\nConnection: X-Hop\r\nX-Hop: secret\r\nKeep-Alive: 5\r\nProxy-Authorization: Basic eA==\r\nX-End: 1\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: X-Resp-Hop\r\nX-Resp-Hop: s\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nok"},
	{name: "repeated fields", valid: true, request: "GET / HTTP/1.1\r\nHost: app\r\nAccept: a\r\nAccept: b\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"},
	{name: "bare LF in the response head", valid: true, request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\nContent-Type: text/plain\nContent-Length: 2\n\nok"},
	{name: "bare LF in the request head", valid: true, request: "GET / HTTP/1.1\nHost: app\nX-A: 1\n\n",
		response: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"},
	{name: "404", valid: true, request: "GET /missing HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nno!"},
	{name: "503 with Retry-After", valid: true, request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nRetry-After: 1\r\nContent-Length: 4\r\n\r\nbusy"},
	// Forwarding fields of a client that is no trusted proxy: both replace
	// X-Forwarded-For and -Proto and drop Forwarded (net/http's Rewrite);
	// sluice drops X-Real-IP and underscore aliases too, which net/http
	// passes on.
	{name: "spoofed forwarding fields", valid: true,
		request: "GET / HTTP/1.1\r\nHost: app\r\nX-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: evil\r\n" +
			"Forwarded: for=6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\nX_Forwarded_For: 6.6.6.6\r\n\r\n",
		response: okResponse, dropped: []string{"X-Real-Ip", "X_forwarded_for"}},
	// Paths: sluice forwards the normalised path its groups matched; net/http
	// the raw one.
	{name: "double slash", valid: true, request: "GET //a//b HTTP/1.1\r\nHost: app\r\n\r\n", response: okResponse,
		sluiceLine: "GET /a/b HTTP/1.1"},
	{name: "dot segments", valid: true, request: "GET /./a/x/../b/. HTTP/1.1\r\nHost: app\r\n\r\n", response: okResponse,
		sluiceLine: "GET /a/b/ HTTP/1.1"},
	{name: "encoded dots and letters", valid: true, request: "GET /%2e/a/%2E%2e/%62?q=%2e HTTP/1.1\r\nHost: app\r\n\r\n", response: okResponse,
		sluiceLine: "GET /b?q=%2e HTTP/1.1"},
	{name: "absolute form", valid: true, request: "GET http://app//a/./b HTTP/1.1\r\nHost: app\r\n\r\n", response: okResponse,
		sluiceLine: "GET /a/b HTTP/1.1"},
	{name: "escapes kept", valid: true, request: "GET /a%20b/caf%c3%a9 HTTP/1.1\r\nHost: app\r\n\r\n", response: okResponse,
		sluiceLine: "GET /a%20b/caf%C3%A9 HTTP/1.1"},

	// Invalid or hostile exchanges: sluice must be no laxer than net/http.
	{name: "no Content-Type", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n", // net/http sniffs one; sluice does not
		response: "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n<html></html>"},
	{name: "response with length and chunks", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"},
	{name: "a list of lengths", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok"},
	{name: "request with a list of lengths", request: "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 4, 4\r\n\r\nbody"},
	{name: "response lengths differ", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!"},
	{name: "response gzip, chunked", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"},
	{name: "bare LF in a chunk line", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\r\n0\r\n\r\n", close: true},
	{name: "bare LF after chunk data", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\n0\r\n\r\n", close: true},
	{name: "chunk extensions beyond the bound", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("1;"+strings.Repeat("x", 4000)+"\r\nx\r\n", 6) + "0\r\n\r\n", close: true},
	{name: "short body", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", close: true},
	{name: "garbage status line", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 2OO OK\r\n\r\n", close: true},
	{name: "folded field", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok"},
	{name: "space before the colon", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nX-Foo :bar\r\nContent-Length: 2\r\n\r\nok"},
	{name: "NUL in a field", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nok"},
	{name: "HEAD, then a second response", method: "HEAD", request: "HEAD / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", late: stolenResponse},
	{name: "HEAD with a body", method: "HEAD", request: "HEAD / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nstolen!"},
	{name: "204 with a body", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 204 No Content\r\n\r\n" + stolenResponse},
	{name: "204 with a length, its body later", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", late: "stolen!"},
	{name: "body beyond its length", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + stolenResponse},
	{name: "body beyond its length, later", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", late: stolenResponse},
	{name: "101 without Upgrade", request: "GET /ws HTTP/1.1\r\nHost: app\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
		response: "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n"},
	{name: "101 to another protocol", request: "GET /ws HTTP/1.1\r\nHost: app\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
		response: "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"},
	{name: "101 unasked", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"},
	{name: "upgrade to h2c", request: "GET / HTTP/1.1\r\nHost: app\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{name: "many interim responses", request: "GET / HTTP/1.1\r\nHost: app\r\n\r\n",
		response: strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 50) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{name: "request with length and chunks", request: "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{name: "HTTP/1.0 request with chunks", request: "POST / HTTP/1.0\r\nHost: app\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{name: "request lengths differ", request: "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nbody!"},
	{name: "request gzip, chunked", request: "POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: gzip, chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n"},
	// Paths upstreams read in different ways: net/http passes them, sluice
	// answers 400.
	{name: "encoded slash", request: "GET /%2F/a HTTP/1.1\r\nHost: app\r\n\r\n", response: okResponse},
	{name: "above the root", request: "GET /../a HTTP/1.1\r\nHost: app\r\n\r\n", response: okResponse},
	{name: "dot segment with parameters", request: "GET /x/..;/a HTTP/1.1\r\nHost: app\r\n\r\n", response: okResponse},
	{name: "encoded backslash", request: "GET /%5Ca HTTP/1.1\r\nHost: app\r\n\r\n", response: okResponse},
	{name: "bare LF in a request chunk line", request: "POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n4\nbody\r\n0\r\n\r\n",
		response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
}

// diffTarget starts a proxy in front of upstream ("http://host:port") and
// returns its base URL; everything stops when the test ends.
type diffTarget struct {
	name  string
	start func(t *testing.T, upstream string) string
}

// sluiceTarget and netHTTPTarget are the two sides of the comparison.
var (
	sluiceTarget = diffTarget{"sluice", func(t *testing.T, upstream string) string {
		_, base := startProxy(t, Params{Upstream: upstream, DisableBreaker: true}, ServerParams{})
		return base
	}}
	netHTTPTarget = diffTarget{"net/http", func(t *testing.T, upstream string) string {
		u, err := url.Parse(upstream)
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{DisableCompression: true}
		t.Cleanup(tr.CloseIdleConnections)
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.Out.Host = pr.In.Host
				pr.SetXForwarded()
			},
			Transport: tr,
			ErrorLog:  log.New(io.Discard, "", 0),
		}
		return serveHandler(t, rp)
	}}
)

// serveHandler serves h with a plain http.Server on loopback.
func serveHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// diffResult is what one run of a script showed.
type diffResult struct {
	upstreamGot string // the request the upstream read; "" if none came
	interim     []int  // interim statuses the client got
	status      int    // the final status the client got; 0 for none
	header      http.Header
	body        string
	complete    bool   // the client read a whole response
	clientKept  bool   // the client's connection was still open for the follow-up request
	followUp    string // the body the follow-up request got ("next" is right)
	upKept      bool   // the follow-up went on the upstream connection of the script
}

const followUp = "GET /next HTTP/1.1\r\nHost: app\r\n\r\n"
const followUpResponse = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"

// runScript plays s through target.
func runScript(t *testing.T, target diffTarget, s diffScript) diffResult {
	t.Helper()
	up := newScriptedUpstream(t)
	base := target.start(t, up.url)
	method := s.method
	if method == "" {
		method = "GET"
	}

	// The upstream's side: every connection is served, each request answered
	// by the script, or, for the follow-up, by followUpResponse; each request
	// is reported with the number of the connection that carried it.
	type upRequest struct {
		conn int
		req  string
	}
	requests := make(chan upRequest, 16)
	clientDone := make(chan struct{})
	lateDone := make(chan struct{}) // the late bytes were written
	var lateOnce sync.Once          // (a proxy may send the script's request twice)
	testDone := make(chan struct{})
	defer close(testDone)
	serve := func(n int, p *peer) {
		for {
			req, err := p.tryReadRequest()
			if err != nil {
				return
			}
			requests <- upRequest{n, req}
			if strings.HasPrefix(req, "GET /next ") {
				_, _ = io.WriteString(p.c, followUpResponse)
				continue
			}
			_, _ = io.WriteString(p.c, s.response)
			if s.close {
				p.close()
				return
			}
			select {
			case <-clientDone:
				_, _ = io.WriteString(p.c, s.late)
				lateOnce.Do(func() { close(lateDone) })
			case <-testDone:
				return
			}
		}
	}
	go func() {
		for n := 0; ; n++ {
			select {
			case p := <-up.conns:
				go serve(n, p)
			case <-testDone:
				return
			}
		}
	}()

	var res diffResult
	c := dialRaw(t, base)
	c.send(t, s.request)
	res.interim, res.status, res.header, res.body, res.complete = readFinal(c, method)
	close(clientDone)
	scriptConn := -1
	select {
	case r := <-requests:
		res.upstreamGot, scriptConn = r.req, r.conn
	default:
	}

	// The follow-up: a request on the same client connection if it is still
	// open, else on a new one. Which upstream connection carries it?
	if scriptConn >= 0 && !s.close {
		recv(t, lateDone, "the late bytes written")
	}
	if !c.isClosed() {
		c.send(t, followUp)
		var st int
		_, st, _, res.followUp, _ = readFinal(c, "GET")
		res.clientKept = st != 0
	}
	if !res.clientKept {
		c2 := dialRaw(t, base)
		c2.send(t, followUp)
		_, _, _, res.followUp, _ = readFinal(c2, "GET")
	}
	var r upRequest
	if res.followUp == "next" {
		r = recv(t, requests, "the follow-up at the upstream") // it was there
	} else {
		select { // it may have been there, and got another answer
		case r = <-requests:
		default:
			return res
		}
	}
	if !strings.HasPrefix(r.req, "GET /next ") {
		t.Fatalf("%s: the upstream got one more request: %q", target.name, r.req)
	}
	res.upKept = r.conn == scriptConn
	return res
}

// readFinal reads responses from c until a final one (or the end of the
// connection), returning the interim statuses and the final response.
func readFinal(c rawClient, method string) (interim []int, status int, h http.Header, body string, complete bool) {
	for {
		var resp *http.Response
		var b []byte
		cut := false
		_, err := c.tryNext("a response", func(raw []byte, ended bool) (int, error) {
			br := bufio.NewReaderSize(bytes.NewReader(raw), len(raw)+16)
			r, err := http.ReadResponse(br, &http.Request{Method: method})
			if err != nil {
				if ended {
					cut = true
					return len(raw), nil
				}
				return 0, incompleteOr(err)
			}
			untilEOF := r.ContentLength < 0 && len(r.TransferEncoding) == 0 && method != "HEAD" &&
				r.StatusCode >= 200 && r.StatusCode != 204 && r.StatusCode != 304
			if untilEOF && !ended {
				return 0, errIncomplete
			}
			bb, err := io.ReadAll(r.Body)
			if err != nil {
				if ended {
					resp, b, cut = r, bb, true
					return len(raw), nil
				}
				return 0, incompleteOr(err)
			}
			resp, b = r, bb
			return len(raw) - br.Buffered(), nil
		})
		if err != nil || resp == nil {
			return interim, 0, nil, "", false
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != 101 {
			interim = append(interim, resp.StatusCode)
			continue
		}
		return interim, resp.StatusCode, resp.Header, string(b), !cut
	}
}

// okResponse is a plain answer.
const okResponse = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"

// hopFields are left out of the comparison: hop-by-hop fields, framing (bodies
// are compared decoded), X-Forwarded-Host (net/http's SetXForwarded always
// writes it; sluice only when it rewrites Host), and the Date each server
// sets. X-Forwarded-For and -Proto are compared: neither proxy trusts the
// test's client, so both write its address and scheme alone.
var hopFields = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding",
	"Upgrade", "Content-Length", "X-Forwarded-Host", "Date"}

// endToEnd returns h without hopFields, and without fields named empty (net/http
// writes "User-Agent:" as nothing).
func endToEnd(h http.Header) http.Header {
	out := http.Header{}
	for k, vv := range h {
		if slices.Contains(hopFields, k) {
			continue
		}
		out[k] = vv
	}
	return out
}

// upstreamView parses the request the upstream got into what the comparison
// looks at: the request line, the end-to-end fields and the decoded body.
func upstreamView(raw string) (string, http.Header, string, error) {
	if raw == "" {
		return "", nil, "", nil
	}
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		return "", nil, "", err
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return "", nil, "", err
	}
	h := endToEnd(req.Header)
	for k, vv := range req.Trailer {
		h["Trailer:"+k] = vv
	}
	return req.Method + " " + req.RequestURI + " " + req.Proto, h, string(body), nil
}

// passed reports whether the client got the upstream's own answer, whole.
func (r *diffResult) passed() bool {
	return r.complete && r.status != 0 && r.header.Get("Sluice-Error") == "" && r.upstreamGot != ""
}

// compareDiff checks got (a candidate's run) against ref (net/http's) for s.
func compareDiff(t *testing.T, s diffScript, ref, got diffResult) {
	t.Helper()
	if s.valid {
		refLine, refH, refBody, err1 := upstreamView(ref.upstreamGot)
		gotLine, gotH, gotBody, err2 := upstreamView(got.upstreamGot)
		if s.sluiceLine != "" {
			// On purpose: sluice sends the path it matched, normalised.
			if gotLine != s.sluiceLine || refLine == s.sluiceLine {
				t.Errorf("request line %q through sluice (want %q), %q through net/http (want the raw path)", gotLine, s.sluiceLine, refLine)
			}
			refLine = gotLine
		}
		for _, k := range s.dropped {
			// On purpose: sluice drops a spoofable field net/http passes on.
			if _, ok := refH[k]; !ok {
				t.Errorf("net/http no longer passes %s: drop it from the script's list", k)
			}
			if v, ok := gotH[k]; ok {
				t.Errorf("sluice passed %s: %q", k, v)
			}
			delete(refH, k)
		}
		if err1 != nil || err2 != nil || refLine != gotLine || refBody != gotBody || !equalHeaders(refH, gotH) {
			t.Errorf("the upstream got\n%q\nthrough net/http\n%q", got.upstreamGot, ref.upstreamGot)
		}
		refResp, gotResp := endToEnd(ref.header), endToEnd(got.header)
		if _, ok := gotResp["Content-Type"]; !ok && !strings.Contains(s.response, "Content-Type:") {
			delete(refResp, "Content-Type") // net/http sniffs one; the proxy passes none
		}
		if !ref.complete || !got.complete || ref.status != got.status || ref.body != got.body ||
			!slices.Equal(ref.interim, got.interim) && len(got.interim) > 0 || !equalHeaders(refResp, gotResp) {
			t.Errorf("the client got %d %v %q (complete %v, interim %v)\nthrough net/http %d %v %q (complete %v, interim %v)",
				got.status, gotResp, got.body, got.complete, got.interim, ref.status, refResp, ref.body, ref.complete, ref.interim)
		}
	}
	if ref.upstreamGot == "" && got.upstreamGot != "" {
		t.Errorf("the upstream got a request net/http kept from it:\n%q", got.upstreamGot)
	}
	if !ref.passed() && got.passed() {
		t.Errorf("passed %d %v %q where net/http answered %d %v %q (complete %v)",
			got.status, got.header, got.body, ref.status, ref.header, ref.body, ref.complete)
	}
	if got.followUp != "next" {
		t.Errorf("the next request got %q, not its own answer", got.followUp)
	}
	if !ref.clientKept && got.clientKept {
		t.Error("kept the client's connection where net/http closed it")
	}
	if !ref.upKept && got.upKept {
		t.Error("reused the upstream connection where net/http did not")
	}
}

func TestDifferentialAgainstNetHTTP(t *testing.T) {
	runDifferential(t, sluiceTarget)
}

// TestDifferentialNetHTTPServer runs the scripts through the proxy behind
// net/http's server on a GuardListener (server.http1 = "net/http", the
// escape hatch), whichever server the other tests use.
func TestDifferentialNetHTTPServer(t *testing.T) {
	runDifferential(t, diffTarget{"sluice on net/http's server", func(t *testing.T, upstream string) string {
		px, err := New(Params{Upstream: upstream, DisableBreaker: true})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(ServerParams{Handler: px, ErrorLog: log.New(io.Discard, "", 0)})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.Serve(GuardListener(ln, 0)) }()
		t.Cleanup(func() { _ = srv.Close(); _ = px.Close() })
		return "http://" + ln.Addr().String()
	}})
}

// runDifferential plays every script through candidate and net/http and
// compares them.
func runDifferential(t *testing.T, candidate diffTarget) {
	for _, s := range diffScripts {
		t.Run(s.name, func(t *testing.T) {
			ref := runScript(t, netHTTPTarget, s)
			got := runScript(t, candidate, s)
			if s.valid && !ref.passed() {
				t.Fatalf("net/http did not pass a valid exchange: %+v", ref)
			}
			compareDiff(t, s, ref, got)
		})
	}
}
