package load

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
)

// fakeClock is virtual time: SleepUntil jumps straight to its instant.
// Every instant it was asked to sleep until is recorded.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, t)
	if t.After(c.now) {
		c.now = t
	}
	return ctx.Err()
}

// roundTrip adapts a function to http.RoundTripper.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func respond(code int, hdr ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader("ok"))}
}

// run runs a generator for p to its end and checks its totals add up.
func run(t *testing.T, p Params) Result {
	t.Helper()
	g, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, "totals", res.Totals.Counts)
	return res
}

func checkCounts(t *testing.T, what string, c Counts) {
	t.Helper()
	if c.OK+c.Rejected+c.Errors != c.Offered || c.Good > c.OK || c.Sent > c.Offered {
		t.Errorf("%s: inconsistent counts %+v", what, c)
	}
}

// TestGeneratorFiresAtIntendedInstants: the dispatcher sleeps until each
// arrival of the seeded Poisson process, in order, and the per-second
// offered counts are the arrivals of each second.
func TestGeneratorFiresAtIntendedInstants(t *testing.T) {
	clock := newFakeClock()
	sched := Schedule{{For: 2 * sec, From: 200, To: 200}, {For: sec, From: 200, To: 600}}
	g, err := New(Params{
		Target: "http://lab.invalid/work", Schedule: sched, Seed: 42, Clock: clock,
		Transport: roundTrip(func(*http.Request) (*http.Response, error) { return respond(200), nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	res, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := NewArrivals(sched, rand.New(rand.NewPCG(42, 42^0x9e3779b97f4a7c15)))
	perSecond := make([]int64, 3)
	i := 0
	for ; ; i++ {
		at, ok := want.Next()
		if !ok {
			break
		}
		perSecond[at/time.Second]++
		if i >= len(clock.sleeps) || !clock.sleeps[i].Equal(start.Add(at)) {
			t.Fatalf("sleep %d: got %v, want %v", i, clock.sleeps[i].Sub(start), at)
		}
	}
	if len(clock.sleeps) != i || res.Totals.Offered != int64(i) || res.Totals.OK != int64(i) || res.Totals.Attempts != int64(i) {
		t.Fatalf("%d arrivals, %d sleeps, totals %+v", i, len(clock.sleeps), res.Totals)
	}
	if len(res.Seconds) != 3 {
		t.Fatalf("%d seconds, want 3", len(res.Seconds))
	}
	for s, n := range perSecond {
		if res.Seconds[s].Offered != n || res.Seconds[s].OK != n {
			t.Errorf("second %d: %+v, want %d offered", s, res.Seconds[s], n)
		}
	}
	if len(res.Phases) != 2 || res.Phases[0].Offered != perSecond[0]+perSecond[1] || res.Phases[1].Offered != perSecond[2] ||
		res.Phases[1].Start != 2*sec || res.Phases[1].Latency.Count != perSecond[2] {
		t.Errorf("phases %+v", res.Phases)
	}
	if res.Seconds[2].Rate != 400 || res.Seconds[0].Rate != 200 {
		t.Errorf("scheduled rates %v %v, want 200 and 400 (ramp midpoint)", res.Seconds[0].Rate, res.Seconds[2].Rate)
	}
	checkCounts(t, "totals", res.Totals.Counts)
}

// TestGeneratorOverflowIsCountedNotDelayed: with every slot held by a
// request that does not answer, later arrivals fail as overflow at once.
func TestGeneratorOverflowIsCountedNotDelayed(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int64
	g, err := New(Params{
		Target: "http://lab.invalid/", Schedule: Schedule{{For: sec, From: 50, To: 50}}, Seed: 1,
		Clock: newFakeClock(), MaxInflight: 3,
		Transport: roundTrip(func(*http.Request) (*http.Response, error) {
			if arrived.Add(1) == 3 {
				close(release)
			}
			<-release
			return respond(200), nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tot := res.Totals
	if tot.Offered < 20 || tot.OK+tot.ErrorsByKind[KindOverflow] != tot.Offered || tot.Sent != tot.OK || tot.Errors != tot.ErrorsByKind[KindOverflow] {
		t.Fatalf("totals %+v", tot)
	}
	if tot.OK < 3 {
		t.Fatalf("only %d requests went out", tot.OK)
	}
	checkCounts(t, "totals", tot.Counts)
}

// TestGeneratorRetries: against a server that always answers 503 with a
// Retry-After, every request makes all its tries, each counted; and no
// retry starts after the run's end (schedule + timeout). Virtual time.
func TestGeneratorRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retry     Retry
		header    string
		triesEach int64
	}{
		{"backoff", Retry{Attempts: 3, Mode: Backoff}, "2", 4},
		{"beyond-the-end", Retry{Attempts: 3, Mode: RetryAfter}, "60", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tries atomic.Int64
			clock := newFakeClock()
			res := run(t, Params{
				Target: "http://lab.invalid/", Schedule: Schedule{{For: sec, From: 20, To: 20}}, Seed: 3,
				Clock: clock, Retry: tc.retry, Timeout: 10 * sec,
				Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
					tries.Add(1)
					return respond(503, "Retry-After", tc.header), nil
				}),
			})
			tot := res.Totals
			if tot.Offered < 5 || tot.Rejected != tot.Offered || tot.Attempts != tc.triesEach*tot.Offered ||
				tot.Attempts != tries.Load() || tot.RejectedTries != tot.Attempts || tot.RejectsByStatus[503] != tot.Offered {
				t.Fatalf("totals %+v after %d tries", tot, tries.Load())
			}
			var by503 int64
			for _, sec := range res.Seconds {
				by503 += sec.Reasons["503"]
			}
			if by503 != tot.Rejected {
				t.Errorf("seconds count %d rejections with reason \"503\" (no Sluice-Reason), want %d", by503, tot.Rejected)
			}
			if tot.RejectLatency.Count != tot.RejectedTries {
				t.Errorf("reject latency count %d, rejected tries %d", tot.RejectLatency.Count, tot.RejectedTries)
			}
		})
	}
}

// TestGeneratorDeadline: with a caller's deadline, no retry starts at or
// after it, in the generator's own retries as through package client (a
// Retry-After of 5 s past a 2 s deadline: one try of each request sent,
// those package client drops not sent at all); retries within it are
// made. Virtual time.
func TestGeneratorDeadline(t *testing.T) {
	for _, tc := range []struct {
		mode      RetryMode
		deadline  time.Duration
		triesEach int64
	}{
		{Immediate, 10 * sec, 4},
		{RetryAfter, 2 * sec, 1},
		{Client, 2 * sec, 1},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.mode, tc.deadline), func(t *testing.T) {
			var tries atomic.Int64
			res := run(t, Params{
				Target: "http://lab.invalid/", Schedule: Schedule{{For: sec, From: 20, To: 20}}, Seed: 3,
				// From the wall clock's now: a context's deadline is on it.
				Clock: &fakeClock{now: time.Now()}, Retry: Retry{Attempts: 3, Mode: tc.mode}, Timeout: 100 * sec, Deadline: tc.deadline,
				Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
					tries.Add(1)
					return respond(503, "Retry-After", "5", "Sluice-Reason", "concurrency"), nil
				}),
			})
			tot := res.Totals
			if tot.Sent < 1 || tot.Offered < 5 || tot.Rejected != tot.Offered || tot.Attempts != tc.triesEach*tot.Sent || tot.Attempts != tries.Load() {
				t.Fatalf("totals %+v after %d tries, want %d tries of each request sent", tot, tries.Load(), tc.triesEach)
			}
		})
	}
}

// TestGeneratorThroughClient: in Retry mode Client the requests go through
// package client: the tries that leave are counted as tries (those it
// drops are not, and are final rejections of reason client-drop, never
// sent), retries stay within its budget, and none comes before its
// Retry-After.
func TestGeneratorThroughClient(t *testing.T) {
	var tries atomic.Int64
	clock := newFakeClock()
	res := run(t, Params{
		Target: "http://lab.invalid/", Schedule: Schedule{{For: 10 * sec, From: 50, To: 50}}, Seed: 3,
		Clock: clock, Retry: Retry{Attempts: 3, Mode: Client}, Timeout: 10 * sec,
		Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			// A backend that accepts every other try of its first 200, then
			// refuses everything (counted in tries, not time: the client's
			// waits move the fake clock).
			if n := tries.Add(1); n <= 200 && n%2 == 0 {
				return respond(200), nil
			}
			return respond(503, "Retry-After", "1", "Sluice-Reason", "concurrency"), nil
		}),
	})
	tot := res.Totals
	var drops, concurrency int64
	for _, s := range res.Seconds {
		drops += s.Reasons[dropReason]
		concurrency += s.Reasons["concurrency"]
	}
	if tot.Attempts != tries.Load() || tot.Offered < 400 {
		t.Fatalf("totals %+v after %d tries", tot, tries.Load())
	}
	// Every first try that left, and the retries of a budget of 10 % plus
	// 10 a window of 10 s.
	if maxTries := tot.Sent + tot.Sent/10 + 2*client.DefaultRetryFloor; tot.Attempts <= tot.Sent || tot.Attempts > maxTries {
		t.Errorf("%d tries for %d requests sent, want more (some retries) but at most %d", tot.Attempts, tot.Sent, maxTries)
	}
	if drops == 0 || tot.Offered-tot.Sent != drops || concurrency == 0 {
		t.Errorf("%d offered, %d sent, %d dropped locally, %d refused", tot.Offered, tot.Sent, drops, concurrency)
	}
}

// TestGeneratorHonoursRetryAfter: a client in RetryAfter mode, told to
// come back in 1 s, does not retry before. Real clock and loopback server:
// arrivals fall in the first 300 ms, so second 0 holds only first tries
// and every retry comes later.
func TestGeneratorHonoursRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	g, err := New(Params{
		Target: srv.URL, Schedule: Schedule{{For: 300 * time.Millisecond, From: 100, To: 100}}, Seed: 5,
		Retry: Retry{Attempts: 1, Mode: RetryAfter},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tot := res.Totals
	if tot.Offered < 10 || tot.Rejected != tot.Offered || tot.Attempts != 2*tot.Offered || len(res.Seconds) < 2 {
		t.Fatalf("totals %+v, %d seconds", tot, len(res.Seconds))
	}
	var later int64
	for _, s := range res.Seconds[1:] {
		later += s.Attempts
	}
	if res.Seconds[0].Attempts != tot.Offered || later != tot.Offered {
		t.Fatalf("tries in second 0: %d, later: %d; want %d each", res.Seconds[0].Attempts, later, tot.Offered)
	}
}

func TestRetryWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ra := Retry{Attempts: 3, Mode: RetryAfter, Backoff: 100 * time.Millisecond}
	bo := Retry{Attempts: 3, Mode: Backoff, Backoff: 100 * time.Millisecond}
	for _, tc := range []struct {
		r      Retry
		n      int
		header string
		u      float64
		want   time.Duration
	}{
		{ra, 1, "3", 0.5, 3 * time.Second},
		{ra, 1, "Thu, 01 Jan 2026 12:00:05 GMT", 0.5, 5 * time.Second},
		{ra, 1, "Thu, 01 Jan 2026 11:00:00 GMT", 0.5, 0}, // in the past
		{ra, 2, "", 0.5, 100 * time.Millisecond},         // absent: backoff 200ms · 0.5
		{ra, 1, "soon", 0.5, 50 * time.Millisecond},
		{bo, 1, "3", 0.5, 50 * time.Millisecond}, // ignores Retry-After
		{bo, 3, "3", 0.25, 100 * time.Millisecond},
		{Retry{Attempts: 1}, 1, "", 0.5, 5 * time.Millisecond}, // default base 10ms
		{Retry{Attempts: 3, Mode: Immediate, Backoff: time.Second}, 2, "3", 0.5, 0},
	} {
		if got := tc.r.wait(tc.n, tc.header, now, tc.u); got != tc.want {
			t.Errorf("%s wait(%d, %q, u=%v) = %v, want %v", tc.r.Mode, tc.n, tc.header, tc.u, got, tc.want)
		}
	}
}

// TestGeneratorClassesOverHTTP sends a tenant and priority mix to a real
// loopback server that refuses one tenant, and checks the headers arrive
// and each class is counted on its own.
func TestGeneratorClassesOverHTTP(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("X-Tenant")+"/"+r.Header.Get("X-Priority")]++
		mu.Unlock()
		if r.Header.Get("X-Tenant") == "greedy" {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Sluice-Reason", "rate")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	g, err := New(Params{
		Target: srv.URL, Schedule: Schedule{{For: 400 * time.Millisecond, From: 500, To: 500}}, Seed: 9,
		Tenants:    Mix{{Name: "a", Weight: 1}, {Name: "greedy", Weight: 3}},
		Priorities: Mix{{Name: "critical", Weight: 1}, {Name: "sheddable", Weight: 4}},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a, greedy := res.Tenants[0], res.Tenants[1]
	if a.Name != "a" || a.Rejected != 0 || a.OK != a.Offered || greedy.OK != 0 || greedy.Rejected != greedy.Offered {
		t.Fatalf("tenants %+v", res.Tenants)
	}
	if a.Offered+greedy.Offered != res.Totals.Offered || res.Totals.Offered < 100 {
		t.Fatalf("tenants do not add up to %d", res.Totals.Offered)
	}
	if res.Totals.RejectsByStatus[429] != greedy.Offered || greedy.Fraction != 0.75 {
		t.Fatalf("rejects %v, greedy fraction %v", res.Totals.RejectsByStatus, greedy.Fraction)
	}
	var byReason int64
	for _, sec := range res.Seconds {
		if sec.Reasons["rate"] != sec.Rejected || len(sec.Reasons) > 1 {
			t.Errorf("second %d: reasons %v, %d rejected", sec.T, sec.Reasons, sec.Rejected)
		}
		byReason += sec.Reasons["rate"]
	}
	if byReason != greedy.Offered {
		t.Errorf("seconds count %d rejections by reason, want %d", byReason, greedy.Offered)
	}
	var prio int64
	for _, c := range res.Priorities {
		checkCounts(t, c.Name, c.Counts)
		prio += c.Offered
	}
	mu.Lock()
	defer mu.Unlock()
	var total int64
	for k, n := range seen {
		if !strings.Contains(k, "/critical") && !strings.Contains(k, "/sheddable") {
			t.Errorf("request with headers %q", k)
		}
		total += n
	}
	if prio != res.Totals.Offered || total != res.Totals.Attempts {
		t.Fatalf("priorities %d, server saw %d, attempts %d", prio, total, res.Totals.Attempts)
	}
}
