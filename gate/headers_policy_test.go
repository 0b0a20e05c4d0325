package gate

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/limits"
)

// TestRateLimitPolicyIsSafe checks, for every refusing rate algorithm, the
// promise of the RateLimit-Policy field: a client that sends at most q
// requests per w seconds, evenly spaced, is never refused. q and w are what
// WriteHeaders would send (wholeSecondPolicy of the limiter's Policy), the
// instants are injected, and the run lasts twenty policy windows from an
// arbitrary start. (A leaky queue paces instead of refusing; a token bucket
// in warm-up reports its current, lower quota.)
func TestRateLimitPolicyIsSafe(t *testing.T) {
	must := func(l limits.Limiter, err error) limits.Limiter {
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	cases := []struct {
		name string
		l    limits.Limiter
	}{
		{"token bucket 2/s burst 3", must(limits.NewTokenBucket(limits.TokenBucketParams{Rate: 2, Burst: 3}))},
		{"token bucket 100/s burst 20", must(limits.NewTokenBucket(limits.TokenBucketParams{Rate: 100, Burst: 20}))},
		{"token bucket 0.5/s burst 1", must(limits.NewTokenBucket(limits.TokenBucketParams{Rate: 0.5, Burst: 1}))},
		{"leaky bucket 7/s capacity 4", must(limits.NewLeakyBucket(limits.LeakyBucketParams{Rate: 7, Capacity: 4}))},
		{"fixed window 10 per 1.5s", must(limits.NewFixedWindow(limits.WindowParams{Limit: 10, Window: 1500 * time.Millisecond}))},
		{"fixed window 100 per 60s", must(limits.NewFixedWindow(limits.WindowParams{Limit: 100, Window: time.Minute}))},
		{"sliding window 1 per 1s", must(limits.NewSlidingWindow(limits.WindowParams{Limit: 1, Window: time.Second}))},
		{"sliding window 2 per 1s", must(limits.NewSlidingWindow(limits.WindowParams{Limit: 2, Window: time.Second}))},
		{"sliding window 100 per 1s", must(limits.NewSlidingWindow(limits.WindowParams{Limit: 100, Window: time.Second}))},
		{"sliding window 7 per 2.3s", must(limits.NewSlidingWindow(limits.WindowParams{Limit: 7, Window: 2300 * time.Millisecond}))},
		{"sliding window 10 per 1s", must(limits.NewSlidingWindow(limits.WindowParams{Limit: 10, Window: time.Second}))},
		{"sliding window 10 per 1.5s", must(limits.NewSlidingWindow(limits.WindowParams{Limit: 10, Window: 1500 * time.Millisecond}))},
		{"sliding log 5 per 2s", must(limits.NewSlidingLog(limits.WindowParams{Limit: 5, Window: 2 * time.Second}))},
		{"sliding buckets 30 per 3s in 6", must(limits.NewSlidingBuckets(limits.SlidingBucketsParams{Limit: 30, Window: 3 * time.Second, Buckets: 6}))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, w := wholeSecondPolicy(c.l.Policy())
			if q < 1 {
				t.Fatalf("policy q=%d;w=%d promises nothing", q, w)
			}
			gap := time.Duration(w) * time.Second / time.Duration(q)
			at := time.Unix(1_700_000_000, 123_456_789)
			for i := int64(0); i < 20*q; i++ {
				if r := c.l.AllowAt(at, 1); !r.Allowed {
					t.Fatalf("q=%d;w=%d: request %d, %v after the first, refused", q, w, i, time.Duration(i)*gap)
				}
				at = at.Add(gap)
			}
			t.Logf("q=%d;w=%d", q, w)
		})
	}
}
