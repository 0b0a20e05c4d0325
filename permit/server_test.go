package permit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/permit/permitclient"
	"github.com/sluicehq/sluice/permit/permitpb"
)

const testToken = "permit-test-token-0123456789"

// served is a Server on a real listener.
type served struct {
	srv  *permit.Server
	addr string // as a client dials it: "unix:///…" or "127.0.0.1:port"
	done chan error
}

// socketPath returns a short path for a unix socket (the limit is about 100
// bytes, which t.TempDir's paths can pass).
func socketPath(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "permit")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "p.sock")
}

// serve starts a Server of svc on network "unix" (a socket, no token) or
// "tcp" (loopback, with testToken).
func serve(t testing.TB, svc *permit.Service, network string) *served {
	t.Helper()
	p := permit.ServerParams{Service: svc}
	switch network {
	case "unix":
		p.Listen = "unix://" + socketPath(t)
	case "tcp":
		p.Listen, p.Token = "127.0.0.1:0", testToken
	}
	srv, err := permit.NewServer(p)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	s := &served{srv: srv, addr: p.Listen, done: make(chan error, 1)}
	if network == "tcp" {
		s.addr = ln.Addr().String()
	}
	go func() { s.done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-s.done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return s
}

// client returns a permitclient of s over transport.
func (s *served) client(t testing.TB, tr permitclient.Transport) *permitclient.Client {
	t.Helper()
	o := permitclient.Options{Transport: tr}
	if !strings.HasPrefix(s.addr, "unix://") {
		o.Token = testToken
	}
	c, err := permitclient.New(s.addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// httpClient returns a plain HTTP client of s, for the JSON API as is.
func (s *served) httpClient() (*http.Client, string) {
	if path, ok := strings.CutPrefix(s.addr, "unix://"); ok {
		return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}}, "http://permit"
	}
	return http.DefaultClient, "http://" + s.addr
}

var transports = []struct {
	name string
	tr   permitclient.Transport
}{{"grpc", permitclient.GRPC}, {"http", permitclient.HTTP}}

var networks = []string{"unix", "tcp"}

// eachWay runs f for every transport over every network.
func eachWay(t *testing.T, f func(t *testing.T, network string, tr permitclient.Transport)) {
	for _, n := range networks {
		for _, tr := range transports {
			t.Run(n+"/"+tr.name, func(t *testing.T) { f(t, n, tr.tr) })
		}
	}
}

func TestLimitNeverOvershotByManyClients(t *testing.T) {
	eachWay(t, func(t *testing.T, network string, tr permitclient.Transport) {
		const limit, clients, rounds = 4, 32, 20
		e := newEnv(t, queued(4, 64), permit.Params{})
		s := serve(t, e.svc, network)
		var inside, peak, granted atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for i := range clients {
			c := s.client(t, tr) // a connection of its own each
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					p, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs", Key: fmt.Sprint("c", i)})
					if err != nil {
						errs <- err
						return
					}
					granted.Add(1)
					n := inside.Add(1)
					for m := peak.Load(); n > m && !peak.CompareAndSwap(m, n); m = peak.Load() {
					}
					inside.Add(-1) // before the release reaches the service
					if err := p.Done(permitclient.Success); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("client: %v", err)
		}
		if granted.Load() != clients*rounds || peak.Load() > limit {
			t.Fatalf("granted %d of %d, at most %d held at once (limit %d)", granted.Load(), clients*rounds, peak.Load(), limit)
		}
		if n := e.inFlight(t, "jobs"); n != 0 {
			t.Fatalf("in flight %d after every release", n)
		}
		if n := e.obs.count(gate.Success); n != clients*rounds {
			t.Fatalf("the gate saw %d successes, want %d", n, clients*rounds)
		}
	})
}

func TestVanishedClientsSlotsReturnAtLeaseExpiry(t *testing.T) {
	eachWay(t, func(t *testing.T, network string, tr permitclient.Transport) {
		e := newEnv(t, jobs(3), permit.Params{Leases: permit.Leases{Default: 10 * time.Second}})
		s := serve(t, e.svc, network)
		gone := s.client(t, tr)
		for range 3 {
			if _, err := gone.Acquire(context.Background(), permitclient.Request{Group: "jobs"}); err != nil {
				t.Fatal(err)
			}
		}
		gone.Close() // it vanishes holding three permits

		other := s.client(t, tr)
		_, err := other.Acquire(context.Background(), permitclient.Request{Group: "jobs"})
		var ref *permitclient.RefusedError
		if !errors.As(err, &ref) || ref.Reason != "concurrency" {
			t.Fatalf("Acquire while the vanished client's permits hold every slot: %v, want refused (concurrency)", err)
		}
		if n := e.svc.Sweep(e.clock.Advance(10 * time.Second)); n != 3 {
			t.Fatalf("Sweep at the leases' end took %d, want 3", n)
		}
		if n := e.inFlight(t, "jobs"); n != 0 || e.obs.count(gate.Ignored) != 3 || e.obs.count(gate.Dropped) != 0 {
			t.Fatalf("in flight %d, ignored %d, dropped %d after the expiry; want 0, 3, 0", n, e.obs.count(gate.Ignored), e.obs.count(gate.Dropped))
		}
		p, err := other.Acquire(context.Background(), permitclient.Request{Group: "jobs"})
		if err != nil {
			t.Fatalf("Acquire after the expiry: %v", err)
		}
		if err := p.Done(permitclient.Success); err != nil {
			t.Fatal(err)
		}
	})
}

func TestClientAgainstServer(t *testing.T) {
	eachWay(t, func(t *testing.T, network string, tr permitclient.Transport) {
		e := newEnv(t, `
[[group]]
name = "api"
  [group.concurrency]
  law = "fixed"
  limit = 5
  [group.queue]
  max = 0
  [group.rate]
  algorithm = "fixed_window"
  limit = 2
  window = "10s"
`, permit.Params{Leases: permit.Leases{Groups: map[string]time.Duration{"api": 4 * time.Second}}})
		s := serve(t, e.svc, network)
		c := s.client(t, tr)
		ctx := context.Background()
		before := time.Now()
		p, err := c.Acquire(ctx, permitclient.Request{Group: "api", Key: "k", Priority: "critical"})
		if err != nil {
			t.Fatal(err)
		}
		if p.Group != "api" || p.Lease != 4*time.Second || p.Expires.Before(before.Add(4*time.Second)) || p.Expires.After(time.Now().Add(4*time.Second)) {
			t.Fatalf("permit %+v", p)
		}
		if err := p.DoneAfter(permitclient.Dropped, 3*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := p.Done(permitclient.Success); err != nil {
			t.Fatalf("second Done: %v, want nil (already released)", err)
		}
		if e.obs.count(gate.Dropped) != 1 || e.obs.count(gate.Success) != 0 {
			t.Fatalf("the gate saw %v, want one drop", e.obs.done)
		}

		// The quota (2 per 10s) refuses the third with the proxy's figures.
		q, err := c.Acquire(ctx, permitclient.Request{Group: "api"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Acquire(ctx, permitclient.Request{Group: "api"})
		var ref *permitclient.RefusedError
		if !errors.As(err, &ref) {
			t.Fatalf("third Acquire: %v, want a refusal", err)
		}
		if ref.Reason != "rate" || ref.Status != 429 || ref.Group != "api" || ref.RetryAfter < 10*time.Second || ref.RetryAfter > 15*time.Second ||
			ref.RateLimitPolicy != `"api";q=2;w=10` || ref.RateLimit != `"api";r=0;t=10` {
			t.Fatalf("refusal %+v", ref)
		}

		// A lease that expired: Done says so.
		e.clock.Advance(4 * time.Second)
		if err := q.Done(permitclient.Success); !errors.Is(err, permitclient.ErrExpired) {
			t.Fatalf("Done after the lease: %v, want ErrExpired", err)
		}
		if err := (permitclient.Permit{}).Done(permitclient.Success); !errors.Is(err, permitclient.ErrUnknown) {
			t.Fatalf("Done of the zero Permit: %v", err)
		}

		// Errors the service names.
		if _, err := c.Acquire(ctx, permitclient.Request{Group: "nope"}); err == nil || !strings.Contains(err.Error(), "no such group") {
			t.Fatalf("unknown group: %v", err)
		}
		if _, err := c.Acquire(ctx, permitclient.Request{Group: "api", Priority: "urgent"}); err == nil || !strings.Contains(err.Error(), "priority") {
			t.Fatalf("bad priority: %v", err)
		}
		if _, err := c.Acquire(ctx, permitclient.Request{Group: "api", Cost: -2}); err == nil || !strings.Contains(err.Error(), "cost") {
			t.Fatalf("bad cost: %v", err)
		}
	})
}

func TestHTTPRefusalHasTheProxysHeaders(t *testing.T) {
	e := newEnv(t, `
[[group]]
name = "api"
  [group.rate]
  algorithm = "fixed_window"
  limit = 1
  window = "1s"
`, permit.Params{})
	s := serve(t, e.svc, "unix")
	hc, base := s.httpClient()
	post := func() *http.Response {
		resp, err := hc.Post(base+"/v1/permits", "application/json", strings.NewReader(`{"group":"api"}`))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := post(); r.StatusCode != 200 {
		t.Fatalf("first: %d", r.StatusCode)
	}
	r := post()
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	if r.StatusCode != 429 || r.Header.Get("Sluice-Reason") != "rate" || r.Header.Get("Retry-After") == "" ||
		r.Header.Get("RateLimit-Policy") != `"api";q=1;w=1` || r.Header.Get("RateLimit") != `"api";r=0;t=1` {
		t.Fatalf("refusal: %d %v", r.StatusCode, r.Header)
	}
	if body["reason"] != "rate" || body["ratelimit_policy"] != `"api";q=1;w=1` || fmt.Sprint(body["retry_after_s"]) != r.Header.Get("Retry-After") {
		t.Fatalf("refusal body %v, headers %v: the body must carry the headers' figures", body, r.Header)
	}
}

func TestHTTPErrors(t *testing.T) {
	e := newEnv(t, jobs(1), permit.Params{})
	s := serve(t, e.svc, "unix")
	hc, base := s.httpClient()
	for _, c := range []struct {
		method, path, ctype, body string
		status                    int
		want                      string
	}{
		{"POST", "/v1/permits", "application/json", `{"group":"jobs","cost":"x"}`, 400, `"field":"cost"`},
		{"POST", "/v1/permits", "application/json", `{"group":"jobs","colour":"red"}`, 400, `"field":"colour"`},
		{"POST", "/v1/permits", "application/json", `{"group":"jobs"} {}`, 400, "after the JSON object"},
		{"POST", "/v1/permits", "application/json", ``, 400, "empty body"},
		{"POST", "/v1/permits", "application/json", `{"group":"jobs","wait_ms":-1}`, 400, `"field":"wait_ms"`},
		{"POST", "/v1/permits", "application/json", `{"group":"nope"}`, 404, `"field":"group"`},
		{"POST", "/v1/permits", "text/plain", `{"group":"jobs"}`, 415, "application/json"},
		{"POST", "/v1/permits", "application/json", `{"group":"` + strings.Repeat("x", 5000) + `"}`, 413, "larger than"},
		{"GET", "/v1/permits", "", ``, 405, "only POST"},
		{"POST", "/v2/permits", "application/json", `{}`, 404, "no such endpoint"},
		{"POST", "/v1/permits/zz/release", "application/json", `{"outcome":"success"}`, 404, `"result":"unknown"`},
		{"POST", "/v1/permits/0000000000000001/release", "application/json", `{"outcome":"success"}`, 404, `"result":"unknown"`},
		{"POST", "/v1/permits/0000000000000001/release", "application/json", `{"outcome":"fine"}`, 400, `"field":"outcome"`},
		{"POST", "/v1/permits/0000000000000001/release", "application/json", `{"outcome":"success","latency_ms":-3}`, 400, `"field":"latency_ms"`},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !bytes.Contains(b, []byte(c.want)) || !json.Valid(b) {
			t.Errorf("%s %s %q: %d %s, want %d with %s", c.method, c.path, c.body, resp.StatusCode, b, c.status, c.want)
		}
	}
	if e.inFlight(t, "jobs") != 0 {
		t.Fatal("a bad request holds a slot")
	}
}

func TestTCPNeedsTheToken(t *testing.T) {
	e := newEnv(t, jobs(1), permit.Params{})
	if _, err := permit.NewServer(permit.ServerParams{Service: e.svc, Listen: "127.0.0.1:0"}); !errors.Is(err, permit.ErrNoToken) {
		t.Fatalf("NewServer on TCP without a token: %v, want ErrNoToken", err)
	}
	// Serve checks the listener it is given too.
	srv, _ := permit.NewServer(permit.ServerParams{Service: e.svc, Listen: "unix:///nonexistent/p.sock"})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := srv.Serve(ln); !errors.Is(err, permit.ErrNoToken) {
		t.Fatalf("Serve of a TCP listener without a token: %v, want ErrNoToken", err)
	}

	s := serve(t, e.svc, "tcp")
	hc, base := s.httpClient()
	for _, auth := range []string{"", "Bearer wrong", "Basic " + testToken} {
		req, _ := http.NewRequest("POST", base+"/v1/permits", strings.NewReader(`{"group":"jobs"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: %d, want 401", auth, resp.StatusCode)
		}
	}
	conn, err := grpc.NewClient("passthrough:///"+s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = permitpb.NewPermitsClient(conn).Acquire(context.Background(), &permitpb.AcquireRequest{Group: "jobs"})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("gRPC without the token: %v, want Unauthenticated", err)
	}
	if e.inFlight(t, "jobs") != 0 {
		t.Fatal("an unauthenticated call holds a slot")
	}
	// With it (permitclient sends it), and after a token change.
	c := s.client(t, permitclient.GRPC)
	p, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	p.Done(permitclient.Success)
	if err := s.srv.SetToken("another-token-0123456789"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("old token after SetToken: %v", err)
	}
	if err := s.srv.SetToken(""); !errors.Is(err, permit.ErrNoToken) {
		t.Fatalf("SetToken(\"\") on TCP: %v", err)
	}
}

func TestUnixSocketMode(t *testing.T) {
	e := newEnv(t, jobs(1), permit.Params{})
	path := socketPath(t)
	srv, err := permit.NewServer(permit.ServerParams{Service: e.svc, Listen: "unix://" + path, SocketMode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v, want 0600", fi.Mode().Perm(), err)
	}
}

func TestShutdownWaitsForAQueuedCall(t *testing.T) {
	e := newEnv(t, queued(1, 4), permit.Params{})
	s := serve(t, e.svc, "unix")
	c := s.client(t, permitclient.GRPC)
	first, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		p   permitclient.Permit
		err error
	}
	got := make(chan answer, 1)
	go func() {
		p, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs"})
		got <- answer{p, err}
	}()
	waitFor(t, "the second call to queue", func() bool { st, _ := e.gate.Group("jobs"); return st.Queued == 1 })
	down := make(chan error, 1)
	go func() { down <- s.srv.Shutdown(context.Background()) }()
	// The queued call is still served while the listener closes: a slot
	// freed on the service lets it through.
	if _, err := e.svc.Release(permit.ID(first.ID), gate.Success, 0); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.err != nil {
		t.Fatalf("queued call across Shutdown: %v, want its grant", a.err)
	}
	if r, _ := e.svc.Release(permit.ID(a.p.ID), gate.Success, 0); r != permit.Released {
		t.Fatalf("release of the permit granted during Shutdown: %v", r)
	}
	if err := <-down; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestCallerGivesUpWhileQueued: a caller whose context ends while it waits
// in the queue leaves it (the gate counts it canceled, not refused), gets
// its context's error, and the client goes on working.
func TestCallerGivesUpWhileQueued(t *testing.T) {
	eachWay(t, func(t *testing.T, network string, tr permitclient.Transport) {
		e := newEnv(t, queued(1, 4), permit.Params{})
		s := serve(t, e.svc, network)
		c := s.client(t, tr)
		first, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error, 1)
		go func() {
			_, err := c.Acquire(ctx, permitclient.Request{Group: "jobs"})
			got <- err
		}()
		waitFor(t, "the second call to queue", func() bool { st, _ := e.gate.Group("jobs"); return st.Queued == 1 })
		cancel()
		if err := <-got; !errors.Is(err, context.Canceled) && status.Code(err) != codes.Canceled {
			t.Fatalf("Acquire cancelled while queued: %v, want its context's error", err)
		}
		waitFor(t, "the service to see the caller gone", func() bool {
			st, _ := e.gate.Group("jobs")
			return st.Queued == 0 && st.Canceled == 1
		})
		if err := first.Done(permitclient.Success); err != nil {
			t.Fatal(err)
		}
		p, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs"})
		if err != nil {
			t.Fatalf("Acquire after a cancelled one: %v", err)
		}
		p.Done(permitclient.Success)
		if n := e.inFlight(t, "jobs"); n != 0 {
			t.Fatalf("in flight %d", n)
		}
	})
}

// TestSessionTakesTheDeadlineAsItsWait: a stream carries no deadline per
// message, so the client sends the time left as the wait.
func TestSessionTakesTheDeadlineAsItsWait(t *testing.T) {
	e := newEnv(t, queued(1, 4), permit.Params{})
	s := serve(t, e.svc, "unix")
	c := s.client(t, permitclient.GRPC)
	if _, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Acquire(ctx, permitclient.Request{Group: "jobs"})
	var ref *permitclient.RefusedError
	if errors.As(err, &ref) {
		if ref.Reason != "queue_timeout" {
			t.Fatalf("refusal %v, want queue_timeout", ref)
		}
	} else if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Acquire with a deadline: %v, want a queue_timeout refusal or DeadlineExceeded", err)
	}
	waitFor(t, "the queue to empty", func() bool { st, _ := e.gate.Group("jobs"); return st.Queued == 0 })
}

// TestSessionRefusesABadCall: a Session message that is neither an acquire
// nor a release is an error answer; the stream goes on.
func TestSessionRefusesABadCall(t *testing.T) {
	e := newEnv(t, jobs(1), permit.Params{})
	s := serve(t, e.svc, "unix")
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st, err := permitpb.NewPermitsClient(conn).Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []*permitpb.SessionRequest{{}, {Call: &permitpb.SessionRequest_Acquire{Acquire: &permitpb.AcquireRequest{Group: "jobs"}}}} {
		if err := st.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if req.Call == nil && codes.Code(resp.GetError().GetCode()) != codes.InvalidArgument {
			t.Fatalf("an empty session request: %v, want an InvalidArgument answer", resp)
		}
		if req.Call != nil && resp.GetAcquire().GetGrant() == nil {
			t.Fatalf("acquire after it: %v", resp)
		}
	}
	st.CloseSend()
}

// TestUnaryGRPC drives the unary calls, as a client of another language
// would.
func TestUnaryGRPC(t *testing.T) {
	e := newEnv(t, jobs(1), permit.Params{Leases: permit.Leases{Default: 5 * time.Second}})
	s := serve(t, e.svc, "unix")
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := permitpb.NewPermitsClient(conn)
	ctx := context.Background()
	a, err := c.Acquire(ctx, &permitpb.AcquireRequest{Group: "jobs", Priority: "sheddable"})
	if err != nil || a.GetGrant().GetLeaseMs() != 5000 || a.GetGrant().GetGroup() != "jobs" {
		t.Fatalf("Acquire: %v %v", a, err)
	}
	ref, err := c.Acquire(ctx, &permitpb.AcquireRequest{Group: "jobs"})
	if err != nil || ref.GetRefusal().GetReason() != "concurrency" || ref.GetRefusal().GetStatus() != 503 || ref.GetRefusal().GetRetryAfterS() < 1 {
		t.Fatalf("second Acquire: %v %v, want a concurrency refusal", ref, err)
	}
	id := a.GetGrant().GetId()
	lat := 2.5
	for _, want := range []permitpb.ReleaseResult{permitpb.ReleaseResult_RELEASED, permitpb.ReleaseResult_ALREADY_RELEASED} {
		r, err := c.Release(ctx, &permitpb.ReleaseRequest{Id: id, Outcome: permitpb.Outcome_SUCCESS, LatencyMs: &lat})
		if err != nil || r.GetResult() != want {
			t.Fatalf("Release: %v %v, want %v", r, err, want)
		}
	}
	if got := e.obs.latencies(); len(got) != 1 || got[0] != 2500*time.Microsecond {
		t.Fatalf("latencies %v, want [2.5ms]", got)
	}
	for _, c2 := range []struct {
		req  *permitpb.ReleaseRequest
		code codes.Code
	}{
		{&permitpb.ReleaseRequest{Id: id ^ 1<<40, Outcome: permitpb.Outcome_SUCCESS}, codes.NotFound},
		{&permitpb.ReleaseRequest{Id: id}, codes.InvalidArgument},
		{&permitpb.ReleaseRequest{Id: id, Outcome: permitpb.Outcome_DROPPED, LatencyMs: ptr(-1.0)}, codes.InvalidArgument},
	} {
		if _, err := c.Release(ctx, c2.req); status.Code(err) != c2.code {
			t.Errorf("Release(%v): %v, want %v", c2.req, err, c2.code)
		}
	}
	for _, c2 := range []struct {
		req  *permitpb.AcquireRequest
		code codes.Code
	}{
		{&permitpb.AcquireRequest{}, codes.InvalidArgument},
		{&permitpb.AcquireRequest{Group: "nope"}, codes.NotFound},
		{&permitpb.AcquireRequest{Group: "jobs", Priority: "9"}, codes.InvalidArgument},
		{&permitpb.AcquireRequest{Group: "jobs", WaitMs: 1 << 31}, codes.InvalidArgument},
	} {
		if _, err := c.Acquire(ctx, c2.req); status.Code(err) != c2.code {
			t.Errorf("Acquire(%v): %v, want %v", c2.req, err, c2.code)
		}
	}
}

func ptr[T any](v T) *T { return &v }
