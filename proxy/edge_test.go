package proxy

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/proxy/breaker"
)

// These tests drive raw bytes through the real proxy and its server, in front
// of the scripted upstream, for issue 13's findings 3 (forwarded fields
// trusted), 4 (path-prefix groups bypassed) and 5 (local errors opening the
// circuit).

// pathGroups is a gate with a limited group under /limited/ and a catch-all.
const pathGroups = `
[[group]]
name = "limited"
match = { path_prefix = "/limited/" }
  [group.concurrency]
  law = "fixed"
  limit = 100
[[group]]
name = "rest"
  [group.concurrency]
  law = "fixed"
  limit = 100
`

// completed is how many requests group name of g completed, whatever their
// outcome.
func completed(t *testing.T, g *gate.Gate, name string) uint64 {
	st := groupStatus(t, g, name)
	return st.Completed[gate.Success] + st.Completed[gate.Dropped] + st.Completed[gate.Ignored]
}

// TestPathBypassesAreCounted: every disguise of /limited/a is counted in the
// limited group, and the upstream receives the path the group matched, not
// the disguise; a path upstreams read in different ways is refused with 400
// and reaches neither the gate nor the upstream.
func TestPathBypassesAreCounted(t *testing.T) {
	for _, tc := range []struct {
		target string
		line   string // the request line the upstream must receive
	}{
		{"/limited/a", "GET /limited/a HTTP/1.1"},
		{"//limited/a", "GET /limited/a HTTP/1.1"},
		{"/./limited/a", "GET /limited/a HTTP/1.1"},
		{"/x/../limited/a", "GET /limited/a HTTP/1.1"},
		{"/%2e/limited/a", "GET /limited/a HTTP/1.1"},
		{"/%2E%2e/x/../limited/a", ""}, // climbs above the root
		{"/%2F/limited/a", ""},
		{"/%2f/limited/a", ""},
		{"/public/..;/limited/a", ""},
		{"/%5C/limited/a", ""},
		{"/%6Cimited/a?q=%2e", "GET /limited/a?q=%2e HTTP/1.1"},
		{"/limited/./a/b/..?x", "GET /limited/a/?x HTTP/1.1"},
		{"http://app//limited/./a?q", "GET /limited/a?q HTTP/1.1"},
		{"/limited/a%20b", "GET /limited/a%20b HTTP/1.1"},
		// Issue 23, item 6: parameters are set aside for matching and
		// forwarded; what no client sends is refused.
		{"/limited;x/a", "GET /limited;x/a HTTP/1.1"},
		{"/limited%3Bjsessionid=1/a", "GET /limited%3Bjsessionid=1/a HTTP/1.1"},
		{"/limited/a#x", ""},
		{"/limited/a%20", ""},
		{"/limited/%0a", ""},
	} {
		t.Run(tc.target, func(t *testing.T) {
			g := testGate(t, pathGroups)
			up, base, _ := rawProxy(t, Params{Gate: g}, ServerParams{})
			c := dialRaw(t, base)
			c.send(t, "GET "+tc.target+" HTTP/1.1\r\nHost: app\r\n\r\n")
			if tc.line == "" {
				resp, body, _ := c.readResponse(t, "GET")
				if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Sluice-Error") != "path" {
					t.Fatalf("%s: %d %v %q, want 400 with Sluice-Error: path", tc.target, resp.StatusCode, resp.Header, body)
				}
				up.noConn(t)
				if n := completed(t, g, "limited") + completed(t, g, "rest"); n != 0 {
					t.Errorf("%d requests counted; a refused path reaches no group", n)
				}
				return
			}
			conn := up.accept(t)
			req := conn.readRequest(t)
			if line, _, _ := strings.Cut(req, "\r\n"); line != tc.line {
				t.Errorf("the upstream received %q, want %q", line, tc.line)
			}
			conn.write(t, freshResponse)
			if resp, body, _ := c.readResponse(t, "GET"); resp.StatusCode != 200 || body != "fresh" {
				t.Fatalf("the client got %d %q", resp.StatusCode, body)
			}
			if l, r := completed(t, g, "limited"), completed(t, g, "rest"); l != 1 || r != 0 {
				t.Errorf("limited counted %d, rest %d; want the request in limited", l, r)
			}
		})
	}
}

// TestKeyHeaderTwiceIsRefused: a request that sends its group's key header
// twice is answered 400 with Sluice-Error: key and reaches neither the gate
// nor the upstream: upstreams read one field or the other (issue 23, item
// 4); the key's value is read without the whitespace around it.
func TestKeyHeaderTwiceIsRefused(t *testing.T) {
	g := testGate(t, `
[[group]]
name = "api"
key = "header:x-api-key"
  [group.rate]
  algorithm = "fixed_window"
  limit = 1
  window = "1h"
`)
	up, base, _ := rawProxy(t, Params{Gate: g}, ServerParams{})
	c := dialRaw(t, base)
	c.send(t, "GET /a HTTP/1.1\r\nHost: app\r\nX-Api-Key: victim\r\nX-Api-Key: mine\r\n\r\n")
	resp, body, _ := c.readResponse(t, "GET")
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Sluice-Error") != "key" {
		t.Fatalf("two X-Api-Key fields: %d %v %q, want 400 with Sluice-Error: key", resp.StatusCode, resp.Header, body)
	}
	up.noConn(t)
	if n := completed(t, g, "api"); n != 0 {
		t.Fatalf("%d requests counted", n)
	}
	c = dialRaw(t, base)
	c.send(t, "GET /a HTTP/1.1\r\nHost: app\r\nX-Api-Key: K\r\n\r\n")
	conn := up.accept(t)
	conn.readRequest(t)
	conn.write(t, freshResponse)
	if resp, _, _ := c.readResponse(t, "GET"); resp.StatusCode != 200 {
		t.Fatalf("the first K: %d", resp.StatusCode)
	}
	c.send(t, "GET /a HTTP/1.1\r\nHost: app\r\nX-Api-Key: \t K \r\n\r\n")
	if resp, _, _ := c.readResponse(t, "GET"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("K with whitespace around it: %d, want 429 (the key K, which has had its request)", resp.StatusCode)
	}
}

// TestForwardedFieldsFromAnUntrustedPeer: a client that is not a trusted proxy
// cannot make the upstream believe another client address, scheme or host: its
// X-Forwarded-* (however spelled), Forwarded and X-Real-IP fields are replaced
// or dropped, whatever the upstream reads.
func TestForwardedFieldsFromAnUntrustedPeer(t *testing.T) {
	up, base, _ := rawProxy(t, Params{TrustedProxies: mustTrust(t, "10.0.0.0/8")}, ServerParams{})
	c := dialRaw(t, base)
	c.send(t, "GET / HTTP/1.1\r\nHost: app\r\n"+
		"X-Forwarded-For: 6.6.6.6\r\nx-forwarded-for: 7.7.7.7, 10.0.0.1\r\n"+
		"X-Forwarded-Proto: https\r\nX-Forwarded-Host: evil.example\r\n"+
		"Forwarded: for=6.6.6.6;proto=https\r\nX-Real-IP: 6.6.6.6\r\n"+
		"X_Forwarded_For: 8.8.8.8\r\nX-Forwarded_Proto: https\r\nx_real_ip: 8.8.8.8\r\n"+
		"Connection: X-Forwarded-For\r\nX-Keep: 1\r\n\r\n")
	conn := up.accept(t)
	req := conn.readRequest(t)
	var fields []string
	for _, l := range strings.Split(strings.TrimSuffix(req, "\r\n\r\n"), "\r\n")[1:] {
		name, _, _ := strings.Cut(l, ":")
		switch n := strings.ToLower(name); {
		case strings.Contains(n, "forward"), strings.Contains(n, "real"):
			fields = append(fields, l)
		}
	}
	want := []string{"X-Forwarded-For: 127.0.0.1", "X-Forwarded-Proto: http"}
	if strings.Join(fields, "|") != strings.Join(want, "|") {
		t.Errorf("the upstream got forwarding fields %q, want %q; whole request:\n%s", fields, want, req)
	}
	if !strings.Contains(req, "\r\nX-Keep: 1\r\n") {
		t.Errorf("an ordinary field was lost:\n%s", req)
	}
	conn.write(t, freshResponse)
	c.readResponse(t, "GET")
}

// TestForwardedFieldsFromATrustedPeer: a trusted proxy's chain is extended
// with its address, and its other forwarding fields are passed on.
func TestForwardedFieldsFromATrustedPeer(t *testing.T) {
	up, base, _ := rawProxy(t, Params{TrustedProxies: mustTrust(t, "127.0.0.1")}, ServerParams{})
	c := dialRaw(t, base)
	c.send(t, "GET / HTTP/1.1\r\nHost: app\r\n"+
		"X-Forwarded-For: 203.0.113.9\r\nX-Forwarded-For: 10.0.0.1\r\n"+
		"X-Forwarded-Proto: https\r\nX-Forwarded-Host: public.example\r\n"+
		"Forwarded: for=203.0.113.9;proto=https\r\nX-Real-IP: 203.0.113.9\r\nX_Forwarded_For: 8.8.8.8\r\n\r\n")
	conn := up.accept(t)
	req := conn.readRequest(t)
	for _, want := range []string{"X-Forwarded-For: 203.0.113.9, 10.0.0.1, 127.0.0.1\r\n", "X-Forwarded-Proto: https\r\n",
		"X-Forwarded-Host: public.example\r\n", "Forwarded: for=203.0.113.9;proto=https\r\n", "X-Real-Ip: 203.0.113.9\r\n"} {
		if strings.Count(req, want) != 1 {
			t.Errorf("the upstream did not get %q once:\n%s", want, req)
		}
	}
	if strings.Contains(req, "8.8.8.8") {
		t.Errorf("an underscore alias passed:\n%s", req)
	}
	conn.write(t, freshResponse)
	c.readResponse(t, "GET")
}

// TestIPKeyCannotBeMinted: behind a trusted proxy, the "ip" key is the address
// the proxy reported; whatever a client prepends to X-Forwarded-For, its
// requests share one quota (here one request per key), and a client that is
// not a trusted proxy is keyed by its own address.
func TestIPKeyCannotBeMinted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted string
		first   string // X-Forwarded-For of the first request
		second  string // of the second: the same client, so rejected
		third   string // another client: admitted ("" when there is none)
	}{
		{"behind a trusted proxy", "127.0.0.1", "1.1.1.1, 203.0.113.9", "2.2.2.2, 203.0.113.9", "203.0.113.10"},
		{"an untrusted peer", "10.0.0.0/8", "203.0.113.9", "203.0.113.10", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := testGate(t, fmt.Sprintf(`
[server]
trusted_proxies = [%q]
[[group]]
name = "quota"
key = "ip"
  [group.rate]
  rate = 0.001
  burst = 1
  [group.concurrency]
  law = "fixed"
  limit = 100
`, tc.trusted))
			up := startUpstream(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), false)
			_, base := startProxy(t, Params{Upstream: up.URL, Gate: g}, ServerParams{})
			c := dialRaw(t, base)
			status := func(xff string) int {
				resp, _ := c.exchange(t, "GET", "GET / HTTP/1.1\r\nHost: app\r\nX-Forwarded-For: "+xff+"\r\n\r\n")
				return resp.StatusCode
			}
			if s := status(tc.first); s != 200 {
				t.Fatalf("first request: %d", s)
			}
			if s := status(tc.second); s != http.StatusTooManyRequests {
				t.Errorf("the same client with another X-Forwarded-For: %d, want 429 (one key)", s)
			}
			if tc.third != "" {
				if s := status(tc.third); s != 200 {
					t.Errorf("another client behind the proxy: %d, want 200 (a key of its own)", s)
				}
			}
		})
	}
}

func mustTrust(t *testing.T, list ...string) *gate.TrustedProxies {
	t.Helper()
	tp, err := gate.ParseTrustedProxies(list)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// TestLocalErrorsDoNotOpenTheCircuit: dials that fail for want of a local
// resource (the fd limit: the dialer's socket hook returns EMFILE, as
// socket(2) does there) are answered 503 with Sluice-Error: local and
// Retry-After, reported to OnLocalError, and leave the breaker closed, however
// many; once the resource is back, the upstream is served at once. A refused
// connection, by contrast, is the upstream's failure and opens the circuit.
func TestLocalErrorsDoNotOpenTheCircuit(t *testing.T) {
	var localErrs atomic.Int64
	changes := make(chan breaker.Change, 10)
	up := newScriptedUpstream(t)
	p := Params{
		Upstream: up.url,
		OnLocalError: func(err error) {
			if !isLocal(err) {
				t.Errorf("OnLocalError(%v): not a local error", err)
			}
			localErrs.Add(1)
		},
		Breaker: breaker.Params{ConsecutiveFailures: 3, OnChange: func(c breaker.Change) { changes <- c }},
	}
	var dialErr atomic.Pointer[syscall.Errno] // what socket(2) fails with; nil: nothing
	px, base := serveProxyWith(t, p, ServerParams{}, func(px *Proxy) {
		px.pool.Dialer.Control = func(string, string, syscall.RawConn) error {
			if e := dialErr.Load(); e != nil {
				return *e
			}
			return nil
		}
	})
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL} {
		dialErr.Store(&errno)
		c := dialRaw(t, base)
		for range 4 { // more than ConsecutiveFailures
			resp, body := c.exchange(t, "GET", "GET / HTTP/1.1\r\nHost: app\r\n\r\n")
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Sluice-Error") != "local" || resp.Header.Get("Retry-After") != "1" {
				t.Fatalf("%v: %d %v %q, want 503 with Sluice-Error: local", errno, resp.StatusCode, resp.Header, body)
			}
		}
	}
	if st := px.Breaker().Status(); st.State != breaker.Closed || len(changes) != 0 {
		t.Fatalf("after 20 local errors the breaker is %+v (%d changes), want closed and unchanged", st, len(changes))
	}
	if n, st := localErrs.Load(), px.Stats(); n != 20 || st.LocalErrors != 20 || st.ConnectErrors != 0 {
		t.Errorf("OnLocalError called %d times, stats %+v; want 20 local errors and no connect errors", n, st)
	}
	up.noConn(t)

	dialErr.Store(nil) // the descriptors are back
	c := dialRaw(t, base)
	done := make(chan struct{})
	served := up.answerNext(freshResponse, done)
	resp, body := c.exchange(t, "GET", "GET / HTTP/1.1\r\nHost: app\r\n\r\n")
	close(done)
	if resp.StatusCode != 200 || body != "fresh" {
		t.Fatalf("once the descriptors are back: %d %q, want the upstream's answer", resp.StatusCode, body)
	}
	recv(t, served, "the request at the upstream")

	// The upstream's own failures still count: refused connections open it.
	refusedErr := syscall.ECONNREFUSED
	dialErr.Store(&refusedErr)
	px.Close() // no idle connection left: each request dials
	c = dialRaw(t, base)
	for range 3 {
		if resp, _ := c.exchange(t, "GET", "GET / HTTP/1.1\r\nHost: app\r\n\r\n"); resp.Header.Get("Sluice-Error") != "connect" {
			t.Fatalf("refused: %d %v, want Sluice-Error: connect", resp.StatusCode, resp.Header)
		}
	}
	st := px.Breaker().Status()
	ch := recv(t, changes, "the breaker's change")
	if st.State != breaker.Open || ch.From != breaker.Closed || ch.To != breaker.Open || st.Reason != "3 failures in a row (last: connect)" ||
		ch.Reason != st.Reason || !ch.At.Equal(st.Since) {
		t.Errorf("after 3 refused connections: %+v, change %+v; want open, for 3 connect failures in a row", st, ch)
	}
	if resp, _ := c.exchange(t, "GET", "GET / HTTP/1.1\r\nHost: app\r\n\r\n"); resp.StatusCode != 503 || resp.Header.Get("Sluice-Reason") != "circuit_open" {
		t.Errorf("with the circuit open: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestMaxConnections: the server on a LimitListener serves Max connections at
// once; the next one is answered 503 with Connection: close, Retry-After and
// Sluice-Error: max_connections, and closed; once one of the first closes, a
// new connection is served again.
func TestMaxConnections(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }), false)
	px, err := New(Params{Upstream: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerParams{Handler: px})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan int, 4)
	go func() {
		_ = srv.Serve(GuardListener(LimitListener(ln, LimitParams{Max: 2, OnRefuse: func(max int) { refused <- max }}), 0))
	}()
	t.Cleanup(func() { srv.Close(); px.Close() })
	base := "http://" + ln.Addr().String()
	get := "GET / HTTP/1.1\r\nHost: app\r\n\r\n"

	first, second := dialRaw(t, base), dialRaw(t, base)
	for _, c := range []rawClient{first, second} {
		if resp, body := c.exchange(t, "GET", get); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("within the limit: %d %q", resp.StatusCode, body)
		}
	}
	third := dialRaw(t, base)
	resp, body, _ := third.readResponse(t, "GET") // answered before it asks
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close || resp.Header.Get("Retry-After") != "1" ||
		resp.Header.Get("Sluice-Error") != "max_connections" || !strings.Contains(body, "server.max_connections") {
		t.Errorf("beyond the limit: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	third.waitClosed(t)
	if max := recv(t, refused, "OnRefuse"); max != 2 {
		t.Errorf("OnRefuse(%d), want 2", max)
	}

	// The server closes first's connection (Connection: close), which frees
	// its place before the close reaches the client.
	if resp, _ := first.exchange(t, "GET", "GET / HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n"); resp.StatusCode != 200 {
		t.Fatalf("closing request: %d", resp.StatusCode)
	}
	first.waitClosed(t)
	fourth := dialRaw(t, base)
	if resp, body := fourth.exchange(t, "GET", get); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("after a place was freed: %d %q", resp.StatusCode, body)
	}
	if resp, body := second.exchange(t, "GET", get); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("a connection within the limit, again: %d %q", resp.StatusCode, body)
	}
}
