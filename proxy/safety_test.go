package proxy

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests drive raw bytes through the real proxy and its real server, in
// front of a scripted upstream, and check what each client and the upstream
// receive: the proxy must never carry one exchange's bytes into another, nor let
// a request past the gate, nor accept framing that net/http's Transport or nginx
// refuse.

// rawProxy starts a scripted upstream and the proxy (with its server) in front
// of it; p.Upstream is filled in.
func rawProxy(t *testing.T, p Params, sp ServerParams) (*scriptedUpstream, string, *Proxy) {
	t.Helper()
	up := newScriptedUpstream(t)
	p.Upstream = up.url
	px, base := startProxy(t, p, sp)
	return up, base, px
}

// exchangeStarted starts the proxy in front of a scripted upstream, sends
// request from a raw client, and waits until the upstream has read it; the
// upstream's connection is conn.
func exchangeStarted(t *testing.T, request string) (up *scriptedUpstream, c rawClient, conn *peer, px *Proxy) {
	t.Helper()
	up, base, px := rawProxy(t, Params{}, ServerParams{})
	c = dialRaw(t, base)
	c.send(t, request)
	conn = up.accept(t)
	conn.readRequest(t)
	return up, c, conn, px
}

const freshResponse = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh"

// stolen is the body of a response the upstream sends unasked: no client may
// ever see it.
const stolenResponse = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nstolen!"

// TestUnsolicitedBytesNeverReachAnotherClient: bytes that the upstream sends
// beyond a response, at once or while the connection sits idle in the pool,
// close that connection; the next client's request goes on a new one and gets
// its own answer.
func TestUnsolicitedBytesNeverReachAnotherClient(t *testing.T) {
	for _, tc := range []struct {
		name     string
		method   string
		response string // the answer to the first request
		late     string // written after the first client got its response
		status   int
		body     string // what the first client must get
	}{
		{"HEAD, then a second response later", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", stolenResponse, 200, ""},
		{"HEAD with a body", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n" + "stolen!" + stolenResponse, "", 200, ""},
		{"HEAD with its body later", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n", "stolen!" + stolenResponse, 200, ""},
		{"204 with a body", "GET", "HTTP/1.1 204 No Content\r\n\r\n" + stolenResponse, "", 204, ""},
		{"204, then a response later", "GET", "HTTP/1.1 204 No Content\r\n\r\n", stolenResponse, 204, ""},
		{"204 with Content-Length, its body later", "GET", "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", "stolen!", 204, ""},
		{"304, then a response later", "GET", "HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\n\r\n", stolenResponse, 304, ""},
		{"body longer than Content-Length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + stolenResponse, "", 200, "ok"},
		{"body longer than Content-Length, the rest later", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", stolenResponse, 200, "ok"},
		{"chunked body, then a response later", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", stolenResponse, 200, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, base, _ := rawProxy(t, Params{}, ServerParams{})

			first := dialRaw(t, base)
			first.send(t, tc.method+" /first HTTP/1.1\r\nHost: app\r\n\r\n")
			conn1 := up.accept(t)
			if req := conn1.readRequest(t); !strings.HasPrefix(req, tc.method+" /first ") {
				t.Fatalf("upstream got %q", req)
			}
			conn1.write(t, tc.response)
			resp, body, _ := first.readResponse(t, tc.method)
			if resp.StatusCode != tc.status || body != tc.body {
				t.Fatalf("first client: %d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
			if tc.late != "" {
				// The connection is idle in the pool now; these bytes
				// answer nothing.
				conn1.write(t, tc.late)
			}

			second := dialRaw(t, base)
			done := make(chan struct{})
			served := up.answerNext(freshResponse, done)
			second.send(t, "GET /second HTTP/1.1\r\nHost: app\r\n\r\n")
			resp, body, _ = second.readResponse(t, "GET")
			close(done)
			if body != "fresh" {
				t.Fatalf("second client got %d %q, want the answer to its own request", resp.StatusCode, body)
			}
			if req := recv(t, served, "the second request"); !strings.HasPrefix(req, "GET /second ") {
				t.Fatalf("the second request did not go on a new connection (it got %q)", req)
			}
			if got := conn1.waitClosed(t); strings.Count(got, "HTTP/1.1\r\n") != 1 {
				t.Errorf("the first connection carried more than the first request: %q", got)
			}
		})
	}
}

// TestFakeUpgradeIsRefused: a 101 whose Upgrade does not name the protocol the
// client asked for is a 502, and no tunnel is spliced: later requests on the
// client's connection still pass the proxy (and its gate) one by one.
func TestFakeUpgradeIsRefused(t *testing.T) {
	for _, tc := range []struct{ name, response string }{
		{"no Upgrade", "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n"},
		{"another protocol", "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"},
		{"no Connection: upgrade", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, c, conn, px := exchangeStarted(t, "GET /ws HTTP/1.1\r\nHost: app\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			conn.write(t, tc.response)
			resp, _, _ := c.readResponse(t, "GET")
			if resp.StatusCode != 502 || resp.Header.Get("Sluice-Error") != "protocol" {
				t.Fatalf("status %d %v, want 502 protocol", resp.StatusCode, resp.Header)
			}
			// The upstream's connection is closed: it cannot carry a tunnel.
			conn.waitClosed(t)
			if px.Stats().Upgrades != 0 {
				t.Errorf("an upgrade was counted: %+v", px.Stats())
			}
			// The client's next request is an HTTP request the proxy forwards.
			done := make(chan struct{})
			served := up.answerNext(freshResponse, done)
			resp, body := c.exchange(t, "GET", "GET /next HTTP/1.1\r\nHost: app\r\n\r\n")
			close(done)
			if resp.StatusCode != 200 || body != "fresh" || !strings.HasPrefix(recv(t, served, "the next request"), "GET /next ") {
				t.Fatalf("next request: %d %q", resp.StatusCode, body)
			}
		})
	}
}

// TestH2CUpgradeIsNotForwarded: a client's Upgrade: h2c never reaches the
// upstream over HTTP/1.1 (an upstream that took it would speak HTTP/2 past the
// gate); the request goes as a plain one, and a 101 to it is refused.
func TestH2CUpgradeIsNotForwarded(t *testing.T) {
	up, base, _ := rawProxy(t, Params{}, ServerParams{})
	c := dialRaw(t, base)
	c.send(t, "GET /h2 HTTP/1.1\r\nHost: app\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n")
	conn := up.accept(t)
	req := conn.readRequest(t)
	lower := strings.ToLower(req)
	if strings.Contains(lower, "upgrade") || strings.Contains(lower, "h2c") || strings.Contains(lower, "http2-settings") {
		t.Fatalf("the upstream saw the h2c upgrade:\n%s", req)
	}
	conn.write(t, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
	resp, _, _ := c.readResponse(t, "GET")
	if resp.StatusCode != 502 {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	conn.waitClosed(t)
}

// expectCut waits for the client's connection to end and checks that the
// response it got (if any) ended short of its framing: a client must never take a
// response the proxy could not read whole as complete.
func expectCut(t *testing.T, c rawClient) {
	t.Helper()
	got := c.waitClosed(t)
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if err != nil {
		return // not even a head: cut before it
	}
	if body, err := io.ReadAll(resp.Body); err == nil {
		t.Fatalf("the client took a cut response as whole: %d %q", resp.StatusCode, body)
	}
}

// TestMalformedChunkedResponses: chunked framing that net/http's Transport
// refuses (a bare LF ending a chunk line, since CVE-2025-22871), or that spends
// more on chunk extensions than net/http allows, cuts the response, and the
// upstream connection is not reused.
func TestMalformedChunkedResponses(t *testing.T) {
	ext := ";" + strings.Repeat("x", 4000)
	for _, tc := range []struct{ name, body string }{
		{"bare LF after the size", "2\nok\r\n0\r\n\r\n"},
		{"bare LF after the data", "2\r\nok\n0\r\n\r\n"},
		{"bare LF after the last chunk", "2\r\nok\r\n0\n\r\n"},
		{"extensions beyond the bound", strings.Repeat("1"+ext+"\r\nx\r\n", 5) + "0\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c, conn, _ := exchangeStarted(t, "GET / HTTP/1.1\r\nHost: app\r\n\r\n")
			conn.write(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+tc.body)
			expectCut(t, c)
			conn.waitClosed(t)
		})
	}
	t.Run("extensions within the bound", func(t *testing.T) {
		_, c, conn, _ := exchangeStarted(t, "GET / HTTP/1.1\r\nHost: app\r\n\r\n")
		conn.write(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+strings.Repeat("1"+ext+"\r\nx\r\n", 3)+"0\r\n\r\n")
		resp, body, _ := c.readResponse(t, "GET")
		if resp.StatusCode != 200 || body != "xxx" {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	})
}

// TestInterimResponsesBounded: up to maxInterim interim responses pass before the
// final one; one more is a protocol error (502), and the connection closes.
func TestInterimResponsesBounded(t *testing.T) {
	for _, n := range []int{maxInterim, maxInterim + 1, 20000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			_, c, conn, _ := exchangeStarted(t, "GET / HTTP/1.1\r\nHost: app\r\n\r\n")
			// Written in one piece: the proxy may close before reading it all.
			_, _ = io.WriteString(conn.c, strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", n)+freshResponse)
			resp, body, _ := c.readResponse(t, "GET")
			if n <= maxInterim {
				if resp.StatusCode != 200 || body != "fresh" {
					t.Fatalf("%d %q", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != 502 || resp.Header.Get("Sluice-Error") != "protocol" {
				t.Fatalf("%d %v, want 502 protocol", resp.StatusCode, resp.Header)
			}
			conn.waitClosed(t)
		})
	}
}

// TestNoContentTypeSniffed: a response without Content-Type reaches the client
// without one; the proxy's server must not guess one from the body.
func TestNoContentTypeSniffed(t *testing.T) {
	_, c, conn, _ := exchangeStarted(t, "GET / HTTP/1.1\r\nHost: app\r\n\r\n")
	conn.write(t, "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n<html></html>")
	resp, body, raw := c.readResponse(t, "GET")
	if resp.StatusCode != 200 || body != "<html></html>" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if _, ok := resp.Header["Content-Type"]; ok {
		t.Errorf("a Content-Type was added:\n%s", raw)
	}
}

// TestSlowRequestLineClosesSilently: a client that never finishes its request
// line within ReadHeaderTimeout is closed without an answer, as net/http's server
// closes an idle one: there is no request to answer, and a 400 would blame a
// request that was never sent.
func TestSlowRequestLineClosesSilently(t *testing.T) {
	for _, partial := range []string{"GET / HT", "GET / HTTP/1.1\r\nHost: app\r\nX-Slow: a"} {
		_, base, _ := rawProxy(t, Params{}, ServerParams{ReadHeaderTimeout: 50 * time.Millisecond})
		c := dialRaw(t, base)
		c.send(t, partial)
		if got := c.waitClosed(t); got != "" {
			t.Errorf("after %q the client got %q, want a silent close", partial, got)
		}
	}
}

// TestRequestFramingRefused: a request with both Content-Length and
// Transfer-Encoding, or Transfer-Encoding in HTTP/1.0, is answered 400 and its
// connection closed, as nginx does (net/http's server would serve it), and
// nothing of it reaches the upstream; requests before it on the connection are
// served. The guard follows bodies, so the same bytes inside a body are data.
func TestRequestFramingRefused(t *testing.T) {
	const get = "GET /ok HTTP/1.1\r\nHost: app\r\n\r\n"
	for _, tc := range []struct {
		name   string
		before int // requests served before the refused one
		send   string
	}{
		{"Content-Length and Transfer-Encoding", 0, "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"Transfer-Encoding and Content-Length, any case", 0, "POST / HTTP/1.1\r\nHost: app\r\ntransfer-encoding: CHUNKED\r\ncontent-length: 5\r\n\r\n0\r\n\r\n"},
		{"HTTP/1.0 with Transfer-Encoding", 0, "POST / HTTP/1.0\r\nHost: app\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"bare LF lines", 0, "POST / HTTP/1.1\nHost: app\nContent-Length: 5\nTransfer-Encoding: chunked\n\n0\r\n\r\n"},
		{"after a GET", 1, get + "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"after a body", 1, "POST /ok HTTP/1.1\r\nHost: app\r\nContent-Length: 4\r\n\r\nbody" +
			"POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"after a chunked body", 1, "POST /ok HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nbody\r\n0\r\nX-T: 1\r\n\r\n" +
			"POST / HTTP/1.0\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, bytewise := range []bool{false, true} {
				up, base, _ := rawProxy(t, Params{}, ServerParams{})
				c := dialRaw(t, base)
				go func() {
					if !bytewise {
						io.WriteString(c.c, tc.send)
						return
					}
					for i := 0; i < len(tc.send); i++ {
						if _, err := c.c.Write([]byte{tc.send[i]}); err != nil {
							return
						}
					}
				}()
				var conn *peer
				for i := 0; i < tc.before; i++ {
					if conn == nil {
						conn = up.accept(t)
					}
					if req := conn.readRequest(t); !strings.Contains(req, " /ok ") {
						t.Fatalf("upstream got %q", req)
					}
					conn.write(t, freshResponse)
					if resp, body, _ := c.readResponse(t, "GET"); body != "fresh" {
						t.Fatalf("request %d before: %d %q", i, resp.StatusCode, body)
					}
				}
				resp, _, _ := c.readResponse(t, "POST")
				if resp.StatusCode != 400 || !resp.Close {
					t.Fatalf("status %d (close %v), want 400 and close", resp.StatusCode, resp.Close)
				}
				c.waitClosed(t)
				if conn != nil && conn.rest() != "" {
					t.Errorf("the upstream got more: %q", conn.rest())
				}
				up.noConn(t)
			}
		})
	}
}

// TestRequestFramingLookalikesPass: what looks like a refused head inside a
// body, or a head split into single bytes, passes as it is.
func TestRequestFramingLookalikesPass(t *testing.T) {
	fake := "GET /x HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
	for _, tc := range []struct{ name, send, body string }{
		{"in a body", "POST /ok HTTP/1.1\r\nHost: app\r\nContent-Length: " + strconv.Itoa(len(fake)) + "\r\n\r\n" + fake, fake},
		{"in chunks", "POST /ok HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n" +
			strconv.FormatInt(int64(len(fake)), 16) + "\r\n" + fake + "\r\n0\r\n\r\n", fake},
		{"a head byte by byte", "GET /ok HTTP/1.1\r\nHost: app\r\nX-A: 1\r\n\r\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, base, _ := rawProxy(t, Params{}, ServerParams{})
			c := dialRaw(t, base)
			for i := 0; i < len(tc.send); i++ {
				c.send(t, tc.send[i:i+1])
			}
			conn := up.accept(t)
			req := conn.readRequest(t)
			if !strings.Contains(req, " /ok ") || !strings.Contains(req, tc.body) {
				t.Fatalf("upstream got %q", req)
			}
			conn.write(t, freshResponse)
			if resp, body, _ := c.readResponse(t, "POST"); body != "fresh" {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
			// And the connection carries the next request as usual.
			c.send(t, "GET /ok HTTP/1.1\r\nHost: app\r\n\r\n")
			conn.readRequest(t)
			conn.write(t, freshResponse)
			if _, body, _ := c.readResponse(t, "GET"); body != "fresh" {
				t.Fatalf("next: %q", body)
			}
		})
	}
}
