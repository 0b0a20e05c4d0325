package limits

import (
	"testing"
	"time"
)

// AdjustAt charges beyond the room (a debt that delays the next admission)
// and refunds at most what is owed, alike for a bucket and a key of Keyed
// over one; what cannot take a correction says so and changes nothing.
func TestAdjustAt(t *testing.T) {
	now := time.Unix(1000, 0)
	tb := func() *TokenBucket {
		b, err := NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 10})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	keyed, err := NewKeyed(tb(), KeyedParams{MaxKeys: 10})
	if err != nil {
		t.Fatal(err)
	}
	b := tb()
	for _, tc := range []struct {
		name   string
		allow  func(time.Time, int64) Result
		adjust func(time.Time, int64) bool
	}{
		{"token bucket", b.AllowAt, b.AdjustAt},
		{"keyed", func(at time.Time, n int64) Result { return keyed.AllowAt("k", at, n) },
			func(at time.Time, n int64) bool { return keyed.AdjustAt("k", at, n) }},
	} {
		if !tc.allow(now, 1).Allowed || !tc.adjust(now, 29) { // 30 spent of 10: owes 20
			t.Fatalf("%s: the first request, or its correction, refused", tc.name)
		}
		if r := tc.allow(now.Add(2050*time.Millisecond), 1); r.Allowed {
			t.Errorf("%s: admitted at 2.05s, while it owes until 2s and a unit takes 0.1s more", tc.name)
		}
		if r := tc.allow(now.Add(2100*time.Millisecond), 1); !r.Allowed {
			t.Errorf("%s: refused at 2.1s, when a unit is back: %+v", tc.name, r)
		}
		// A refund of far more than is owed leaves the bucket full, no more.
		if !tc.adjust(now.Add(2100*time.Millisecond), -1000) {
			t.Fatalf("%s: refund refused", tc.name)
		}
		if r := tc.allow(now.Add(2100*time.Millisecond), 0); r.Remaining != 10 {
			t.Errorf("%s: after the refund %d remaining, want the burst, 10", tc.name, r.Remaining)
		}
	}
	warm, _ := NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 10, Warmup: time.Second})
	if warm.AdjustAt(now, 5) {
		t.Error("a warming bucket took a correction")
	}
	lb, _ := NewLeakyBucket(LeakyBucketParams{Rate: 10, Capacity: 10})
	if !lb.AdjustAt(now, 10) || lb.AllowAt(now, 1).Allowed {
		t.Error("a leaky bucket filled by a correction admitted more")
	}
	for _, a := range Algorithms() {
		l, err := a.New(Spec{Rate: 10, Burst: 10, Limit: 10, Window: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, isAdj := l.(Adjuster); a.Adjusts != isAdj {
			t.Errorf("%s: Adjusts %v, but its limiter an Adjuster: %v", a.Name, a.Adjusts, isAdj)
		}
	}
}

// A window's correction counts what fits in the window and owes the rest,
// which the next windows pay before anything more is admitted; a refund
// cancels the debt first, then gives back what the window counts, never
// more; a key that owes is held (not idle) until it has paid. Alike for
// every window algorithm, plain and keyed.
func TestWindowAdjustAt(t *testing.T) {
	now := time.Unix(1000, 0) // the start of a window of 1s
	for _, a := range Algorithms() {
		if a.Shape != ShapeWindow {
			continue
		}
		mk := func() Limiter {
			l, err := a.New(Spec{Limit: 10, Window: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		keyed, err := NewKeyed(mk(), KeyedParams{MaxKeys: 10})
		if err != nil {
			t.Fatal(err)
		}
		plain := mk()
		for _, tc := range []struct {
			name   string
			allow  func(time.Time, int64) Result
			adjust func(time.Time, int64) bool
		}{
			{a.Name, plain.AllowAt, plain.(Adjuster).AdjustAt},
			{a.Name + " keyed", func(at time.Time, n int64) Result { return keyed.AllowAt("k", at, n) },
				func(at time.Time, n int64) bool { return keyed.AdjustAt("k", at, n) }},
		} {
			at := func(ms int) time.Time { return now.Add(time.Duration(ms) * time.Millisecond) }
			if !tc.allow(at(0), 1).Allowed || !tc.adjust(at(0), 24) { // 25 spent of 10: owes 15
				t.Fatalf("%s: the first request, or its correction, refused", tc.name)
			}
			if r := tc.allow(at(500), 1); r.Allowed || r.Remaining != 0 || r.RetryAfter <= 0 {
				t.Errorf("%s: admitted, or no wait, within the window it overspent: %+v", tc.name, r)
			}
			// The window after pays 10 of the debt, the one after that 5.
			if r := tc.allow(at(2000), 1); r.Allowed {
				t.Errorf("%s: admitted at 2s, while it still owes 15 of a limit of 10: %+v", tc.name, r)
			}
			if r := tc.allow(at(4000), 5); !r.Allowed || r.Remaining != 0 {
				t.Errorf("%s: at 4s, with 5 owed, 5 units not admitted to the limit: %+v", tc.name, r)
			}
			if r := tc.allow(at(4000), 1); r.Allowed {
				t.Errorf("%s: admitted beyond the limit after the debt: %+v", tc.name, r)
			}
			// A refund of 20 takes back the 10 counted, not more.
			if !tc.adjust(at(4000), -20) {
				t.Fatalf("%s: refund refused", tc.name)
			}
			if r := tc.allow(at(4000), 0); r.Remaining != 10 {
				t.Errorf("%s: after the refund %d remaining, want the limit, 10", tc.name, r.Remaining)
			}
			// A debt is cancelled by a refund before it is paid.
			tc.adjust(at(4000), 30) // 10 counted, 20 owed
			tc.adjust(at(4000), -25)
			if r := tc.allow(at(4000), 0); r.Remaining != 5 {
				t.Errorf("%s: 30 charged and 25 given back left %d remaining, want 5", tc.name, r.Remaining)
			}
		}
		// A key that owes is held until it pays, however long it was away.
		keyed.AdjustAt("owes", now, 25)
		if n := keyed.Sweep(now.Add(time.Hour)); n != 1 || keyed.Len() != 1 {
			t.Errorf("%s: a sweep an hour later dropped %d keys and left %d, want the one that paid and the one that owes", a.Name, n, keyed.Len())
		}
	}
}
