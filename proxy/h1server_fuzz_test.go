package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/proxy/h1/h1test"
)

// FuzzH1Server holds the own server to net/http's server on a whole request
// stream: every request it hands to its handler is the one net/http's server
// would serve at that place of the same stream (http.ReadRequest, the checks
// its server makes, up to 4 CR or LF skipped after a POST), with the same
// method, target, version, Host, fields, body and Close; and it hands on
// none after a request net/http would not serve, or whose body net/http
// could not read. Where the two read a stream differently, the own server
// refuses or cuts it: it never serves what net/http would read otherwise.
func FuzzH1Server(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /b?c=d HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nX-A: 2\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;x\r\nhello\r\n0\r\nT: 1\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\nxGET /s HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.2\r\nHost: a\r\nContent-Length: 1\r\n\r\nXGET /s HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n",
		"GET http://h/p?q HTTP/1.1\r\nHost: h\r\nPragma: no-cache\r\n\r\n",
		"PUT /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhiGET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /after HTTP/1.1\r\nHost: a\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkH1Server)
}

// servedRequest is what a server's handler saw of a request, copied out.
type servedRequest struct {
	method, target, host string
	minor                int
	te                   string // r.TransferEncoding (net/http keeps the field out of the header)
	header               http.Header
	body                 string
	bodyErr              bool
	close                bool
}

func (s servedRequest) String() string {
	return fmt.Sprintf("%s %s HTTP/1.%d host %q fields %v te %q body %q (error %v) close %v", s.method, s.target, s.minor, s.host, s.header, s.te, s.body, s.bodyErr, s.close)
}

// checkH1Server is FuzzH1Server's check of data.
func checkH1Server(t *testing.T, data []byte) {
	own := serveOwnStream(t, data)
	ref := readNetHTTPStream(data)
	for i, o := range own {
		if i >= len(ref) {
			t.Fatalf("the own server served request %d, %v, where net/http serves %d requests of %q", i, o, len(ref), data)
		}
		r := ref[i]
		if o.bodyErr {
			if i != len(own)-1 {
				t.Fatalf("the own server served requests after a body it could not read (request %d of %q)", i, data)
			}
			o.body, r.body, r.bodyErr = "", "", true // cut where the body broke: what came before is the client's
		}
		if !equalServed(o, r) {
			t.Fatalf("request %d of %q:\n own     %v\n net/http %v", i, data, o, r)
		}
	}
}

func equalServed(a, b servedRequest) bool {
	if a.method != b.method || a.target != b.target || a.host != b.host || a.minor != b.minor || a.te != b.te ||
		a.body != b.body || a.bodyErr != b.bodyErr || a.close != b.close || len(a.header) != len(b.header) {
		return false
	}
	for k, v := range a.header {
		if !slices.Equal(v, b.header[k]) {
			return false
		}
	}
	return true
}

// copyServed copies what the handler sees of r out of the server's buffers.
func copyServed(r *http.Request) servedRequest {
	s := servedRequest{
		method: strings.Clone(r.Method), target: strings.Clone(r.RequestURI), host: strings.Clone(r.Host),
		minor: r.ProtoMinor, header: make(http.Header, len(r.Header)),
	}
	s.te = strings.Join(r.TransferEncoding, ",")
	for k, vv := range r.Header {
		if k == "Transfer-Encoding" {
			continue
		}
		for _, v := range vv {
			s.header[strings.Clone(k)] = append(s.header[strings.Clone(k)], strings.Clone(v))
		}
	}
	body, err := io.ReadAll(r.Body)
	s.body, s.bodyErr = string(body), err != nil
	s.close = r.Close
	return s
}

// serveOwnStream sends data to the own server over a socket pair, half-closes,
// and returns the requests its handler was given.
func serveOwnStream(t *testing.T, data []byte) []servedRequest {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "pair")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	client, server := conns[0], conns[1]
	defer client.Close()
	px, err := New(Params{Upstream: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewH1Server(px, ServerParams{ErrorLog: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var got []servedRequest
	srv.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, copyServed(r))
		io.WriteString(w, "ok")
	})
	c := srv.newConn(server)
	served := make(chan struct{})
	go func() {
		defer close(served)
		c.serve()
	}()
	go io.Copy(io.Discard, client) // the answers
	if _, err := client.Write(data); err == nil {
		_ = client.(*net.UnixConn).CloseWrite()
	}
	<-served
	return got
}

// readNetHTTPStream reads data as net/http's server reads a connection and
// returns the requests it would serve: it stops at one it refuses, after
// one whose body it cannot read, and after one that closes.
func readNetHTTPStream(data []byte) []servedRequest {
	var out []servedRequest
	cr := &countingReader{r: bytes.NewReader(data)}
	br := bufio.NewReader(cr)
	at := func() int { return cr.n - br.Buffered() }
	lastPost := false
	for {
		if lastPost {
			peek, _ := br.Peek(4)
			_, _ = br.Discard(numLeadingCROrLF(peek))
		}
		pos := at()
		req, err := http.ReadRequest(br)
		if err != nil || h1test.NetHTTPReads(data[pos:at()]) == nil {
			return out
		}
		s := copyServed(req)
		s.target = targetOf(req)
		out = append(out, s)
		if s.bodyErr || s.close {
			return out
		}
		lastPost = req.Method == "POST"
	}
}

// targetOf is what the own server gives as RequestURI: the target itself, but
// for absolute-form, where it gives the path and query.
func targetOf(req *http.Request) string {
	if req.URL.Scheme == "" {
		return req.RequestURI
	}
	return req.URL.RequestURI()
}
