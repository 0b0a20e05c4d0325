package adaptive

// RateParams configures the token rate Target manages beside the limit.
type RateParams struct {
	// Initial is the rate in requests per second before the first cut; > 0
	// enables rate management. Restart from a saved rate by setting it here.
	Initial float64
	// Min and Max bound the rate; defaults 1 req/s and unbounded (0).
	Min, Max float64
	// Headroom is how far above the admitted throughput the rate is set when a
	// target is exceeded or the service is overloaded, in [0, 1); default 0.1.
	Headroom float64
}

// ManagedRate is the managed token rate of a group whose configured rate is
// ceiling requests per second (> 0; else it returns the zero RateParams: no
// rate managed): between 1 (or ceiling, if lower) and ceiling, starting at
// saved, a rate learned before (clamped into those bounds), or at the
// ceiling when saved is 0. The gate and the simulator both build a law's
// rate with it.
func ManagedRate(ceiling, saved float64) RateParams {
	if ceiling <= 0 {
		return RateParams{}
	}
	lo := min(1, ceiling)
	r := ceiling
	if saved > 0 {
		r = min(max(saved, lo), ceiling)
	}
	return RateParams{Initial: r, Min: lo, Max: ceiling}
}

// rateStep is the most the managed rate grows by in one interval.
const rateStep = 1.25

// updateRate moves the managed token rate, in this order of cases:
//
//   - a target is exceeded and the law acts on it (paced as cuts of the limit
//     are): the rate becomes (1 + Headroom) × the admitted throughput (for a
//     resource, scaled by aim / reading), if that is lower;
//   - sustained overload (the gate turns away more than overloadShare of the
//     demand): while the concurrency stage is saturated (it refused or queued
//     requests) the throughput is what the service completes, and the rate
//     moves Gain of the way to (1 + Headroom) × that, so the excess is
//     refused at once at the rate stage, with an exact Retry-After, instead
//     of after a wait in the queue; while the rate starves the concurrency
//     stage, it grows by 1 + Headroom an interval;
//   - a target is exceeded otherwise: the rate holds;
//   - the rate refuses requests while the concurrency stage refuses none: it
//     grows by the factor the limit could (up to rateStep an interval);
//   - nothing is refused at all (the demand is within the rate) and no target
//     is exceeded: the rate grows back toward its maximum (Initial when it
//     has none) by rateStep an interval, so what an overload took is given
//     back once it ends (a rate above the demand admits nothing more; if the
//     overload returns, the cases above bring the rate down again).
//
// It returns the signal of the case that moved the rate, for the decision's
// reason: SignalRateOverload, SignalRate (the growth while the concurrency
// stage refuses none) or SignalRateIdle; SignalNone when a target's excess
// moved it (the excess is the reason) or nothing did.
func (t *Target) updateRate(s *Sample, pr *proposal, n float64, acted bool) Signal {
	if t.p.Rate.Initial == 0 {
		return SignalNone
	}
	r := t.rate
	x := s.throughput()
	h := t.p.Rate.Headroom
	sig := SignalNone
	switch {
	case pr.violated && acted && finite(pr.rateCut) && pr.rateCut > 0 && pr.rateCut*(1+h) < r:
		r = pr.rateCut * (1 + h)
	case t.overloaded && x > 0:
		sig = SignalRateOverload
		switch {
		case s.Rejected > 0 || s.Queued > 0:
			r += t.p.Gain * (x*(1+h) - r)
		case s.RateRejected > 0:
			r *= 1 + h
		}
	case pr.violated:
	case s.RateRejected > 0 && s.Rejected <= 0 && finite(pr.want) && n > 0:
		grow := 1 + t.p.Gain*(pr.want/n-1)
		r *= min(rateStep, max(1, grow))
		sig = SignalRate
	case s.RateRejected <= 0 && s.Rejected <= 0 && x > 0:
		top := t.p.Rate.Max
		if !finite(top) {
			top = t.p.Rate.Initial
		}
		r, sig = min(top, max(r, r*rateStep)), SignalRateIdle
	}
	t.rate = min(max(r, t.p.Rate.Min), t.p.Rate.Max)
	return sig
}
