package proxy

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// waitLimit bounds every wait for an event in these tests: far beyond what any
// event takes, it only turns a hang into a failure.
const waitLimit = 10 * time.Second

// finished is one Finish call seen by a fakeAdmitter.
type finished struct {
	data    uint64
	outcome Outcome
	latency time.Duration
}

// fakeAdmitter admits (or, with reject set, rejects) every request and reports
// each Finish on a channel; it fails the test if a ticket finishes twice.
type fakeAdmitter struct {
	t      *testing.T
	mu     sync.Mutex
	next   uint64
	seen   map[uint64]bool
	reject *Rejection
	admits int
	done   chan finished
}

func newFakeAdmitter(t *testing.T) *fakeAdmitter {
	return &fakeAdmitter{t: t, seen: map[uint64]bool{}, done: make(chan finished, 1000)}
}

func (a *fakeAdmitter) Admit(r *http.Request) (Ticket, Rejection, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.admits++
	if a.reject != nil {
		return Ticket{}, *a.reject, false
	}
	a.next++
	return Ticket{Ref: a, Data: a.next}, Rejection{}, true
}

func (a *fakeAdmitter) Finish(t Ticket, o Outcome, latency time.Duration) {
	a.mu.Lock()
	if t.Ref != a || a.seen[t.Data] || t.Data == 0 || t.Data > a.next {
		a.mu.Unlock()
		a.t.Errorf("Finish of ticket %+v: foreign, unknown or finished twice", t)
		return
	}
	a.seen[t.Data] = true
	a.mu.Unlock()
	a.done <- finished{t.Data, o, latency}
}

// outcome waits for the next Finish.
func (a *fakeAdmitter) outcome(t *testing.T) finished {
	t.Helper()
	select {
	case f := <-a.done:
		return f
	case <-time.After(waitLimit):
		t.Fatal("no Finish")
		return finished{}
	}
}

// noMoreFinishes checks that nothing was finished beyond what was taken.
func (a *fakeAdmitter) noMoreFinishes(t *testing.T) {
	t.Helper()
	select {
	case f := <-a.done:
		t.Fatalf("unexpected Finish %+v", f)
	default:
	}
}

// startProxy serves a Proxy for p on a loopback port and returns it and its URL.
func startProxy(t *testing.T, p Params, sp ServerParams) (*Proxy, string) {
	t.Helper()
	px, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	sp.Handler = px
	if sp.ErrorLog == nil {
		sp.ErrorLog = log.New(io.Discard, "", 0)
	}
	srv, err := NewServer(sp)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		_ = px.Close()
	})
	return px, "http://" + ln.Addr().String()
}

// startUpstream serves h over HTTP/1.1 (and, with h2c, unencrypted HTTP/2).
func startUpstream(t *testing.T, h http.Handler, h2c bool) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	if h2c {
		var p http.Protocols
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		s.Config.Protocols = &p
	}
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// newClient returns an HTTP/1.1 client (with h2c, one speaking unencrypted
// HTTP/2 only) that closes its connections when the test ends.
func newClient(t *testing.T, h2c bool) *http.Client {
	tr := &http.Transport{DisableCompression: true}
	if h2c {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = &p
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// recv waits for a value on ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("waiting for %s: nothing came", what)
		var zero T
		return zero
	}
}

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
