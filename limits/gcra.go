package limits

import "time"

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
	perNs    float64 // units per ns, rate/1e9
	tau      int64   // ns; burst*interval rounded down
}

func newGCRA(rate float64, burst int64, maxWait time.Duration) gcra {
	g := gcra{rate: rate, burst: burst, maxWait: int64(maxWait)}
	g.interval = 1e9 / g.rate
	g.perNs = g.rate / 1e9
	g.tau = g.cost(g.burst)
	return g
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

// whole converts a span in ns to whole units (rounded down: the conversion
// truncates a positive value), absorbing float rounding.
func (g *gcra) whole(ns int64) int64 {
	if ns <= 0 {
		return 0
	}
	return int64(float64(ns)*g.perNs + 1e-9)
}

// bucketParams are the parameters of a TokenBucket without warm-up and of
// a LeakyBucket: GCRA with a tolerance of burst units.
type bucketParams struct{ gcra }

func newBucketParams(rate float64, burst int64) *bucketParams {
	return &bucketParams{newGCRA(rate, burst, 0)}
}

func (p *bucketParams) decide(tat, now, n int64) (int64, bool) {
	switch {
	case n == 0:
		return tat, true
	case n > p.burst:
		return tat, false
	}
	if next := max(tat, now) + p.cost(n); next-now <= p.tau {
		return next, true
	}
	return tat, false
}

func (p *bucketParams) result(old, tat int64, ok bool, now, n int64) Result {
	base := max(tat, now)
	r := Result{
		Allowed:    ok,
		Limit:      p.burst,
		Remaining:  min(p.burst, p.whole(p.tau-(base-now))),
		ResetAfter: span(base - now),
	}
	switch {
	case ok:
	case n > p.burst:
		r.RetryAfter = InfDuration
	default:
		r.RetryAfter = span(max(old, now) + p.cost(n) - p.tau - now)
	}
	return r
}

// carry keeps the tokens available at now (x/time/rate's SetLimitAt and
// SetBurstAt semantics), clamped to the new capacity.
func (p *bucketParams) carry(tat int64, old *bucketParams, now int64) int64 {
	if tat <= now {
		return tat // full under any parameters
	}
	tokens := float64(old.tau-(tat-now)) / old.interval
	tokens = max(0, min(float64(p.burst), tokens))
	debt := (float64(p.burst) - tokens) * p.interval
	return now + min(p.tau, int64(debt))
}

func (p *bucketParams) policy() Policy {
	return Policy{Quota: p.burst, Window: time.Duration(p.tau)}
}

// The per-key model (Keyed) of a bucket.

func (p *bucketParams) allow(s *int64, now, n int64) Result {
	next, ok := p.decide(*s, now, n)
	r := p.result(*s, next, ok, now, n)
	*s = next
	return r
}

func (p *bucketParams) idle(s *int64, now int64) bool { return *s <= now }

func (p *bucketParams) adopt(s *int64, old *bucketParams, now int64) { *s = p.carry(*s, old, now) }
