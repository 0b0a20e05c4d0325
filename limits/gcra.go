package limits

import "time"

// gcra is the arithmetic of TokenBucket, LeakyBucket and LeakyQueue: the
// Generic Cell Rate Algorithm (ITU-T I.371, "virtual scheduling"). The
// whole state is one instant, tat (theoretical arrival time): the moment the
// bucket is full again, equivalently the moment the meter is empty, or the
// next free slot of the queue. A request of n units costs n emission
// intervals.
//
// As a bucket, a request is admitted when, after paying, tat is at most tau
// (burst emission intervals) ahead of now. A token bucket of rate r and
// capacity b starting full, a leaky bucket meter of leak rate r and
// capacity b starting empty, and GCRA(1/r, b/r) admit exactly the same
// sequences (level = b - tokens = (tat-now)/interval).
//
// As a queue, a request is admitted when its slot, max(tat, now), is at most
// maxWait ahead of now, and told to wait until then.
//
// A *gcra is immutable once published; it is also the per-key model of
// these algorithms in Keyed (state int64).
type gcra struct {
	rate     float64 // units per second
	burst    int64   // capacity in units (a queue: maxWait/interval + 1)
	queue    bool    // LeakyQueue semantics
	maxWait  int64   // ns; queue only
	interval float64 // ns per unit, 1e9/rate
	perNs    float64 // units per ns, rate/1e9
	tau      int64   // ns; burst·interval rounded down (a bucket's tolerance)
	unit     int64   // ns; cost(1), the commonest cost, computed once
}

func newBucket(rate float64, burst int64) *gcra {
	g := &gcra{rate: rate, burst: burst, interval: 1e9 / rate, perNs: rate / 1e9}
	g.unit, g.tau = g.emission(1), g.emission(burst)
	return g
}

func newQueue(rate float64, maxWait time.Duration) *gcra {
	g := &gcra{rate: rate, queue: true, maxWait: int64(maxWait), interval: 1e9 / rate, perNs: rate / 1e9}
	g.unit, g.burst = g.emission(1), g.whole(g.maxWait)+1
	g.tau = g.emission(g.burst)
	return g
}

// cost is the emission time of n units in ns, rounded down (so a burst of
// single requests always fits where one request of the same total does; the
// error is under 1 ns per request, in the caller's favour), saturated at
// maxSpan.
func (g *gcra) cost(n int64) int64 {
	if n == 1 {
		return g.unit
	}
	return g.emission(n)
}

// emission computes cost(n).
func (g *gcra) emission(n int64) int64 {
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

// decide decides on n units at now from state tat: the new state (tat
// itself when nothing is consumed) and whether n is admitted. It is all a
// limiter does under its lock; both halves are small enough to inline.
func (g *gcra) decide(tat, now, n int64) (int64, bool) {
	if g.queue {
		return g.decideQueue(tat, now, n)
	}
	return g.decideBucket(tat, now, n)
}

// decideBucket: n = 0 consumes nothing (next is then max(tat, now), the
// same state) and is always allowed.
func (g *gcra) decideBucket(tat, now, n int64) (int64, bool) {
	next := max(tat, now) + g.cost(n)
	if n <= g.burst && next-now <= g.tau {
		return next, true
	}
	return tat, n == 0
}

func (g *gcra) decideQueue(tat, now, n int64) (int64, bool) {
	if base := max(tat, now); base-now <= g.maxWait {
		return base + g.cost(n), true
	}
	return tat, n == 0
}

// result writes the Result of a decision from the old and new state to r,
// field by field.
func (g *gcra) result(r *Result, old, tat int64, ok bool, now, n int64) {
	if ok && !g.queue {
		g.granted(r, tat, now)
		return
	}
	ahead := max(tat, now) - now
	wait := max(old, now) - now
	r.Allowed, r.Limit, r.ResetAfter = ok, g.burst, span(ahead)
	if g.queue {
		r.Remaining, r.RetryAfter, r.Delay = 0, 0, 0
		if ahead <= g.maxWait {
			r.Remaining = min(g.burst, g.whole(g.maxWait-ahead)+1)
		}
		switch {
		case ok && n > 0:
			r.Delay = span(wait)
		case !ok:
			r.RetryAfter = span(wait - g.maxWait)
		}
		return
	}
	r.Remaining, r.Delay = min(g.burst, g.whole(g.tau-ahead)), 0
	switch {
	case n > g.burst:
		r.RetryAfter = InfDuration
	default:
		r.RetryAfter = span(wait + g.cost(n) - g.tau)
	}
}

// granted is result for a bucket that admitted a request, leaving it at
// tat: the commonest case, small enough to inline into the decision.
func (g *gcra) granted(r *Result, tat, now int64) {
	ahead := max(tat, now) - now
	r.Allowed, r.Limit, r.Remaining = true, g.burst, min(g.burst, g.whole(g.tau-ahead))
	r.RetryAfter, r.ResetAfter, r.Delay = 0, time.Duration(ahead), 0
}

// carry converts tat, built under old, to g at now. A bucket keeps the
// tokens available (x/time/rate's SetLimitAt and SetBurstAt semantics),
// clamped to the new capacity; a queue keeps its backlog in units, re-timed
// at the new pace.
func (g *gcra) carry(tat int64, old *gcra, now int64) int64 {
	if tat <= now {
		return tat // full (empty queue) under any parameters
	}
	if g.queue {
		backlog := float64(tat-now) / old.interval * g.interval
		return now + int64(min(backlog, float64(maxSpan)))
	}
	tokens := float64(old.tau-(tat-now)) / old.interval
	tokens = max(0, min(float64(g.burst), tokens))
	debt := (float64(g.burst) - tokens) * g.interval
	return now + min(g.tau, int64(debt))
}

// adjust charges n more units to state tat at now (n < 0 gives -n back),
// whatever the room: the correction of a request whose real cost is known
// only after its work (Adjuster). A charge may take a bucket beyond its
// capacity, a debt the refill pays back before anything more is admitted
// (a queue's next slot moves later); a refund gives back at most what the
// state owes (a full bucket, an empty queue stays so).
func (g *gcra) adjust(tat, now, n int64) int64 {
	if n >= 0 {
		return min(max(tat, now)+g.emission(n), now+maxSpan)
	}
	if tat <= now {
		return tat
	}
	return max(now, tat-g.emission(-n))
}

// policy: a bucket's capacity per the time the rate takes to produce it; a
// queue's capacity per the time it takes to drain.
func (g *gcra) policy() Policy { return Policy{Quota: g.burst, Window: time.Duration(g.tau)} }

// The per-key model (Keyed).

func (g *gcra) allow(s *int64, now, n int64) Result {
	next, ok := g.decide(*s, now, n)
	var r Result
	g.result(&r, *s, next, ok, now, n)
	*s = next
	return r
}

func (g *gcra) idle(s *int64, now int64) bool { return *s <= now }

func (g *gcra) adjustState(s *int64, now, n int64) { *s = g.adjust(*s, now, n) }

func (g *gcra) adopt(s *int64, old *gcra, now int64) { *s = g.carry(*s, old, now) }
