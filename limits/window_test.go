package limits

import (
	"strings"
	"testing"
	"time"
)

// windowSetter is what the four window limiters share beyond Limiter.
type windowSetter interface {
	Limiter
	SetLimit(n int64) error
	SetWindow(d time.Duration) error
}

// The seeds' weakness of the fixed window: Limit at the very end of one
// window and Limit at the start of the next, all within 20 ms, and how much
// of it each window algorithm lets through. 100 per second in each.
func TestWindowsAcrossABoundary(t *testing.T) {
	w := WindowParams{Limit: 100, Window: time.Second}
	for _, c := range []struct {
		name string
		l    Limiter
		want int
		why  string
	}{
		// Limit in each window, 2·Limit within a few milliseconds.
		{"FixedWindow", must(NewFixedWindow(w)), 200, "2·Limit"},
		// The exact log never lets the fixed window's 2·Limit through.
		{"SlidingLog", must(NewSlidingLog(w)), 100, "Limit"},
		// The weighted estimate lets less than 2·Limit through: the previous
		// window still weighs 99 % at 10 ms in. In the new window, e <= 100
		// µs: 100·(1-e) + cur + 1 <= 100 admits cur+1 <= 100·e/1s = at most
		// 0.01: nothing.
		{"SlidingWindow", must(NewSlidingWindow(w)), 100, "Limit"},
		// Sub-windows bound the burst to Limit·(1+1/Buckets).
		{"SlidingBuckets", must(NewSlidingBuckets(SlidingBucketsParams{Limit: 100, Window: time.Second, Buckets: 10})), 100, "Limit"},
	} {
		admitted := 0
		for _, start := range []time.Duration{990 * ms, 1000 * ms} {
			for i := range 100 {
				if c.l.AllowAt(t0.Add(start+time.Duration(i)*time.Microsecond), 1).Allowed {
					admitted++
				}
			}
		}
		if admitted != c.want {
			t.Errorf("%s admitted %d in 20 ms across the boundary, want %d (%s)", c.name, admitted, c.want, c.why)
		}
	}
}

// SetLimit and SetWindow (shared by the four, in window) publish valid
// parameters and refuse invalid ones with every problem, changing nothing.
func TestWindowSetters(t *testing.T) {
	w := WindowParams{Limit: 10, Window: time.Second}
	for name, l := range map[string]windowSetter{
		"FixedWindow":    must(NewFixedWindow(w)),
		"SlidingLog":     must(NewSlidingLog(w)),
		"SlidingWindow":  must(NewSlidingWindow(w)),
		"SlidingBuckets": must(NewSlidingBuckets(SlidingBucketsParams{Limit: 10, Window: time.Second, Buckets: 4})),
	} {
		for _, bad := range []func() error{
			func() error { return l.SetLimit(0) },
			func() error { return l.SetLimit(-3) },
			func() error { return l.SetWindow(0) },
			func() error { return l.SetWindow(time.Duration(maxSpan) + 1) },
		} {
			err := bad()
			if err == nil || !strings.HasPrefix(err.Error(), "limits: ") {
				t.Fatalf("%s: invalid setting: %v, want a limits: error", name, err)
			}
			if p := l.Policy(); p.Quota != 10 || p.Window != time.Second {
				t.Fatalf("%s: a refused setter changed the policy to %+v", name, p)
			}
		}
		must(0, l.SetLimit(7))
		must(0, l.SetWindow(2*time.Second))
		if p := l.Policy(); p.Quota != 7 || p.Window != 2*time.Second {
			t.Fatalf("%s: policy %+v after SetLimit(7), SetWindow(2s)", name, p)
		}
		if r := l.AllowAt(t0, 8); r.Allowed || r.RetryAfter != InfDuration || r.Limit != 7 {
			t.Fatalf("%s: 8 units under a limit of 7: %+v", name, r)
		}
	}
}

// The three windows configured by WindowParams report them back as set;
// SlidingBuckets reports its own parameters, Buckets resolved.
func TestWindowParams(t *testing.T) {
	w := WindowParams{Limit: 3, Window: time.Minute}
	for name, got := range map[string]WindowParams{
		"FixedWindow":   must(NewFixedWindow(w)).Params(),
		"SlidingLog":    must(NewSlidingLog(w)).Params(),
		"SlidingWindow": must(NewSlidingWindow(w)).Params(),
	} {
		if got != w {
			t.Errorf("%s: Params %+v, want %+v", name, got, w)
		}
	}
	b := must(NewSlidingBuckets(SlidingBucketsParams{Limit: 3, Window: time.Minute}))
	if got, want := b.Params(), (SlidingBucketsParams{Limit: 3, Window: time.Minute, Buckets: DefaultBuckets}); got != want {
		t.Errorf("SlidingBuckets: Params %+v, want %+v", got, want)
	}
	if _, err := NewSlidingBuckets(SlidingBucketsParams{Limit: 0, Window: -1, Buckets: -1}); err == nil ||
		strings.Count(err.Error(), "limits: ") != 3 {
		t.Errorf("three problems reported as %v", err)
	}
}
