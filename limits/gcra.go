package limits

import (
	"math"
	"time"
)

// gcra is the arithmetic shared by TokenBucket, LeakyBucket and LeakyQueue:
// the Generic Cell Rate Algorithm (ITU-T I.371, "virtual scheduling"). The
// whole state is one instant, tat (theoretical arrival time): the moment the
// bucket is full again, equivalently the moment the meter is empty, or the
// next free slot of the queue. A request of n units costs n emission
// intervals; a bucket admits it when, after paying, tat is at most tau
// (burst emission intervals) ahead of now.
//
// A token bucket of rate r and capacity b starting full, a leaky bucket
// meter of leak rate r and capacity b starting empty, and GCRA(1/r, b/r)
// admit exactly the same sequences (level = b - tokens = (tat-now)/interval).
type gcra struct {
	rate     float64 // units per second
	burst    int64   // capacity in units (buckets)
	maxWait  int64   // ns; LeakyQueue only
	interval float64 // ns per unit, 1e9/rate
	tau      int64   // ns; burst*interval rounded down
}

func newGCRA(rate float64, burst int64, maxWait time.Duration) *gcra {
	g := &gcra{rate: rate, burst: burst, maxWait: int64(maxWait)}
	g.derive()
	return g
}

func (g *gcra) derive() {
	g.interval = 1e9 / g.rate
	g.tau = g.cost(g.burst)
}

// cost is the emission time of n units in ns, rounded down (so a burst of
// single requests always fits where one request of the same total does; the
// error is under 1 ns per request, in the caller's favour), saturated at
// maxSpan.
func (g *gcra) cost(n int64) int64 {
	c := float64(n) * g.interval
	if c >= float64(maxSpan) {
		return maxSpan
	}
	return int64(c)
}

// whole converts a span in ns to whole units, absorbing float rounding.
func (g *gcra) whole(ns int64) int64 {
	if ns <= 0 {
		return 0
	}
	return int64(math.Floor(float64(ns)/g.interval + 1e-9))
}

// bucket decides for TokenBucket and LeakyBucket.
func (g *gcra) bucket(tat *int64, now, n int64) Result {
	base := max(*tat, now)
	r := Result{Limit: g.burst}
	switch {
	case n > g.burst:
		r.RetryAfter = InfDuration
	default:
		next := base + g.cost(n)
		if next-now <= g.tau {
			r.Allowed = true
			*tat = next
			base = next
		} else {
			r.RetryAfter = span(next - g.tau - now)
		}
	}
	r.Remaining = min(g.burst, g.whole(g.tau-(base-now)))
	r.ResetAfter = span(base - now)
	return r
}

// bucketIdle: a bucket is fresh once it is full.
func (g *gcra) bucketIdle(tat *int64, now int64) bool { return *tat <= now }

// bucketAdopt keeps the tokens available at now (x/time/rate's SetLimitAt and
// SetBurstAt semantics), clamped to the new capacity.
func (g *gcra) bucketAdopt(tat *int64, old *gcra, now int64) {
	if *tat <= now {
		return // full under any parameters
	}
	tokens := float64(old.tau-(*tat-now)) / old.interval
	tokens = max(0, min(float64(g.burst), tokens))
	debt := (float64(g.burst) - tokens) * g.interval
	*tat = now + min(g.tau, int64(debt))
}

func (g *gcra) bucketPolicy() Policy {
	return Policy{Quota: g.burst, Window: time.Duration(g.tau)}
}
