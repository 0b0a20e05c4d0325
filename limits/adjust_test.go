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
	fw, _ := NewFixedWindow(WindowParams{Limit: 10, Window: time.Second})
	kfw, _ := NewKeyed(fw, KeyedParams{MaxKeys: 10})
	if kfw.AdjustAt("k", now, 5) || kfw.Len() != 0 {
		t.Error("a fixed window took a correction")
	}
	lb, _ := NewLeakyBucket(LeakyBucketParams{Rate: 10, Capacity: 10})
	if !lb.AdjustAt(now, 10) || lb.AllowAt(now, 1).Allowed {
		t.Error("a leaky bucket filled by a correction admitted more")
	}
	for _, a := range Algorithms() {
		_, isAdj := map[string]bool{"token_bucket": true, "leaky_bucket": true, "leaky_queue": true}[a.Name]
		if a.Adjusts != isAdj {
			t.Errorf("%s: Adjusts %v", a.Name, a.Adjusts)
		}
	}
}
