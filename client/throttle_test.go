package client

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestDropProbability(t *testing.T) {
	for _, tc := range []struct {
		requests, accepts int64
		k, want           float64
	}{
		{0, 0, 2, 0},
		{100, 100, 2, 0},
		{100, 50, 2, 0},          // K·accepts = requests: nothing dropped yet
		{100, 25, 2, 50.0 / 101}, // half of what K allows
		{100, 0, 2, 100.0 / 101}, // nothing accepted: all but a trickle
		{1000, 100, 1.5, 850.0 / 1001},
	} {
		if got := dropProbability(tc.requests, tc.accepts, tc.k); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("dropProbability(%d, %d, %v) = %v, want %v", tc.requests, tc.accepts, tc.k, got, tc.want)
		}
	}
}

// A backend that accepts µ requests a second and refuses the rest, offered
// 10µ: through the throttle, what reaches it settles near K·µ (the book's
// point: the client sheds what the backend would refuse), and every
// request dropped is told apart.
func TestThrottleSettlesNearKTimesAccepts(t *testing.T) {
	for _, k := range []float64{2, 1.5} {
		clock := newFakeClock()
		var ev events
		c := mustNew(t, Config{K: k, Clock: clock, Rand: seeded(1), MaxRetries: -1, Observe: ev.observe})
		const mu, offered = 50, 500 // per second
		var sent, accepted, dropped int
		var lastMinuteSent int
		for sec := range 300 {
			capacity := mu
			for range offered {
				err := c.Do(context.Background(), "b", true, func(context.Context) (Result, error) {
					sent++
					if sec >= 240 {
						lastMinuteSent++
					}
					if capacity > 0 {
						capacity--
						accepted++
						return Result{}, nil
					}
					return Result{Refused: true, Reason: "concurrency"}, nil
				})
				if errors.Is(err, ErrDropped) {
					dropped++
					var d *DropError
					if !errors.As(err, &d) || d.Backend != "b" || d.P <= 0 || d.P >= 1 {
						t.Fatalf("drop error %#v", err)
					}
				}
				clock.Advance(time.Second / offered)
			}
		}
		perSec := float64(lastMinuteSent) / 60
		if perSec < 0.9*k*mu || perSec > 1.1*k*mu {
			t.Errorf("K=%v: the backend was sent %.1f req/s over the last minute, want K·µ = %v ± 10 %%", k, perSec, k*mu)
		}
		if got := ev.count(EventDropped); got != dropped || dropped != 300*offered-sent {
			t.Errorf("K=%v: %d drop events, %d drop errors, %d requests not sent", k, got, dropped, 300*offered-sent)
		}
	}
}

// Once the backend accepts again, the drops fade: a request let through is
// accepted and each accept lets K more through, so the share sent grows
// about e-fold every 0.63 window (K = 2) and the drops are gone within
// three windows.
func TestThrottleRecovers(t *testing.T) {
	clock := newFakeClock()
	c := mustNew(t, Config{Clock: clock, Rand: seeded(2), MaxRetries: -1})
	refuse := true
	try := func() error {
		return c.Do(context.Background(), "b", false, func(context.Context) (Result, error) {
			return Result{Refused: refuse}, nil
		})
	}
	for range 1000 {
		_ = try()
		clock.Advance(10 * time.Millisecond)
	}
	if p := c.Stats("b").DropProbability; p < 0.9 {
		t.Fatalf("after 1000 refusals the drop probability is %v, want > 0.9", p)
	}
	refuse = false
	start, prev := clock.Now(), 1.0
	for clock.Now().Sub(start) < 3*DefaultWindow {
		for range 200 { // a second at 200/s
			_ = try()
			clock.Advance(5 * time.Millisecond)
		}
		p := c.Stats("b").DropProbability
		if p > prev+0.05 {
			t.Fatalf("%v after the backend accepts again the drop probability rose from %.3f to %.3f", clock.Now().Sub(start), prev, p)
		}
		if p < 0.5 && prev >= 0.5 {
			t.Logf("half sent %v after the backend accepts again", clock.Now().Sub(start))
		}
		if prev = p; p == 0 {
			t.Logf("no drops %v after the backend accepts again", clock.Now().Sub(start))
			return
		}
	}
	t.Errorf("three windows after the backend accepts again the drop probability is %.3f, want 0", prev)
}

// The window forgets: counts older than Window leave it.
func TestWindowSlides(t *testing.T) {
	clock := newFakeClock()
	c := mustNew(t, Config{Clock: clock, Window: time.Minute, MaxRetries: -1})
	for range 10 {
		_ = c.Do(context.Background(), "b", false, func(context.Context) (Result, error) { return Result{Refused: true}, nil })
	}
	if s := c.Stats("b"); s.Requests != 10 || s.Accepts != 0 {
		t.Fatalf("stats %+v, want 10 requests", s)
	}
	clock.Advance(30 * time.Second)
	if s := c.Stats("b"); s.Requests != 10 {
		t.Fatalf("half a window later: %+v, want the 10 still in", s)
	}
	clock.Advance(31 * time.Second)
	if s := c.Stats("b"); s.Requests != 0 || s.DropProbability != 0 {
		t.Errorf("a window later: %+v, want nothing", s)
	}
	// A clock far ahead (an idle backend) clears everything at once.
	for range 5 {
		_ = c.Do(context.Background(), "b", false, func(context.Context) (Result, error) { return Result{}, nil })
	}
	clock.Advance(24 * time.Hour)
	if s := c.Stats("b"); s.Requests != 0 {
		t.Errorf("a day later: %+v", s)
	}
}

// Backends are kept apart: one refusing says nothing of another.
func TestBackendsApart(t *testing.T) {
	clock := newFakeClock()
	c := mustNew(t, Config{Clock: clock, Rand: seeded(3), MaxRetries: -1, MaxBackends: 2})
	for range 200 {
		_ = c.Do(context.Background(), "bad", false, func(context.Context) (Result, error) { return Result{Refused: true}, nil })
		_ = c.Do(context.Background(), "good", false, func(context.Context) (Result, error) { return Result{}, nil })
	}
	if p := c.Stats("bad").DropProbability; p < 0.5 {
		t.Errorf("bad: drop probability %v", p)
	}
	if s := c.Stats("good"); s.DropProbability != 0 || s.Accepts == 0 {
		t.Errorf("good: %+v", s)
	}
	// Beyond MaxBackends, the others share one state: bounded memory.
	_ = c.Do(context.Background(), "third", false, func(context.Context) (Result, error) { return Result{}, nil })
	if s := c.Stats("third"); s != (Stats{}) {
		t.Errorf("a backend beyond MaxBackends has its own stats: %+v", s)
	}
}

// A cancelled attempt is not counted; a failed one is not accepted.
func TestOutcomes(t *testing.T) {
	clock := newFakeClock()
	c := mustNew(t, Config{Clock: clock, MaxRetries: -1, Rand: noDrop})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = c.Do(ctx, "b", false, func(ctx context.Context) (Result, error) { return Result{}, ctx.Err() })
	if s := c.Stats("b"); s.Requests != 0 {
		t.Errorf("a cancelled attempt counted: %+v", s)
	}
	_ = c.Do(context.Background(), "b", false, func(context.Context) (Result, error) { return Result{Failed: true}, errors.New("connection refused") })
	_ = c.Do(context.Background(), "b", false, func(context.Context) (Result, error) { return Result{}, nil })
	if s := c.Stats("b"); s.Requests != 2 || s.Accepts != 1 {
		t.Errorf("a failure and an accept: %+v, want 2 requests, 1 accept", s)
	}
}

func TestThrottleOff(t *testing.T) {
	c := mustNew(t, Config{K: math.Inf(1), Clock: newFakeClock(), MaxRetries: -1})
	for range 1000 {
		err := c.Do(context.Background(), "b", false, func(context.Context) (Result, error) { return Result{Refused: true}, nil })
		if errors.Is(err, ErrDropped) {
			t.Fatal("K = +Inf dropped a request")
		}
	}
}

func TestConfigProblems(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{K: 0.5}, "K must be at least 1"},
		{Config{K: math.NaN()}, "K must be at least 1"},
		{Config{Window: time.Millisecond}, "at least 1s"},
		{Config{RetryRatio: -1}, "RetryRatio"},
		{Config{Backoff: -1}, "must not be negative"},
		{Config{MaxBackends: -1}, "MaxBackends"},
		{Config{Headers: Headers{Tenant: "X Tenant"}}, "not a valid field name"},
		{Config{Headers: Headers{Tenant: "X-Priority"}}, "must differ"},
		{Config{Tags: Tags{Priority: "high"}}, `priority "high"`},
		{Config{Tags: Tags{Tenant: "a\r\nb"}}, "not a valid header value"},
		{Config{Tags: Tags{Cost: -1}}, "cost must not be negative"},
	} {
		_, err := New(tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error with %q", tc.c, err, tc.want)
		}
	}
}
