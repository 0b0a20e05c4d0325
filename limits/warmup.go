package limits

import "math"

// warmup holds the constants of Guava's SmoothWarmingUp (RateLimiter, Guava
// 11+, SmoothRateLimiter.java), in nanoseconds and permits. The cost of a
// permit is a function of the stored permits x (how cold the limiter is):
// stable below thresholdPermits, rising linearly to cold at maxPermits; the
// area under the curve between threshold and max is the warm-up period.
type warmup struct {
	stable, cold float64 // ns per permit
	threshold    float64 // permits: 0.5·warmup/stable
	maxPermits   float64 // threshold + 2·warmup/(stable+cold)
	slope        float64 // (cold-stable)/(maxPermits-threshold)
	coolDown     float64 // ns of idle time per stored permit: warmup/maxPermits
}

func newWarmup(stable, coldFactor, period float64) warmup {
	w := warmup{stable: stable, cold: stable * coldFactor}
	w.threshold = 0.5 * period / stable
	w.maxPermits = w.threshold + 2*period/(stable+w.cold)
	w.slope = (w.cold - stable) / (w.maxPermits - w.threshold)
	w.coolDown = period / w.maxPermits
	return w
}

// warmState is a warm-up token bucket's state: the GCRA instant and how
// warm it is (maxPermits minus Guava's stored permits; zero is fully cold,
// so the zero state is the fresh, cold bucket).
type warmState struct {
	tat    int64
	warmth float64
}

// warmParams are a TokenBucket's parameters with warm-up.
type warmParams struct {
	TokenBucketParams
	gcra
	warm warmup
}

func newWarmParams(p TokenBucketParams) *warmParams {
	if p.ColdFactor == 0 {
		p.ColdFactor = DefaultColdFactor
	}
	t := &warmParams{TokenBucketParams: p, gcra: *newBucket(p.Rate, p.Burst)}
	t.warm = newWarmup(t.interval, p.ColdFactor, float64(p.Warmup))
	return t
}

func (p *warmParams) idle(s *warmState, now int64) bool {
	return s.tat <= now && p.warm.stored(s, now) >= p.warm.maxPermits
}

// adopt keeps the tokens (as bucketParams.carry) and scales the stored
// permits by the ratio of the maxPermits, as Guava's doSetRate does.
func (p *warmParams) adopt(s *warmState, old *warmParams, now int64) {
	stored := old.warm.stored(s, now) * p.warm.maxPermits / old.warm.maxPermits
	s.warmth = p.warm.maxPermits - min(stored, p.warm.maxPermits)
	s.tat = p.gcra.carry(s.tat, &old.gcra, now)
}

func (p *warmParams) policy() Policy { return p.gcra.policy() }

// stored is Guava's storedPermits at now: the state's value plus the permits
// gained while the bucket has been full (idle), at most maxPermits.
func (w *warmup) stored(s *warmState, now int64) float64 {
	x := w.maxPermits - s.warmth
	if now > s.tat {
		x += float64(now-s.tat) / w.coolDown
	}
	return min(w.maxPermits, max(0, x))
}

// permitCost is the cost in ns of the permit at height x (Guava's
// permitsToTime, offset by the threshold).
func (w *warmup) permitCost(x float64) float64 {
	return w.stable + max(0, x-w.threshold)*w.slope
}

// toWait is Guava's storedPermitsToWaitTime: the cost in ns of taking k of
// the x stored permits, the area under the cost line from x-k to x.
func (w *warmup) toWait(x, k float64) float64 {
	ns := 0.0
	if above := x - w.threshold; above > 0 {
		take := min(above, k)
		ns = take * (w.permitCost(x) + w.permitCost(x-take)) / 2
		k -= take
	}
	return ns + w.stable*k
}

// allow is the token bucket decision with warm-up. Stored permits are
// spent first, at their warm-up cost; the rest at the stable interval.
func (p *warmParams) allow(s *warmState, now, n int64) Result {
	w := &p.warm
	x := w.stored(s, now)
	if s.tat < now { // full: normalise, keeping the cooling gained so far
		s.tat = now
		s.warmth = w.maxPermits - x
	}
	base := s.tat
	r := Result{Limit: p.burst}
	switch {
	case n == 0:
		r.Allowed = true
	case n > p.burst:
		r.RetryAfter = InfDuration
	default:
		use := min(float64(n), x)
		c := w.toWait(x, use) + w.stable*(float64(n)-use)
		next := base + int64(min(c, float64(maxSpan)))
		if next-now <= p.tau || base == now {
			r.Allowed = true
			s.tat = next
			x -= use
			s.warmth = w.maxPermits - x
			base = next
		} else {
			r.RetryAfter = span(min(next-p.tau, base) - now)
		}
	}
	if base == now {
		r.Remaining = p.burst // a full bucket admits any request up to Burst
	} else {
		free := float64(p.tau - (base - now))
		r.Remaining = min(p.burst, max(0, int64(math.Floor(free/w.permitCost(x)+1e-9))))
	}
	r.ResetAfter = span(base - now)
	return r
}
