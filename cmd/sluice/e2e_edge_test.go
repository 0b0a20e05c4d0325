package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawConn is a client connection to the daemon that sends request bytes and
// reads responses one at a time.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialDaemon(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// get sends a GET for path (with Connection: close when closing) and returns
// the response, its body read.
func (r *rawConn) get(path string, closing bool) result {
	r.t.Helper()
	req := "GET " + path + " HTTP/1.1\r\nHost: app\r\n"
	if closing {
		req += "Connection: close\r\n"
	}
	if _, err := io.WriteString(r.c, req+"\r\n"); err != nil {
		r.t.Fatalf("sending %s: %v", path, err)
	}
	return r.read()
}

// read reads the next response.
func (r *rawConn) read() result {
	r.t.Helper()
	resp, err := http.ReadResponse(r.br, nil)
	if err != nil {
		r.t.Fatalf("reading a response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// closedByServer reports whether the daemon closed the connection: the next
// read ends.
func (r *rawConn) closedByServer() bool {
	_, err := r.br.ReadByte()
	return err == io.EOF
}

// send writes a GET for path and returns at once; the response comes on the
// channel (a zero result with err set if it could not be read).
func (r *rawConn) send(path string) <-chan result {
	r.t.Helper()
	if _, err := io.WriteString(r.c, "GET "+path+" HTTP/1.1\r\nHost: app\r\n\r\n"); err != nil {
		r.t.Fatalf("sending %s: %v", path, err)
	}
	ch := make(chan result, 1)
	go func() {
		resp, err := http.ReadResponse(r.br, nil)
		if err != nil {
			ch <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		ch <- result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
	}()
	return ch
}

// heldUpstream is an upstream on loopback that holds each request until the
// test lets it go (one at a time by release, or all at once, now and after, by
// closing open), then answers "ok" and closes its connection (Connection:
// close). A held request keeps its upstream connection, one of the daemon's
// file descriptors, busy; and the daemon dials a new connection for every
// request, none being left to reuse.
type heldUpstream struct {
	url     string
	entered chan struct{} // a request arrived
	release chan struct{}
	open    chan struct{}
	served  atomic.Int64
}

func startHeldUpstream(t *testing.T) *heldUpstream {
	t.Helper()
	u := &heldUpstream{entered: make(chan struct{}, 1000), release: make(chan struct{}), open: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.entered <- struct{}{}
		select {
		case <-u.release:
		case <-u.open:
		case <-r.Context().Done():
			return
		}
		u.served.Add(1)
		w.Header().Set("Connection", "close")
		io.WriteString(w, "ok")
	}))
	t.Cleanup(func() {
		select {
		case <-u.open:
		default:
			close(u.open)
		}
		srv.Close()
	})
	u.url = srv.URL
	return u
}

// logged returns a channel that gets the first record from index from on that
// matches; it gives up silently when the test ends.
func (l *logs) logged(t *testing.T, from int, match func(map[string]any) bool) <-chan map[string]any {
	ch := make(chan map[string]any, 1)
	go func() {
		for {
			rec, next, more, closed := l.find(from, match)
			if rec != nil {
				ch <- rec
				return
			}
			if closed {
				return
			}
			from = next
			select {
			case <-more:
			case <-t.Context().Done():
				return
			}
		}
	}()
	return ch
}

// TestE2EFileDescriptorLimitKeepsTheCircuitClosed reproduces issue 13's
// finding 5 on the real binary, started with RLIMIT_NOFILE lowered to 64 (by
// prlimit, soft and hard: the Go runtime cannot raise it). Client connections
// are opened one by one, each sending a request that the upstream holds, so
// that every descriptor the daemon uses stays in use and none is given back
// behind the test's back; until a request finds no descriptor left to dial the
// upstream with. From then on every request is answered 503 with Sluice-Error:
// local, more of them than it takes failures to open the circuit (5 in a row;
// open for an hour, were it opened), and the circuit stays closed: once the
// held requests are answered and their descriptors free, the healthy upstream
// is served at once, /v1/status says the circuit never changed, and the log has
// the local errors (rate-limited) and no change of the circuit.
func TestE2EFileDescriptorLimitKeepsTheCircuitClosed(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	up := startHeldUpstream(t)
	config := prelude + `
  [upstream.circuit]
  consecutive_failures = 5
  open_duration = "1h"
` + catchAll
	const limit = 64
	s := startSluiceVia(t, []string{"prlimit", fmt.Sprintf("--nofile=%d:%d", limit, limit), "--"}, writeConfig(t, "", up.url, config))
	rec := s.log.wait(t, "the admin line", message("admin API, metrics and dashboard"))
	admin := "http://" + str(rec["addr"])
	acceptFailed := func(r map[string]any) bool {
		m := str(r["@message"])
		return strings.Contains(m, "Accept error") && strings.Contains(m, "too many open files")
	}
	isLocal := func(r result) bool {
		return r.err == nil && r.status == http.StatusServiceUnavailable && r.header.Get("Sluice-Error") == "local" && r.header.Get("Retry-After") == "1"
	}

	// Drive the daemon to its limit: each connection takes a descriptor, and
	// its held request one more for the upstream connection. Either a
	// connection is accepted with the last descriptor, and its request gets
	// 503 local; or the last one went to an upstream connection, and the next
	// client waits in the listen backlog (the daemon logs the failed accept):
	// then one held request is let go, its upstream connection closes, and
	// the descriptor it frees goes to the waiting client, whose request finds
	// none left.
	var held []<-chan result // the responses of the held requests
	var exhausted *rawConn
	timeout := time.NewTimer(waitLimit)
	defer timeout.Stop()
	for i := 0; exhausted == nil; i++ {
		if i == limit {
			t.Fatalf("%d connections open and the daemon still dials the upstream: is RLIMIT_NOFILE lowered?", i)
		}
		_, logEnd, _, _ := s.log.find(0, func(map[string]any) bool { return false })
		c := dialDaemon(t, s.addr)
		resp := c.send(fmt.Sprintf("/c%d", i))
		select {
		case <-up.entered:
			held = append(held, resp)
		case r := <-resp:
			if !isLocal(r) {
				t.Fatalf("request %d: %d %v %q %v; want it held by the upstream, or 503 local at the limit", i, r.status, r.header, r.body, r.err)
			}
			exhausted = c
		case <-s.log.logged(t, logEnd, acceptFailed):
			up.release <- struct{}{}
			if r := recv(t, held[0], "the response to the request let go"); r.err != nil || r.status != 200 {
				t.Fatalf("the request let go: %d %v %q %v; want 200", r.status, r.header, r.body, r.err)
			}
			held = held[1:]
			if r := recv(t, resp, "the response to the request that waited to be accepted"); !isLocal(r) {
				t.Fatalf("the request accepted with the last descriptor: %d %v %q %v; want 503 local", r.status, r.header, r.body, r.err)
			}
			exhausted = c
		case <-timeout.C:
			t.Fatalf("request %d: neither held, nor answered, nor a failed accept logged within %v", i, waitLimit)
		}
	}
	for i := range 10 {
		r := exhausted.get(fmt.Sprintf("/exhausted%d", i), false)
		if !isLocal(r) {
			t.Fatalf("at the limit, request %d: %d %v %q; want 503 with Sluice-Error: local", i, r.status, r.header, r.body)
		}
	}

	// Free the descriptors: the held requests are answered, and their
	// upstream connections close.
	close(up.open)
	for _, resp := range held {
		if r := recv(t, resp, "the response to a held request"); r.err != nil || r.status != 200 {
			t.Fatalf("a held request: %d %v %q %v; want 200", r.status, r.header, r.body, r.err)
		}
	}
	before := up.served.Load()
	if r := exhausted.get("/after", false); r.status != 200 || r.body != "ok" {
		t.Fatalf("once descriptors are free: %d %v %q; want the upstream's answer (the circuit must not have opened)", r.status, r.header, r.body)
	}
	if up.served.Load() != before+1 {
		t.Errorf("the upstream served %d more, want 1", up.served.Load()-before)
	}

	st := do(client(t), "GET", admin+"/v1/status")
	var v struct {
		Circuit struct {
			State, Reason string
		} `json:"circuit"`
	}
	if st.status != 200 || json.Unmarshal([]byte(st.body), &v) != nil || v.Circuit.State != "closed" || v.Circuit.Reason != "" {
		t.Errorf("/v1/status: %d %s; want the circuit closed, never changed", st.status, st.body)
	}
	s.log.wait(t, "the local error logged", func(r map[string]any) bool {
		return strings.HasPrefix(str(r["@message"]), "upstream exchange failed for want of a local resource") &&
			strings.Contains(str(r["error"]), "too many open files")
	})
	if rec, _, _, _ := s.log.find(0, func(r map[string]any) bool { return strings.HasPrefix(str(r["@message"]), "circuit breaker ") }); rec != nil {
		t.Errorf("the circuit changed: %v", rec)
	}
	if n := countRecords(s.log, func(r map[string]any) bool {
		return strings.HasPrefix(str(r["@message"]), "upstream exchange failed for want of a local resource")
	}); n == 0 || n > 11 {
		t.Errorf("%d local-error lines for 11 local errors", n)
	}
}

// TestE2EMaxConnections: with server.max_connections = 2 the real daemon
// serves two connections at once; a third is answered 503 (Connection: close,
// Retry-After, Sluice-Error: max_connections) and closed, and the refusal is
// logged; once one of the two closes, a new connection is served.
func TestE2EMaxConnections(t *testing.T) {
	up := startUpstream(t)
	config := strings.Replace(prelude, "[server]", "[server]\nmax_connections = 2", 1) + catchAll
	s := startSluice(t, writeConfig(t, "", up.url, config))
	first, second := dialDaemon(t, s.addr), dialDaemon(t, s.addr)
	for _, c := range []*rawConn{first, second} {
		if r := c.get("/in", false); r.status != 200 {
			t.Fatalf("within the limit: %d %q", r.status, r.body)
		}
	}
	third := dialDaemon(t, s.addr)
	raw, err := io.ReadAll(third.br) // answered before it asks, then closed
	if err != nil {
		t.Fatalf("beyond the limit: %v after %q", err, raw)
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(raw))), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(raw), "\r\nConnection: close\r\n") ||
		resp.Header.Get("Retry-After") != "1" || resp.Header.Get("Sluice-Error") != "max_connections" {
		t.Errorf("beyond the limit: %v %q", err, raw)
	}
	s.log.wait(t, "the refusal logged", message("connection refused: server.max_connections reached", "max_connections", "2"))

	first.get("/bye", true)
	if !first.closedByServer() {
		t.Fatal("a Connection: close request left the connection open")
	}
	if r := dialDaemon(t, s.addr).get("/again", false); r.status != 200 || r.body != "ok /again" {
		t.Errorf("after a place was freed: %d %q", r.status, r.body)
	}
}

// countRecords counts the log records so far that match.
func countRecords(l *logs, match func(map[string]any) bool) int {
	n := 0
	for from := 0; ; n++ {
		rec, next, _, _ := l.find(from, match)
		if rec == nil {
			return n
		}
		from = next
	}
}
