package adaptive

import "reflect"

import "math"

// VegasParams configures Vegas. Zero fields mean the defaults.
type VegasParams struct {
	Bounds
	// Alpha and Beta are the low and high queue thresholds as multiples of
	// log10(limit); defaults 3 and 6 (Netflix concurrency-limits' VegasLimit).
	Alpha, Beta float64
	// UseRatio is the app-limited guard's threshold; default DefaultUseRatio.
	UseRatio float64
}

// Validate reports every problem with the params.
func (p VegasParams) Validate() error {
	var pr problems
	p.Bounds.check(&pr)
	if p.Alpha < 0 || math.IsNaN(p.Alpha) {
		pr.add("vegas alpha %v must be positive", p.Alpha)
	}
	if p.Beta < 0 || math.IsNaN(p.Beta) {
		pr.add("vegas beta %v must be positive", p.Beta)
	}
	if a, b := orDefault(p.Alpha, 3), orDefault(p.Beta, 6); b < a {
		pr.add("vegas beta %v is below alpha %v", b, a)
	}
	pr.useRatio(p.UseRatio)
	return pr.err()
}

// Vegas estimates how many requests queue at the backend from the ratio of the
// no-load latency to the current one, as TCP Vegas does with RTTs (Brakmo &
// Peterson 1995), in the form of Netflix concurrency-limits' VegasLimit:
//
//	queue = limit × (1 − latency_noload / latency)
//
// with latency the interval's mean and latency_noload the lowest interval mean
// (a baseline that rises only while the limit is not in use). With lg =
// max(1, log10(limit)): queue ≤ lg → limit + Beta·lg; queue < Alpha·lg →
// limit + lg; queue > Beta·lg → limit − lg; a drop → limit − lg.
//
// Slow start: until the first drop or queue estimate above lg, the limit doubles
// every interval in use, so a limit restored low ramps up in a few intervals.
// Not safe for concurrent use.
type Vegas struct {
	p         VegasParams
	limit     int
	slowStart bool
	base      baseline
}

// NewVegas returns a Vegas law starting at p.Initial, in slow start.
func NewVegas(p VegasParams) (*Vegas, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.Bounds = p.withDefaults()
	p.Alpha = orDefault(p.Alpha, 3)
	p.Beta = orDefault(p.Beta, 6)
	p.UseRatio = orDefault(p.UseRatio, DefaultUseRatio)
	return &Vegas{p: p, limit: p.Initial, slowStart: true}, nil
}

// Limit returns the current limit.
func (v *Vegas) Limit() int { return v.limit }

// Update applies one interval's sample.
func (v *Vegas) Update(s Sample) Decision {
	old := v.limit
	lim := float64(old)
	mean := seconds(s.Latency.Mean)
	use := inUse(&s, old, v.p.UseRatio)
	v.base.observe(mean, use, s.interval())
	lg := max(1, math.Log10(lim))
	next := lim
	var why Reason
	switch {
	case s.Drops > 0:
		v.slowStart = false
		next = lim - lg
		why = Reason{Signal: SignalDrops, Observed: s.dropRatio()}
	case mean == 0:
		why = Reason{Signal: SignalNoData}
	case !use:
		why = Reason{Signal: SignalAppLimited, Observed: float64(s.MaxInFlight), Bound: lim}
	default:
		queue := lim * (1 - v.base.v/mean)
		if v.slowStart && queue <= lg {
			next = 2 * lim
			why = Reason{Signal: SignalSlowStart, Observed: queue, Bound: lg}
			break
		}
		v.slowStart = false
		alpha, beta := v.p.Alpha*lg, v.p.Beta*lg
		switch {
		case queue <= lg:
			next = lim + beta
			why = Reason{Signal: SignalQueue, Observed: queue, Bound: lg}
		case queue < alpha:
			next = lim + lg
			why = Reason{Signal: SignalQueue, Observed: queue, Bound: alpha}
		case queue > beta:
			next = lim - lg
			why = Reason{Signal: SignalQueue, Observed: queue, Bound: beta}
		default:
			why = Reason{Signal: SignalQueue, Observed: queue, Bound: beta}
		}
	}
	v.limit = min(max(round(next), v.p.Min), v.p.Max)
	return decide(old, v.limit, 0, 0, why)
}

var vegasLaw = LawKind{
	Name: "vegas",
	Doc:  "TCP Vegas: the estimated queue at the backend against thresholds",
	Type: reflect.TypeFor[*Vegas](),
	New: func(s LawSettings) (Law, error) {
		return NewVegas(VegasParams{Bounds: s.Bounds})
	},
}
