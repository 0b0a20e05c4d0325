package gate

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// upstream is a real HTTP service on loopback: /ok answers 200, /fail 500,
// /missing 404; /slow answers once release is closed (or its client leaves).
type upstream struct {
	*httptest.Server
	release chan struct{}
	arrived chan struct{}
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{release: make(chan struct{}), arrived: make(chan struct{}, 16)}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "/missing":
			http.NotFound(w, r)
		case "/slow":
			u.arrived <- struct{}{}
			select {
			case <-u.release:
			case <-r.Context().Done():
			}
			io.WriteString(w, "slow\n")
		default:
			io.WriteString(w, "ok\n")
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// front serves g's middleware in front of a reverse proxy to up, on a real
// listener.
func front(t *testing.T, g *Gate, up *upstream) *httptest.Server {
	target, _ := url.Parse(up.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	mux := http.NewServeMux()
	mux.Handle("/", proxy)
	mux.HandleFunc("/panic", func(http.ResponseWriter, *http.Request) { panic("handler bug") })
	s := httptest.NewUnstartedServer(Middleware(g, mux))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestMiddleware503(t *testing.T) {
	g := newRealGate(t, `
[[group]]
name = "api"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 0
`)
	up := newUpstream(t)
	srv := front(t, g, up)
	slow := make(chan *http.Response, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/slow")
		if err == nil {
			resp.Body.Close()
		}
		slow <- resp
	}()
	<-up.arrived // the slow request holds the only slot

	resp, body := get(t, srv.URL+"/ok")
	if resp.StatusCode != 503 {
		t.Fatalf("status %d, want 503", resp.StatusCode)
	}
	h := resp.Header
	if ra := h.Get("Retry-After"); ra != "1" && ra != "2" {
		t.Errorf("Retry-After %q, want 1 or 2 (1s, jittered)", ra)
	}
	if h.Get("Sluice-Reason") != "concurrency" || h.Get("Content-Type") != "text/plain; charset=utf-8" ||
		h.Get("X-Content-Type-Options") != "nosniff" || body != "service overloaded (concurrency)\n" {
		t.Errorf("headers %v, body %q", h, body)
	}
	if h.Get("RateLimit-Policy") != "" || h.Get("RateLimit") != "" {
		t.Errorf("an overload rejection carries rate-limit fields: %v", h)
	}
	close(up.release)
	if r := <-slow; r == nil || r.StatusCode != 200 {
		t.Fatalf("the slow request failed: %v", r)
	}
}

func TestMiddleware429(t *testing.T) {
	g, _ := newGate(t, `
[[group]]
name = "api"
key = "ip"
  [group.rate]
  rate = 2
  burst = 2
  [group.concurrency]
  law = "fixed"
  limit = 100
`)
	srv := front(t, g, newUpstream(t))
	for i := range 2 {
		if resp, _ := get(t, srv.URL+"/ok"); resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	resp, body := get(t, srv.URL+"/ok")
	if resp.StatusCode != 429 {
		t.Fatalf("status %d, want 429", resp.StatusCode)
	}
	h := resp.Header
	want := map[string]string{
		"Sluice-Reason":    "rate",
		"RateLimit-Policy": `"api";q=2;w=1`,
		"RateLimit":        `"api";r=0;t=1`,
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if ra := h.Get("Retry-After"); ra != "1" && ra != "2" {
		t.Errorf("Retry-After %q, want 1 or 2 (0.5s rounded up, jittered)", ra)
	}
	if body != "too many requests (rate)\n" {
		t.Errorf("body %q", body)
	}
}

// doneSignal is an Observer that closes its channel when the n-th admitted
// request is done (Done calls it after the slot is released).
type doneSignal struct {
	n       uint64
	calls   atomic.Uint64
	reached chan struct{}
}

func (s *doneSignal) ObserveDone(string, Outcome, time.Duration, time.Duration) {
	if s.calls.Add(1) == s.n {
		close(s.reached)
	}
}

func (s *doneSignal) ObserveQueueWait(string, time.Duration) {}

func TestMiddlewareOutcomes(t *testing.T) {
	want := [3]uint64{Success: 2, Dropped: 1, Ignored: 5} // 3 × 404, the panic, the canceled
	finished := &doneSignal{n: want[Success] + want[Dropped] + want[Ignored], reached: make(chan struct{})}
	clk := newFakeClock()
	g, err := New(Params{Config: config(t, `
[[group]]
name = "api"
  [group.concurrency]
  law = "fixed"
  limit = 10
`), Clock: clk, Observer: finished, Resources: NoResources})
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t)
	srv := front(t, g, up)
	for _, path := range []string{"/ok", "/ok", "/fail", "/missing", "/missing", "/missing"} {
		get(t, srv.URL+path)
	}
	// On a fresh connection, so the client does not retry it.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if _, err := fresh.Get(srv.URL + "/panic"); err == nil {
		t.Error("a panicking handler answered")
	}
	// A client that gives up: the request is ignored, not a drop.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/slow", nil)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-up.arrived
	cancel()
	<-errc
	// The server notices the client left asynchronously: wait until every
	// request is done (a client may also read its answer before the
	// middleware's Done).
	gr := g.testGroup(t, "api")
	timeout := time.NewTimer(10 * time.Second) // a failure's bound, not a pace
	defer timeout.Stop()
	select {
	case <-finished.reached:
	case <-timeout.C:
		t.Fatalf("%d of %d requests done within 10s; slots still held: %d",
			finished.calls.Load(), finished.n, gr.conc.InFlight())
	}
	if n := gr.conc.InFlight(); n != 0 {
		t.Fatalf("slots still held once every request is done: %d", n)
	}
	g.Tick(clk.Advance(250 * time.Millisecond))
	st, _ := g.Group("api")
	if st.Completed != want {
		t.Errorf("completed %v (success, dropped, ignored), want %v", st.Completed, want)
	}
}

func TestOutcomeOf(t *testing.T) {
	cases := []struct {
		status int
		gone   bool
		want   Outcome
	}{
		{0, false, Success}, {101, false, Success}, {200, false, Success}, {304, false, Success},
		{400, false, Ignored}, {429, false, Ignored}, {499, false, Ignored},
		{500, false, Dropped}, {503, false, Dropped}, {504, false, Dropped},
		{200, true, Ignored}, {503, true, Ignored},
	}
	for _, c := range cases {
		if got := outcomeOf(c.status, c.gone); got != c.want {
			t.Errorf("outcomeOf(%d, gone=%v) = %v, want %v", c.status, c.gone, got, c.want)
		}
	}
}

func TestStatusWriterPassesThrough(t *testing.T) {
	rec := httptest.NewRecorder()
	sw := &statusWriter{w: rec}
	sw.WriteHeader(http.StatusContinue) // informational: not final
	sw.Flush()
	if sw.status != 200 || !rec.Flushed {
		t.Errorf("after Flush: status %d flushed %v", sw.status, rec.Flushed)
	}
	if http.NewResponseController(sw).Flush() != nil {
		t.Error("ResponseController cannot reach the real writer")
	}
	sw2 := &statusWriter{w: httptest.NewRecorder()}
	if n, err := sw2.ReadFrom(strings.NewReader("hello")); n != 5 || err != nil || sw2.status != 200 {
		t.Errorf("ReadFrom = %d, %v; status %d", n, err, sw2.status)
	}
	if _, _, err := sw2.Hijack(); err == nil {
		t.Error("Hijack of a recorder succeeded")
	}
}

// discardWriter is a ResponseWriter that allocates nothing, to measure the
// middleware's own allocations.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

func TestMiddlewareAdmittedPathDoesNotAllocate(t *testing.T) {
	g, _ := newGate(t, `
[[group]]
name = "api"
  [group.concurrency]
  law = "fixed"
  limit = 10
`)
	ok := []byte("ok")
	h := Middleware(g, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(ok) }))
	w := &discardWriter{h: http.Header{}}
	r := request("/")
	if n := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("the admitted path allocates %v times per request", n)
	}
	st, _ := g.Group("api")
	if st.InFlight != 0 {
		t.Errorf("in flight %d after the requests", st.InFlight)
	}
}
