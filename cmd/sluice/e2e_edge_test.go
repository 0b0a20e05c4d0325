package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// closingUpstream is an upstream on loopback that closes its connection after
// every response (Connection: close), so that the daemon dials a new
// connection, a new file descriptor, for every request: none is pooled.
func closingUpstream(t *testing.T) (url string, served *atomic.Int64) {
	t.Helper()
	served = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Connection", "close")
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, served
}

// setOpenFilesLimit sets the soft RLIMIT_NOFILE of process pid and returns the
// limits it had.
func setOpenFilesLimit(t *testing.T, pid int, soft uint64) unix.Rlimit {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		t.Fatalf("reading RLIMIT_NOFILE of %d: %v", pid, err)
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: soft, Max: old.Max}, nil); err != nil {
		t.Fatalf("setting RLIMIT_NOFILE of %d: %v", pid, err)
	}
	return old
}

// TestE2EFileDescriptorLimitKeepsTheCircuitClosed reproduces issue 13's
// finding 5 on the real binary: a client connection is served, then the
// daemon's soft RLIMIT_NOFILE is lowered (prlimit(2), from the test) to 3,
// below every descriptor it holds but stdin, stdout and stderr, so that it can
// open no new one: each request on that connection finds no descriptor to dial
// the upstream with (which closes every connection after its response, so
// none is pooled). Every such request is answered 503 with Sluice-Error:
// local, more of them than it takes failures to open the circuit (5 in a row;
// open for an hour, were it opened), and the circuit stays closed: once the
// limit is back, the healthy upstream is served at once, /v1/status says the
// circuit never changed, and the log has the local errors (rate-limited) and
// no change of the circuit.
func TestE2EFileDescriptorLimitKeepsTheCircuitClosed(t *testing.T) {
	upURL, served := closingUpstream(t)
	config := prelude + `
  [upstream.circuit]
  consecutive_failures = 5
  open_duration = "1h"
` + catchAll
	s := startSluice(t, writeConfig(t, "", upURL, config))
	rec := s.log.wait(t, "the admin line", message("admin API, metrics and dashboard"))
	admin := "http://" + str(rec["addr"])

	c := dialDaemon(t, s.addr)
	if r := c.get("/before", false); r.status != 200 || r.body != "ok" {
		t.Fatalf("before the limit: %d %v %q; want the upstream's answer", r.status, r.header, r.body)
	}
	old := setOpenFilesLimit(t, s.cmd.Process.Pid, 3)
	for i := range 11 {
		r := c.get(fmt.Sprintf("/exhausted%d", i), false)
		if r.status != http.StatusServiceUnavailable || r.header.Get("Sluice-Error") != "local" || r.header.Get("Retry-After") != "1" {
			t.Fatalf("at the limit, request %d: %d %v %q; want 503 with Sluice-Error: local", i, r.status, r.header, r.body)
		}
	}

	setOpenFilesLimit(t, s.cmd.Process.Pid, old.Cur)
	before := served.Load()
	if r := c.get("/after", false); r.status != 200 || r.body != "ok" {
		t.Fatalf("once descriptors can be opened again: %d %v %q; want the upstream's answer (the circuit must not have opened)", r.status, r.header, r.body)
	}
	if served.Load() != before+1 {
		t.Errorf("the upstream served %d more, want 1", served.Load()-before)
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
