package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/gate"
)

// busyUpstream is an upstream whose handler does not watch its context, as a
// thread pool or a CPU-bound job does not: each request it takes is worked on
// until the test lets it end, whether or not the proxy is still there. It
// counts the requests it works on at once and the most it ever did.
type busyUpstream struct {
	inFlight, most atomic.Int64
	arrived        chan struct{} // one value per request taken
	release        chan struct{} // closed (end): every request ends
	ended          sync.Once
	conns          atomic.Int64 // connections accepted
}

// end lets every request end, those to come at once.
func (u *busyUpstream) end() { u.ended.Do(func() { close(u.release) }) }

func newBusyUpstream(t *testing.T, h2c bool) (*busyUpstream, string) {
	u := &busyUpstream{arrived: make(chan struct{}, 100), release: make(chan struct{})}
	s := startUpstreamWith(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.inFlight.Add(1)
		for m := u.most.Load(); n > m && !u.most.CompareAndSwap(m, n); m = u.most.Load() {
		}
		u.arrived <- struct{}{}
		<-u.release // the work, which the request's context does not stop
		u.inFlight.Add(-1)
		_, _ = io.WriteString(w, "done")
	}), h2c, func(s *http.Server) {
		s.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				u.conns.Add(1)
			}
		}
	})
	t.Cleanup(u.end) // before the server's Close, which waits for its handlers
	return u, s.URL
}

// abandonGroup admits two requests at once and queues the rest, long enough
// for the test (the queue's wait is not what it judges).
const abandonGroup = `
[[group]]
name = "two"
  [group.concurrency]
  law = "fixed"
  limit = 2
  [group.queue]
  max = 8
  max_wait = "1m"
  codel_target = "0s"
`

// TestAbandonedRequestKeepsItsSlot: callers that hang up (raw sockets
// closed) while the upstream works on their requests do not give their
// slots of the concurrency limit back until the upstream has answered: the
// requests that queue behind them reach the upstream only then, so that it
// never works on more than the limit at once. The abandoned exchanges are
// counted (Stats.Abandoned, AbandonedInFlight), finish as the upstream's
// answers say (success, with the upstream's service time), and their
// upstream connections serve the next requests. The same over h2c to the
// upstream, whose streams are not reset when their callers go.
func TestAbandonedRequestKeepsItsSlot(t *testing.T) {
	t.Run("http1", func(t *testing.T) { testAbandonedRequestKeepsItsSlot(t, ProtocolHTTP1) })
	t.Run("h2c", func(t *testing.T) { testAbandonedRequestKeepsItsSlot(t, ProtocolH2C) })
}

func testAbandonedRequestKeepsItsSlot(t *testing.T, proto Protocol) {
	const limit = 2
	up, upURL := newBusyUpstream(t, proto == ProtocolH2C)
	g := testGate(t, abandonGroup)
	adm := newFinishes(t)
	px, base := startWatched(t, adm, Params{Upstream: upURL, Gate: g, Protocol: proto}, ServerParams{})

	for range limit {
		c := dialRaw(t, base)
		c.send(t, "GET /work HTTP/1.1\r\nHost: sluice.test\r\n\r\n")
		recv(t, up.arrived, "an abandoned request at the upstream")
		c.close() // the caller gives up
	}
	waitFor(t, "the proxy seeing both callers gone", func() bool { return px.Stats().AbandonedInFlight == limit })

	// The callers after them wait in the gate's queue: the slots are held.
	type answer struct {
		status int
		err    error
	}
	answers := make(chan answer, limit)
	client := newClient(t, false)
	for range limit {
		go func() {
			resp, err := client.Get(base + "/work")
			if err != nil {
				answers <- answer{err: err}
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			answers <- answer{status: resp.StatusCode}
		}()
	}
	waitFor(t, "the next callers queued, or at the upstream", func() bool {
		st, _ := g.Group("two")
		return st.Queued == limit || up.inFlight.Load() > limit
	})
	if n := up.inFlight.Load(); n > limit {
		t.Fatalf("the upstream works on %d requests at once, limit %d: the abandoned requests' slots were given back", n, limit)
	}

	up.end() // the upstream ends its work: the abandoned first
	for range limit {
		if a := recv(t, answers, "a queued caller's answer"); a.err != nil || a.status != http.StatusOK {
			t.Errorf("queued caller: %d %v", a.status, a.err)
		}
	}
	if m := up.most.Load(); m > limit {
		t.Errorf("the upstream worked on %d requests at once, limit %d", m, limit)
	}
	for range 2 * limit {
		if f := adm.outcome(t); f.outcome != gate.Success || f.latency <= 0 {
			t.Errorf("outcome %v after %v, want success with the upstream's time", f.outcome, f.latency)
		}
	}
	st := px.Stats()
	if st.Abandoned != limit || st.AbandonedInFlight != 0 {
		t.Errorf("stats: %d abandoned, %d in flight; want %d, 0", st.Abandoned, st.AbandonedInFlight, limit)
	}
	if n := up.conns.Load(); proto == ProtocolHTTP1 && n != limit {
		t.Errorf("%d upstream connections, want %d: an abandoned exchange's connection serves the next", n, limit)
	}
}

// TestAbandonedStreamIsCut: a stream (server-sent events) whose client goes
// away is cut at once, over HTTP/1.1 and h2c alike: it holds a stream slot,
// not a request's, and its upstream waits for nothing but the cut.
func TestAbandonedStreamIsCut(t *testing.T) {
	for _, proto := range []Protocol{ProtocolHTTP1, ProtocolH2C} {
		cut := make(chan struct{}, 1)
		up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: first\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done() // the proxy cut the stream
			cut <- struct{}{}
		}), proto == ProtocolH2C)
		px, base := startProxy(t, Params{Upstream: up.URL, Protocol: proto}, ServerParams{})
		c := dialRaw(t, base)
		c.send(t, "GET /events HTTP/1.1\r\nHost: sluice.test\r\n\r\n")
		c.next(t, "the first event", func(b []byte, ended bool) (int, error) {
			if i := strings.Index(string(b), "data: first\n\n"); i >= 0 {
				return i + len("data: first\n\n"), nil
			}
			return 0, errIncomplete
		})
		c.close()
		recv(t, cut, "the stream cut at the upstream")
		if st := px.Stats(); st.Abandoned != 0 {
			t.Errorf("protocol %d: %d abandoned, want 0: a stream is cut, not finished", proto, st.Abandoned)
		}
	}
}

// TestAbandonedWithoutSlotIsCut: a request that holds no slot of a
// concurrency limit — one a shadowed group admitted, whose model of
// enforcement takes none — is cut when its caller hangs up, over HTTP/1.1
// and h2c alike: the upstream is told (its handler's context ends) as it
// would be without sluice in front, and nothing is counted abandoned. In
// shadow mode sluice must not change what the service sees.
func TestAbandonedWithoutSlotIsCut(t *testing.T) {
	t.Run("http1", func(t *testing.T) { testAbandonedWithoutSlotIsCut(t, ProtocolHTTP1) })
	t.Run("h2c", func(t *testing.T) { testAbandonedWithoutSlotIsCut(t, ProtocolH2C) })
}

func testAbandonedWithoutSlotIsCut(t *testing.T, proto Protocol) {
	arrived, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	s := startUpstreamWith(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done() // a handler that stops when told
		cancelled <- struct{}{}
	}), proto == ProtocolH2C, nil)
	g := testGate(t, strings.Replace(abandonGroup, `name = "two"`, "name = \"two\"\nmode = \"shadow\"", 1))
	px, base := startWatched(t, newFinishes(t), Params{Upstream: s.URL, Gate: g, Protocol: proto}, ServerParams{})

	c := dialRaw(t, base)
	c.send(t, "GET /work HTTP/1.1\r\nHost: sluice.test\r\n\r\n")
	recv(t, arrived, "the request at the upstream")
	c.close() // the caller gives up
	recv(t, cancelled, "the upstream told of the caller's going")
	if st := px.Stats(); st.Abandoned != 0 {
		t.Errorf("%d abandoned exchanges counted, want 0: a shadowed request holds no slot to keep", st.Abandoned)
	}
}

// TestAbandonedClientSocketClosed: a caller that half-closes its connection
// while the upstream works on its request (it sent its last byte: gone, as
// nginx and net/http's server take it) has its socket closed at once, not
// when the upstream answers: the exchange keeps its slot and its upstream
// connection, but not the client's descriptor (two a held exchange cost a
// proxy at overload half its descriptors). Nothing of the response reaches
// the caller. Over the own server and net/http's, on a guarded listener.
func TestAbandonedClientSocketClosed(t *testing.T) {
	bothServers(t, func(t *testing.T) {
		up, upURL := newBusyUpstream(t, false)
		adm := newFinishes(t)
		px, base := startWatched(t, adm, Params{Upstream: upURL, Gate: testGate(t, abandonGroup)}, ServerParams{})
		c := dialRaw(t, base)
		c.send(t, "GET /work HTTP/1.1\r\nHost: sluice.test\r\n\r\n")
		recv(t, up.arrived, "the request at the upstream")
		if err := c.c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		recv(t, c.ended, "the proxy closing the gone caller's socket while the upstream works")
		if st := px.Stats(); st.AbandonedInFlight != 1 || up.inFlight.Load() != 1 {
			t.Fatalf("%d abandoned in flight, the upstream on %d: want the exchange held (1, 1) when the socket closes", st.AbandonedInFlight, up.inFlight.Load())
		}
		if got := c.received(); len(got) != 0 {
			t.Errorf("the gone caller was sent %q", got)
		}
		up.end()
		if f := adm.outcome(t); f.outcome != gate.Success {
			t.Errorf("outcome %v, want success: the held exchange finishes", f.outcome)
		}
	})
}

// TestHalfClosedCallerIsAnsweredTruly: a caller that half-closes its
// connection after its request (nc -N, some health checkers) is sent the
// answer the own server gives at once, a refusal here, as nginx sends it:
// only a held exchange's caller has its socket closed early. net/http's
// server may see the end before the handler runs and take the caller for
// gone: then nothing is sent (it answered 200 with an empty body).
func TestHalfClosedCallerIsAnsweredTruly(t *testing.T) {
	bothServers(t, func(t *testing.T) {
		_, base := startProxy(t, Params{Upstream: "http://" + closedAddr(t), Gate: testGate(t, refuseIPGroup)}, ServerParams{})
		dialRaw(t, base).exchange(t, "GET", "GET /x HTTP/1.1\r\nHost: sluice.test\r\n\r\n") // the burst's one request
		// The server's read that sees the end may come before the answer, or after.
		for i := range 50 {
			c := dialRaw(t, base)
			c.send(t, "GET /x HTTP/1.1\r\nHost: sluice.test\r\n\r\n")
			if err := c.c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			recv(t, c.ended, "the proxy closing the connection")
			got := c.received()
			if strings.HasPrefix(got, "HTTP/1.1 429 ") || (got == "" && testNetHTTPServer) {
				continue
			}
			t.Fatalf("request %d: the half-closed caller got %q, want its 429", i, clipString(got))
		}
	})
}

// bothServers runs f over the own server and over net/http's (serveProxy).
func bothServers(t *testing.T, f func(t *testing.T)) {
	for _, netHTTP := range []bool{false, true} {
		name := "own-server"
		if netHTTP {
			name = "net-http"
		}
		t.Run(name, func(t *testing.T) {
			was := testNetHTTPServer
			testNetHTTPServer = netHTTP
			defer func() { testNetHTTPServer = was }()
			f(t)
		})
	}
}

// TestGoneBeforeHandlerAborts: an HTTP/1 request whose client is gone before
// the proxy looks at it (net/http's server saw the connection end first) is
// aborted, not answered: returning with nothing written had the server
// answer 200 with an empty body for a request nothing served.
func TestGoneBeforeHandlerAborts(t *testing.T) {
	px, err := New(Params{Upstream: "http://" + closedAddr(t), Gate: testGate(t, roomyGroup)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest(http.MethodGet, "http://sluice.test/x", nil).WithContext(ctx)
	w := httptest.NewRecorder()
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("recovered %v, want http.ErrAbortHandler (recorded %d %q)", v, w.Code, w.Body.String())
		}
	}()
	px.ServeHTTP(w, r)
}
