package limits

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestLeakyBucketSteps(t *testing.T) {
	l := must(NewLeakyBucket(LeakyBucketParams{Rate: 10, Capacity: 3})) // leaks a unit per 100 ms
	runSteps(t, l, []step{
		{at: 0, n: 2, allowed: true, remaining: 1, retry: 0, reset: 200 * ms},
		{at: 0, n: 2, allowed: false, remaining: 1, retry: 100 * ms, reset: 200 * ms},
		{at: 100 * ms, n: 2, allowed: true, remaining: 0, retry: 0, reset: 300 * ms},
		{at: 100 * ms, n: 4, allowed: false, remaining: 0, retry: InfDuration, reset: 300 * ms},
	})
	if got := l.LevelAt(t0.Add(250 * ms)); got < 1.4999 || got > 1.5001 {
		t.Fatalf("level at 250 ms = %v, want 1.5", got)
	}
	must(0, l.SetCapacity(1)) // free room (1.5) clamped to the capacity: full room
	runSteps(t, l, []step{{at: 250 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: 100 * ms}})
	must(0, l.SetRate(1))
	runSteps(t, l, []step{{at: 250 * ms, n: 1, allowed: false, remaining: 0, retry: time.Second, reset: time.Second}})
	if err := l.SetCapacity(-1); err == nil {
		t.Fatal("SetCapacity(-1) accepted")
	}
}

// The meter and the token bucket admit the same sequences.
func TestLeakyBucketMirrorsTokenBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lb := must(NewLeakyBucket(LeakyBucketParams{Rate: 50, Capacity: 7}))
	tb := must(NewTokenBucket(TokenBucketParams{Rate: 50, Burst: 7}))
	now := t0
	for i := range 5000 {
		now = now.Add(time.Duration(rng.Int64N(int64(60 * ms))))
		n := int64(rng.IntN(9))
		if a, b := lb.AllowAt(now, n), tb.AllowAt(now, n); a != b {
			t.Fatalf("request %d: leaky %+v, token %+v", i, a, b)
		}
	}
}
