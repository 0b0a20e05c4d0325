package client

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// script is a server that answers each request with the next of its
// answers (the last one repeated), and remembers what it was sent.
type script struct {
	mu      sync.Mutex
	answers []func(http.ResponseWriter)
	got     []*http.Request
	bodies  []string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	i := min(len(s.got), len(s.answers)-1)
	s.got = append(s.got, r)
	s.bodies = append(s.bodies, string(body))
	answer := s.answers[i]
	s.mu.Unlock()
	answer(w)
}

func (s *script) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func refuse(status int, reason string, fields ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(fields); i += 2 {
			w.Header().Set(fields[i], fields[i+1])
		}
		if reason != "" {
			w.Header().Set("Sluice-Reason", reason)
		}
		w.WriteHeader(status)
		io.WriteString(w, "refused ("+reason+")\n")
	}
}

func ok(w http.ResponseWriter) { io.WriteString(w, "ok\n") }

func serve(t *testing.T, answers ...func(http.ResponseWriter)) (*script, string) {
	s := &script{answers: answers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func get(t *testing.T, hc *http.Client, ctx context.Context, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// A refusal is retried after its Retry-After (never before it), and the
// retry's answer is what the caller gets.
func TestTransportRetriesAfterRetryAfter(t *testing.T) {
	s, url := serve(t, refuse(503, "concurrency", "Retry-After", "2"), ok)
	clock := newFakeClock()
	var ev events
	c := mustNew(t, Config{Clock: clock, Rand: noDrop, Observe: ev.observe})
	resp, body := get(t, &http.Client{Transport: c.Transport(nil)}, context.Background(), url)
	if resp.StatusCode != 200 || body != "ok\n" || s.requests() != 2 {
		t.Fatalf("got %d %q after %d requests, want 200 after 2", resp.StatusCode, body, s.requests())
	}
	sl := clock.Sleeps()
	if len(sl) != 1 || sl[0] < 2*time.Second || sl[0] > 3*time.Second {
		t.Errorf("waited %v, want one wait of 2 s to 3 s (Retry-After plus up to half)", sl)
	}
	if ev.count(EventRetry) != 1 || ev.count(EventAttempt) != 2 {
		t.Errorf("events %+v", ev.list)
	}
}

// A quota refusal is never retried before its Retry-After, nor before the
// RateLimit field says the quota is back; one that asks for more than
// MaxWait goes back to the caller, body and all.
func TestTransportQuotaRefusals(t *testing.T) {
	t.Run("retry-after", func(t *testing.T) {
		_, url := serve(t, refuse(429, "rate", "Retry-After", "3"), ok)
		clock := newFakeClock()
		c := mustNew(t, Config{Clock: clock, Rand: noDrop})
		resp, _ := get(t, &http.Client{Transport: c.Transport(nil)}, context.Background(), url)
		if sl := clock.Sleeps(); resp.StatusCode != 200 || len(sl) != 1 || sl[0] < 3*time.Second {
			t.Errorf("status %d after waits %v, want 200 after one ≥ 3s", resp.StatusCode, sl)
		}
	})
	t.Run("ratelimit", func(t *testing.T) {
		_, url := serve(t, refuse(429, "rate", "Retry-After", "1",
			"RateLimit-Policy", `"api";q=100;w=1, "day";q=1000;w=86400`,
			"RateLimit", `"api";r=3;t=9, "day";r=0;t=5`), ok)
		clock := newFakeClock()
		c := mustNew(t, Config{Clock: clock, Rand: noDrop})
		resp, _ := get(t, &http.Client{Transport: c.Transport(nil)}, context.Background(), url)
		if sl := clock.Sleeps(); resp.StatusCode != 200 || len(sl) != 1 || sl[0] < 5*time.Second || sl[0] > 7500*time.Millisecond {
			t.Errorf("status %d after waits %v, want 200 after 5 to 7.5s (the exhausted policy's t, plus up to half)", resp.StatusCode, sl)
		}
	})
	t.Run("beyond max wait", func(t *testing.T) {
		s, url := serve(t, refuse(429, "rate", "Retry-After", "60"), ok)
		clock := newFakeClock()
		c := mustNew(t, Config{Clock: clock})
		resp, body := get(t, &http.Client{Transport: c.Transport(nil)}, context.Background(), url)
		if resp.StatusCode != 429 || body != "refused (rate)\n" || s.requests() != 1 || len(clock.Sleeps()) != 0 {
			t.Errorf("got %d %q after %d requests and waits %v, want the 429 itself", resp.StatusCode, body, s.requests(), clock.Sleeps())
		}
	})
}

// A retry is made only within the caller's deadline: an answer whose wait
// ends at or past it goes back at once, counted; one that fits is retried
// no later than halfway from its wait to the deadline, the jitter and the
// backoff cut to that.
func TestTransportRetriesWithinDeadline(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fields      []string      // of the refusal
		left        time.Duration // from the refusal to the deadline
		retried     bool
		least, most time.Duration // the retry's wait
	}{
		{name: "retry-after past it", fields: []string{"Retry-After", "2"}, left: 1500 * time.Millisecond},
		{name: "retry-after at it", fields: []string{"Retry-After", "2"}, left: 2 * time.Second},
		// Retry-After plus its jitter (2.75 s with noDrop) would pass the
		// deadline; Retry-After alone does not: the jitter is cut to half
		// the room.
		{name: "retry-after within it", fields: []string{"Retry-After", "2"}, left: 2500 * time.Millisecond,
			retried: true, least: 2 * time.Second, most: 2250 * time.Millisecond},
		{name: "ratelimit past it", fields: []string{"RateLimit", `"api";r=0;t=3`}, left: 2500 * time.Millisecond},
		// No wait asked for: the backoff (up to 50 ms) within half the 40 ms
		// left.
		{name: "backoff", left: 40 * time.Millisecond, retried: true, most: 20 * time.Millisecond},
		{name: "far deadline", fields: []string{"Retry-After", "2"}, left: time.Hour,
			retried: true, least: 2 * time.Second, most: 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, url := serve(t, refuse(503, "concurrency", tc.fields...), ok)
			clock := newFakeClock()
			var ev events
			c := mustNew(t, Config{Clock: clock, Rand: noDrop, K: math.Inf(1), Observe: ev.observe})
			deadline := time.Now().Add(24 * time.Hour)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			// The deadline is judged on the Client's clock, which the
			// answer finds tc.left before it.
			clock.Set(deadline.Add(-tc.left))
			resp, _ := get(t, &http.Client{Transport: c.Transport(nil)}, ctx, url)
			sl := clock.Sleeps()
			if !tc.retried {
				if resp.StatusCode != 503 || s.requests() != 1 || len(sl) != 0 || ev.count(EventDeadline) != 1 {
					t.Fatalf("got %d after %d requests, waits %v, %d deadline events; want the 503 at once, one deadline event",
						resp.StatusCode, s.requests(), sl, ev.count(EventDeadline))
				}
				return
			}
			if resp.StatusCode != 200 || s.requests() != 2 || len(sl) != 1 || ev.count(EventDeadline) != 0 {
				t.Fatalf("got %d after %d requests, waits %v, %d deadline events; want 200 after one retry",
					resp.StatusCode, s.requests(), sl, ev.count(EventDeadline))
			}
			if sl[0] < tc.least || sl[0] > tc.most {
				t.Errorf("waited %v, want %v to %v", sl[0], tc.least, tc.most)
			}
		})
	}
}

// Retries stop at MaxRetries, and the caller gets the last refusal.
func TestTransportMaxRetries(t *testing.T) {
	s, url := serve(t, refuse(503, "concurrency", "Retry-After", "1"))
	c := mustNew(t, Config{Clock: newFakeClock(), MaxRetries: 3, K: math.Inf(1)})
	resp, body := get(t, &http.Client{Transport: c.Transport(nil)}, context.Background(), url)
	if resp.StatusCode != 503 || body != "refused (concurrency)\n" || s.requests() != 4 {
		t.Errorf("got %d %q after %d requests, want the 503 after 4", resp.StatusCode, body, s.requests())
	}
}

// Only idempotent requests are retried; a POST with an Idempotency-Key and
// a body that can be read again is, with its body sent whole each time.
func TestTransportRetriesOnlyIdempotent(t *testing.T) {
	c := mustNew(t, Config{Clock: newFakeClock(), Rand: noDrop, K: math.Inf(1)})
	hc := &http.Client{Transport: c.Transport(nil)}
	do := func(req *http.Request) int {
		t.Helper()
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	s, url := serve(t, refuse(503, "concurrency", "Retry-After", "1"), ok)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("payload"))
	if code := do(req); code != 503 || s.requests() != 1 {
		t.Errorf("POST: got %d after %d requests, want the 503 unretried", code, s.requests())
	}
	s, url = serve(t, refuse(503, "concurrency", "Retry-After", "1"), ok)
	req, _ = http.NewRequest(http.MethodPost, url, strings.NewReader("payload"))
	req.Header.Set("Idempotency-Key", "k1")
	if code := do(req); code != 200 || s.requests() != 2 || s.bodies[0] != "payload" || s.bodies[1] != "payload" {
		t.Errorf("POST with Idempotency-Key: got %d after %d requests, bodies %q", code, s.requests(), s.bodies)
	}
	// A body that cannot be read again is not retried.
	s, url = serve(t, refuse(503, "concurrency", "Retry-After", "1"), ok)
	req, _ = http.NewRequest(http.MethodPut, url, io.NopCloser(strings.NewReader("x")))
	if code := do(req); code != 503 || s.requests() != 1 {
		t.Errorf("PUT with a one-shot body: got %d after %d requests", code, s.requests())
	}
}

// The retry budget: of 1,000 requests all refused once, at most 10 % plus
// the floor are retried, the rest get their refusal.
func TestTransportRetryBudget(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 1 { // every other answer a refusal: the throttle stays quiet (K = 2)
			refuse(503, "concurrency", "Retry-After", "1")(w)
			return
		}
		ok(w)
	}))
	defer srv.Close()
	clock := newFakeClock()
	var ev events
	c := mustNew(t, Config{Clock: clock, Observe: ev.observe, MaxRetries: 1, BudgetWindow: time.Hour, K: math.Inf(1)})
	hc := &http.Client{Transport: c.Transport(nil)}
	for range 1000 {
		resp, _ := get(t, hc, context.Background(), srv.URL)
		_ = resp
	}
	retries, exhausted := ev.count(EventRetry), ev.count(EventBudgetExhausted)
	if want := 1000/10 + DefaultRetryFloor; retries > want || retries < want-1 {
		t.Errorf("%d retries, want 10 %% of the requests plus the floor, %d", retries, want)
	}
	if exhausted == 0 || n.Load() != int64(1000+retries) {
		t.Errorf("%d budget refusals, %d attempts for 1000 requests and %d retries", exhausted, n.Load(), retries)
	}
}

// A dropped request never leaves the process: the caller gets a 503 that
// says so, its body is closed, and the drop is counted.
func TestTransportDrop(t *testing.T) {
	s, url := serve(t, refuse(503, "concurrency"))
	var ev events
	c := mustNew(t, Config{Clock: newFakeClock(), Rand: func() float64 { return 0 }, MaxRetries: -1, Observe: ev.observe})
	hc := &http.Client{Transport: c.Transport(nil)}
	get(t, hc, context.Background(), url) // one refusal: p = 1/2
	body := &closeCounter{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest(http.MethodPut, url, body)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !Dropped(resp) || !strings.Contains(string(b), "dropped locally") {
		t.Errorf("got %d %v %q, want the synthetic 503", resp.StatusCode, resp.Header, b)
	}
	if s.requests() != 1 || body.closed.Load() == 0 || ev.count(EventDropped) != 1 {
		t.Errorf("server saw %d requests, body closed %d times, %d drop events", s.requests(), body.closed.Load(), ev.count(EventDropped))
	}
	first, _ := http.Get(url) // not through the Transport
	first.Body.Close()
	if Dropped(first) {
		t.Error("a real refusal reads as dropped")
	}
}

type closeCounter struct {
	io.Reader
	closed atomic.Int64
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// Tags go on every request under the configured names, the request's own
// headers win, and the caller's request is never modified.
func TestTransportTags(t *testing.T) {
	s, url := serve(t, ok)
	c := mustNew(t, Config{Clock: newFakeClock(), Tags: Tags{Tenant: "acme", Priority: PriorityDefault},
		Headers: Headers{Tenant: "x-api-key"}})
	hc := &http.Client{Transport: c.Transport(nil)}
	ctx := WithTags(context.Background(), Tags{Priority: PrioritySheddable, Cost: 7})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(req.Header) != 0 {
		t.Errorf("the caller's request was modified: %v", req.Header)
	}
	req2, _ := http.NewRequest(http.MethodGet, url, nil)
	req2.Header.Set("X-Api-Key", "own")
	resp, err = hc.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	g := s.got
	if h := g[0].Header; h.Get("X-Api-Key") != "acme" || h.Get("X-Priority") != "sheddable" || h.Get("X-Cost") != "7" {
		t.Errorf("first request's headers %v", h)
	}
	if h := g[1].Header; h.Get("X-Api-Key") != "own" || h.Get("X-Priority") != "default" || h.Get("X-Cost") != "" {
		t.Errorf("second request's headers %v", h)
	}
}

// A failure (connection refused) of an idempotent request is retried within
// the budget and counted as not accepted.
func TestTransportFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { ok(w) }))
	url := srv.URL
	srv.Close() // nothing listens there now
	c := mustNew(t, Config{Clock: newFakeClock(), MaxRetries: 2, K: math.Inf(1)})
	_, err := (&http.Client{Transport: c.Transport(nil)}).Get(url)
	if err == nil {
		t.Fatal("a request to a closed port succeeded")
	}
	host := strings.TrimPrefix(url, "http://")
	if s := c.Stats(host); s.Requests != 3 || s.Accepts != 0 || s.BudgetRetries != 2 {
		t.Errorf("stats %+v, want 3 attempts not accepted, 2 retries", s)
	}
}

// A wait cut short by the caller's context gives back the refusal it was
// waiting to retry, body and all.
func TestTransportWaitCancelled(t *testing.T) {
	_, url := serve(t, refuse(503, "concurrency", "Retry-After", "2"), ok)
	ctx, cancel := context.WithCancel(context.Background())
	c := mustNew(t, Config{Clock: cancelClock{fakeClock: newFakeClock(), cancel: cancel}, Rand: noDrop})
	resp, body := get(t, &http.Client{Transport: c.Transport(nil)}, ctx, url)
	if resp.StatusCode != 503 || body != "refused (concurrency)\n" {
		t.Errorf("got %d %q, want the refusal", resp.StatusCode, body)
	}
}

// cancelClock cancels its context when asked to sleep.
type cancelClock struct {
	*fakeClock
	cancel func()
}

func (c cancelClock) Sleep(ctx context.Context, d time.Duration) error {
	c.cancel()
	return ctx.Err()
}

func TestResultOf(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		status int
		h      http.Header
		want   Result
	}{
		{200, nil, Result{}},
		{500, http.Header{"Sluice-Reason": {"rate"}}, Result{}},
		{503, http.Header{"Retry-After": {"2"}, "Sluice-Reason": {"queue_full"}}, Result{Refused: true, Reason: "queue_full", RetryAfter: 2 * time.Second}},
		{503, http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, Result{Refused: true, RetryAfter: 90 * time.Second}},
		{429, http.Header{"Retry-After": {"soon"}}, Result{Refused: true, Quota: true}},
		{429, http.Header{"Ratelimit": {`"a,;r=0";r=0;t=4`}}, Result{Refused: true, Quota: true, RetryAfter: 4 * time.Second}},
		{429, http.Header{"Ratelimit": {`"a";r=1;t=4`, `"b";t=9;r=0`}}, Result{Refused: true, Quota: true, RetryAfter: 9 * time.Second}},
		{429, http.Header{"Ratelimit": {`"a";r=0;t=-4`, `garbage`}}, Result{Refused: true, Quota: true}},
	} {
		got := ResultOf(&http.Response{StatusCode: tc.status, Header: tc.h}, now)
		if got != tc.want {
			t.Errorf("ResultOf(%d, %v) = %+v, want %+v", tc.status, tc.h, got, tc.want)
		}
	}
}

func TestIdempotent(t *testing.T) {
	for _, tc := range []struct {
		method string
		body   io.Reader
		key    string
		want   bool
	}{
		{http.MethodGet, nil, "", true},
		{http.MethodDelete, nil, "", true},
		{http.MethodPut, bytes.NewReader([]byte("x")), "", true},
		{http.MethodPost, nil, "", false},
		{http.MethodPatch, nil, "X-Idempotency-Key", true},
		{http.MethodPost, bytes.NewReader([]byte("x")), "Idempotency-Key", true},
	} {
		req, _ := http.NewRequest(tc.method, "http://x/", tc.body)
		if tc.key != "" {
			req.Header.Set(tc.key, "1")
		}
		if got := Idempotent(req); got != tc.want {
			t.Errorf("Idempotent(%s, key %q) = %v", tc.method, tc.key, got)
		}
	}
}
