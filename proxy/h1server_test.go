package proxy

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/rawreq"
)

// startOwn serves a Proxy for p behind the own server (H1Server) on ln (a new
// loopback listener when nil), whatever SLUICE_TEST_SERVER says.
func startOwn(t *testing.T, p Params, sp ServerParams, ln net.Listener) (*Proxy, *H1Server, string) {
	t.Helper()
	px, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	if sp.ErrorLog == nil {
		sp.ErrorLog = log.New(io.Discard, "", 0)
	}
	srv, err := NewH1Server(px, sp)
	if err != nil {
		t.Fatal(err)
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; err != http.ErrServerClosed {
			t.Errorf("Serve: %v, want ErrServerClosed", err)
		}
		_ = px.Close()
	})
	return px, srv, "http://" + ln.Addr().String()
}

// smuggled is a request that a hop preferring Content-Length would read as
// one request and a hop preferring Transfer-Encoding as two: the second,
// GET /smuggled, must never reach the upstream.
const smuggled = "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 35\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

// TestH1ServerFourDisagreements sends, ahead of a Content-Length +
// Transfer-Encoding request, each of the four requests issue 22 found read
// one way by the guard and another by net/http's server (which let the
// request after it through): the own server reads each with the one parser
// that decides its framing, so the first three are refused and close the
// connection, the fourth (a CRLF after a POST) is served, and the smuggling
// request after it is refused; nothing of it reaches the upstream.
func TestH1ServerFourDisagreements(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  string
		status int // of the first request; 200: served, and the next one refused
	}{
		{"HTTP/1.2", "POST / HTTP/1.2\r\nHost: app\r\nContent-Length: 0\r\n\r\n", 400},
		{"19 digits of length", "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 0000000000000000000\r\n\r\n", 400},
		{"empty obs-fold after the length", "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\n \r\n\r\nhello", 400},
		{"CRLF after a POST", "POST /ok HTTP/1.1\r\nHost: app\r\nContent-Length: 4\r\n\r\nbody\r\n", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newScriptedUpstream(t)
			_, _, base := startOwn(t, Params{Upstream: up.url}, ServerParams{}, nil)
			c := dialRaw(t, base)
			c.send(t, tc.first+smuggled)
			if tc.status == 200 {
				conn := up.accept(t)
				if req := conn.readRequest(t); !strings.HasPrefix(req, "POST /ok ") || !strings.HasSuffix(req, "\r\n\r\nbody") {
					t.Fatalf("upstream got %q", req)
				}
				conn.write(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				if resp, body, _ := c.readResponse(t, "POST"); resp.StatusCode != 200 || body != "ok" {
					t.Fatalf("the POST: %d %q", resp.StatusCode, body)
				}
				resp, _, _ := c.readResponse(t, "POST")
				if resp.StatusCode != 400 || !resp.Close {
					t.Fatalf("the smuggling request: %d (close %v), want 400 and close", resp.StatusCode, resp.Close)
				}
				c.waitClosed(t)
				if rest := conn.rest(); rest != "" {
					t.Fatalf("the upstream got more: %q", rest)
				}
				up.noConn(t)
				return
			}
			resp, _, _ := c.readResponse(t, "POST")
			if resp.StatusCode != tc.status || !resp.Close {
				t.Fatalf("status %d (close %v), want %d and close", resp.StatusCode, resp.Close, tc.status)
			}
			c.waitClosed(t)
			up.noConn(t)
		})
	}
}

// TestH1ServerFixtures sends each request of testdata/requests after a valid
// one on one connection to the own server: the valid one is served, the
// fixture gets its status and the connection closes, and the upstream never
// sees the fixture. cmd/sluice's e2e sends the same files to the daemon.
func TestH1ServerFixtures(t *testing.T) {
	cases, err := rawreq.Load("../testdata/requests")
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok "+r.URL.Path)
	}), false)
	_, _, base := startOwn(t, Params{Upstream: up.URL}, ServerParams{}, nil)
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			ex, err := rawreq.SendOn(conn, c)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ex.Problems(c) {
				t.Error(p)
			}
			if n := served.Load(); n != int64(i+1) {
				t.Errorf("the upstream has seen %d requests after %d valid ones (the refused ones must not reach it)", n, i+1)
			}
		})
	}
}

// TestH1ServerPipelining sends three requests in one write: they are answered
// in order, each with its own response, on the one connection.
func TestH1ServerPipelining(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, b)
	}), false)
	_, _, base := startOwn(t, Params{Upstream: up.URL}, ServerParams{}, nil)
	c := dialRaw(t, base)
	c.send(t, "GET /1 HTTP/1.1\r\nHost: app\r\n\r\n"+
		"POST /2 HTTP/1.1\r\nHost: app\r\nContent-Length: 3\r\n\r\nabc"+
		"POST /3 HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n"+
		"HEAD /4 HTTP/1.1\r\nHost: app\r\n\r\n")
	for _, want := range []string{"GET /1 ", "POST /2 abc", "POST /3 de", ""} {
		method := "GET"
		if want == "" {
			method = "HEAD"
		}
		resp, body, _ := c.readResponse(t, method)
		if resp.StatusCode != 200 || body != want || resp.Close {
			t.Fatalf("%d %q (close %v), want 200 %q", resp.StatusCode, body, resp.Close, want)
		}
	}
}

// TestH1ServerExpectContinue: a request with Expect: 100-continue is told to
// go on when the proxy first reads its body, and then served; one the gate
// refuses gets its refusal at once, no 100, and the connection closes (the
// body may or may not come).
func TestH1ServerExpectContinue(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got %s", b)
	}), false)
	g := testGate(t, rejectGroups)
	_, _, base := startOwn(t, Params{Upstream: up.URL, Gate: g}, ServerParams{}, nil)

	c := dialRaw(t, base)
	c.send(t, "PUT /u HTTP/1.1\r\nHost: app\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	resp, _, _ := c.readResponse(t, "PUT")
	if resp.StatusCode != http.StatusContinue {
		t.Fatalf("first answer %d, want 100", resp.StatusCode)
	}
	c.send(t, "hello")
	if resp, body, _ := c.readResponse(t, "PUT"); resp.StatusCode != 200 || body != "got hello" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}

	// The tenant's quota is one request per 100 s: the second is refused.
	for i, want := range []int{200, 429} {
		c := dialRaw(t, base)
		c.send(t, "POST /rate HTTP/1.1\r\nHost: app\r\nX-Tenant: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		resp, _, _ := c.readResponse(t, "POST")
		if i == 0 {
			if resp.StatusCode != http.StatusContinue {
				t.Fatalf("admitted: first answer %d, want 100", resp.StatusCode)
			}
			c.send(t, "12345")
			resp, _, _ = c.readResponse(t, "POST")
		}
		if resp.StatusCode != want {
			t.Fatalf("request %d: %d, want %d", i, resp.StatusCode, want)
		}
		if i == 1 {
			if !resp.Close {
				t.Error("a refused request whose body never came kept its connection")
			}
			c.waitClosed(t)
		}
	}
}

// TestH1ServerRefusals: the gate's refusals come from prebuilt bytes with the
// gate's fields (Retry-After, Sluice-Reason, the RateLimit fields, a Date);
// a refused request without a body, or with a small one already sent, keeps
// its connection; one with a body not yet sent has it closed.
func TestH1ServerRefusals(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), false)
	g := testGate(t, rejectGroups)
	_, _, base := startOwn(t, Params{Upstream: up.URL, Gate: g}, ServerParams{}, nil)
	c := dialRaw(t, base)
	get := "GET /rate HTTP/1.1\r\nHost: app\r\nX-Tenant: a\r\n\r\n"
	if resp, body := c.exchange(t, "GET", get); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("first: %d %q", resp.StatusCode, body)
	}
	resp, body := c.exchange(t, "GET", get)
	h := resp.Header
	if resp.StatusCode != 429 || resp.Close || body != "too many requests (rate)\n" || h.Get("Sluice-Reason") != "rate" ||
		h.Get("Retry-After") == "" || h.Get("Ratelimit") == "" || h.Get("Ratelimit-Policy") == "" || h.Get("Date") == "" ||
		h.Get("Content-Type") != "text/plain; charset=utf-8" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("refusal: %d (close %v) %v %q", resp.StatusCode, resp.Close, h, body)
	}
	post := "POST /rate HTTP/1.1\r\nHost: app\r\nX-Tenant: a\r\nContent-Length: 4\r\n\r\nbody"
	if resp, _ := c.exchange(t, "POST", post); resp.StatusCode != 429 || resp.Close {
		t.Fatalf("a refused POST with its body sent: %d (close %v), want 429 and the connection kept", resp.StatusCode, resp.Close)
	}
	if resp, _ := c.exchange(t, "GET", get); resp.StatusCode != 429 {
		t.Fatalf("after it: %d", resp.StatusCode)
	}
	c.send(t, "POST /rate HTTP/1.1\r\nHost: app\r\nX-Tenant: a\r\nContent-Length: 100000\r\n\r\npart")
	if resp, _, _ := c.readResponse(t, "POST"); resp.StatusCode != 429 || !resp.Close {
		t.Fatalf("a refused POST whose body is not here: %d (close %v), want 429 and close", resp.StatusCode, resp.Close)
	}
	c.close() // the server lingers for the body; the client gives up
}

// TestH1ServerSlowHead: a head still unfinished at ReadHeaderTimeout closes
// the connection without an answer (net/http's server, and the guard, do the
// same); one larger than MaxHeaderBytes is answered 431.
func TestH1ServerSlowHead(t *testing.T) {
	up := newScriptedUpstream(t)
	_, _, base := startOwn(t, Params{Upstream: up.url}, ServerParams{ReadHeaderTimeout: 50 * time.Millisecond, MaxHeaderBytes: 4096}, nil)
	c := dialRaw(t, base)
	c.send(t, "GET / HTTP/1.1\r\nHost: app\r\n")
	if got := c.waitClosed(t); got != "" {
		t.Errorf("answered %q", got)
	}
	// On a server that gives heads time (a loaded machine may not read 9 KB
	// within 50 ms):
	_, _, base = startOwn(t, Params{Upstream: up.url}, ServerParams{MaxHeaderBytes: 4096}, nil)
	c = dialRaw(t, base)
	c.send(t, "GET / HTTP/1.1\r\nHost: app\r\nX-Big: "+strings.Repeat("x", 9000)+"\r\n\r\n")
	if resp, _, _ := c.readResponse(t, "GET"); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !resp.Close {
		t.Errorf("a large head: %d (close %v), want 431 and close", resp.StatusCode, resp.Close)
	}
	up.noConn(t)
}

// TestH1ServerShutdown: Shutdown closes idle connections at once, lets a
// request in flight finish (its response says Connection: close) and
// returns once every connection closed.
func TestH1ServerShutdown(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}), false)
	_, srv, base := startOwn(t, Params{Upstream: up.URL}, ServerParams{}, nil)
	idle := dialRaw(t, base)
	if resp, _ := idle.exchange(t, "GET", "GET / HTTP/1.1\r\nHost: app\r\n\r\n"); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	busy := dialRaw(t, base)
	busy.send(t, "GET /slow HTTP/1.1\r\nHost: app\r\n\r\n")
	recv(t, entered, "the request at the upstream")
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	idle.waitClosed(t)
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) with a request in flight", err)
	default:
	}
	close(release)
	resp, body, _ := busy.readResponse(t, "GET")
	if resp.StatusCode != 200 || body != "ok" || !resp.Close {
		t.Fatalf("in flight: %d %q (close %v), want 200 and close", resp.StatusCode, body, resp.Close)
	}
	busy.waitClosed(t)
	if err := recv(t, done, "Shutdown"); err != nil {
		t.Fatal(err)
	}
}

// TestH1ServerMaxConnections: the own server under a LimitListener serves
// Max connections at once and answers the next with 503 max_connections;
// once one closes, a new one is served.
func TestH1ServerMaxConnections(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, _, base := startOwn(t, Params{Upstream: up.URL}, ServerParams{}, LimitListener(ln, LimitParams{Max: 2}))
	get := "GET / HTTP/1.1\r\nHost: app\r\n\r\n"
	first, second := dialRaw(t, base), dialRaw(t, base)
	for _, c := range []rawClient{first, second} {
		if resp, body := c.exchange(t, "GET", get); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("within the limit: %d %q", resp.StatusCode, body)
		}
	}
	third := dialRaw(t, base)
	if resp, _, _ := third.readResponse(t, "GET"); resp.StatusCode != 503 || resp.Header.Get("Sluice-Error") != "max_connections" {
		t.Fatalf("beyond the limit: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := first.exchange(t, "GET", "GET / HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n"); resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("closing request: %d", resp.StatusCode)
	}
	first.waitClosed(t)
	if resp, body := dialRaw(t, base).exchange(t, "GET", get); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("after a place was freed: %d %q", resp.StatusCode, body)
	}
}

// TestH1ServerH2C: a connection that begins with HTTP/2's preface is served
// by net/http's server (h2c with prior knowledge), HTTP/1.1 beside it by the
// own server.
func TestH1ServerH2C(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "%d", r.ProtoMajor) }), false)
	_, _, base := startOwn(t, Params{Upstream: up.URL}, ServerParams{}, nil)
	for _, h2 := range []bool{true, false} {
		resp, err := newClient(t, h2).Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := map[bool]int{true: 2, false: 1}[h2]; resp.ProtoMajor != want || string(b) != "1" {
			t.Errorf("h2c %v: served over HTTP/%d, upstream %q", h2, resp.ProtoMajor, b)
		}
	}
}

// watchGroups is rejectGroups with a queue wait of a minute: a request whose
// client leaves must leave the queue long before its wait would end.
var watchGroups = strings.Replace(rejectGroups, `max_wait = "50ms"`, `max_wait = "60s"`, 1)

// TestH1ServerWatchesWaitsOnly: the client-gone watch (a timer, then a read)
// is armed only for a request that waits for something: a refusal arms none,
// while a request waiting in the gate's queue is watched, and leaves the queue
// when its client goes away.
func TestH1ServerWatchesWaitsOnly(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}), false)
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock) // before the upstream's Close, which waits for its handlers
	if !strings.Contains(watchGroups, `max_wait = "60s"`) {
		t.Fatal("rejectGroups has no 50 ms queue wait to lengthen any more")
	}
	g := testGate(t, watchGroups)
	_, srv, base := startOwn(t, Params{Upstream: up.URL, Gate: g}, ServerParams{}, nil)
	get := "GET /rate HTTP/1.1\r\nHost: app\r\nX-Tenant: a\r\n\r\n"
	if resp, _ := dialRaw(t, base).exchange(t, "GET", get); resp.StatusCode != 200 {
		t.Fatalf("tenant a's first request: %d", resp.StatusCode)
	}
	refused := dialRaw(t, base)
	for range 3 {
		if resp, _ := refused.exchange(t, "GET", get); resp.StatusCode != 429 {
			t.Fatalf("tenant a's next request: %d, want 429", resp.StatusCode)
		}
	}
	hc := ownConn(t, srv, refused.c.LocalAddr().String())
	hc.wmu.Lock()
	armed := hc.wtimer != nil
	hc.wmu.Unlock()
	if armed {
		t.Error("a connection that carried refusals only armed the client-gone watch")
	}

	held := dialRaw(t, base)
	held.send(t, "GET /hold HTTP/1.1\r\nHost: app\r\n\r\n")
	recv(t, entered, "the request at the upstream")
	queued := dialRaw(t, base)
	queued.send(t, "GET /queued HTTP/1.1\r\nHost: app\r\n\r\n")
	queuedNow := func() int { st, _ := g.Group("one"); return st.Queued }
	waitFor(t, "the second request in the queue", func() bool { return queuedNow() == 1 })
	queued.close()
	waitFor(t, "the request whose client left to leave the queue", func() bool { return queuedNow() == 0 })
	unblock()
	if resp, body, _ := held.readResponse(t, "GET"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("the held request: %d %q", resp.StatusCode, body)
	}
}

// ownConn returns the own server's connection whose client is at remote.
func ownConn(t *testing.T, srv *H1Server, remote string) *h1Conn {
	t.Helper()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for c := range srv.conns {
		if c.remote == remote {
			return c
		}
	}
	t.Fatalf("no connection from %s", remote)
	return nil
}
