package proxy

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/proxy/h1/h1test"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
)

// waitLimit bounds every wait for an event in these tests: far beyond what any
// event takes, it only turns a hang into a failure.
const waitLimit = 10 * time.Second

// finished is one exchange's end as the proxy reported it to the gate.
type finished struct {
	outcome gate.Outcome
	latency time.Duration
}

// finishes receives every finished exchange of a proxy started with
// startWatched, through the proxy's observe hook: each exchange is reported
// there right after the gate (Pass.DoneAfter) and the breaker got it.
type finishes struct {
	done chan finished
}

func newFinishes(t *testing.T) *finishes {
	return &finishes{done: make(chan finished, 1000)}
}

func (f *finishes) record(o gate.Outcome, latency time.Duration) {
	f.done <- finished{o, latency}
}

// outcome waits for the next finished exchange.
func (f *finishes) outcome(t *testing.T) finished {
	t.Helper()
	return recv(t, f.done, "a finished exchange")
}

// noMoreFinishes checks that nothing was finished beyond what was taken.
func (f *finishes) noMoreFinishes(t *testing.T) {
	t.Helper()
	select {
	case x := <-f.done:
		t.Fatalf("unexpected finish %+v", x)
	default:
	}
}

// testGate returns a gate running the groups in groupsTOML (TOML text of
// [[group]] tables; "" for none, so only the catch-all group) with a real
// clock and no control loop: its limits stay as configured.
func testGate(t testing.TB, groupsTOML string) *gate.Gate {
	t.Helper()
	cfg, err := configs.Parse("test.toml", []byte("[upstream]\nurl = \"http://127.0.0.1:1\"\n"+groupsTOML))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// roomyGroup is a catch-all group that admits everything the tests send:
// a fixed limit far above their concurrency, no rate limit.
const roomyGroup = `
[[group]]
name = "all"
  [group.concurrency]
  law = "fixed"
  limit = 10000
`

// groupStatus ends a control interval (so the outcomes are counted) and
// returns the status of g's group called name.
func groupStatus(t *testing.T, g *gate.Gate, name string) gate.GroupStatus {
	t.Helper()
	g.Tick(time.Now())
	st, ok := g.Group(name)
	if !ok {
		t.Fatalf("no group %q", name)
	}
	return st
}

// startWatched is startProxy with every finished exchange sent to f, and with a
// roomy test gate (roomyGroup) when p has none.
func startWatched(t *testing.T, f *finishes, p Params, sp ServerParams) (*Proxy, string) {
	t.Helper()
	if p.Gate == nil {
		p.Gate = testGate(t, roomyGroup)
	}
	return serveProxy(t, p, sp, f.record)
}

// startProxy serves a Proxy for p on a loopback port and returns it and its URL.
func startProxy(t *testing.T, p Params, sp ServerParams) (*Proxy, string) {
	t.Helper()
	return serveProxy(t, p, sp, nil)
}

// serveProxy serves a Proxy for p, with observe as its hook (nil for none), on
// a guarded listener (GuardListener), as the daemon serves it.
func serveProxy(t *testing.T, p Params, sp ServerParams, observe func(gate.Outcome, time.Duration)) (*Proxy, string) {
	t.Helper()
	return serveProxyWith(t, p, sp, func(px *Proxy) { px.observe = observe })
}

// serveProxyWith is serveProxy with prepare run on the Proxy before it serves
// (to set the hooks its handlers read).
func serveProxyWith(t *testing.T, p Params, sp ServerParams, prepare func(*Proxy)) (*Proxy, string) {
	t.Helper()
	px, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	prepare(px)
	sp.Handler = px
	if sp.ErrorLog == nil {
		sp.ErrorLog = log.New(io.Discard, "", 0)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if testNetHTTPServer || p.Protocol == ProtocolH2C { // the own server does not forward to h2c only
		srv, err := NewServer(sp)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.Serve(GuardListener(ln, sp.MaxHeaderBytes)) }()
		t.Cleanup(func() {
			_ = srv.Close()
			_ = px.Close()
		})
		return px, "http://" + ln.Addr().String()
	}
	srv, err := NewH1Server(px, sp)
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

// testNetHTTPServer makes serveProxy serve with net/http's server on a
// GuardListener instead of the own server (SLUICE_TEST_SERVER=net/http).
var testNetHTTPServer = os.Getenv("SLUICE_TEST_SERVER") == "net/http"

// The own server's tests overwrite every head once its request ended (a
// string of a request kept beyond it shows), and watch every request for its
// client going away at once.
func init() { poisonHeads, clientWatchDelay = true, 0 }

// startUpstream serves h over HTTP/1.1 (and, with h2c, unencrypted HTTP/2).
func startUpstream(t testing.TB, h http.Handler, h2c bool) *httptest.Server {
	t.Helper()
	return startUpstreamWith(t, h, h2c, nil)
}

// startUpstreamWith is startUpstream with configure (if not nil) run on the
// server before it starts.
func startUpstreamWith(t testing.TB, h http.Handler, h2c bool, configure func(*http.Server)) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	if h2c {
		var p http.Protocols
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		s.Config.Protocols = &p
	}
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	if configure != nil {
		configure(s.Config)
	}
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
	return h1test.Recv(t, ch, what, waitLimit)
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
