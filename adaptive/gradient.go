package adaptive

import "reflect"

// GradientParams configures Gradient. Zero fields mean the defaults.
type GradientParams struct {
	Bounds
	// Tolerance is how many times the long-term latency the current latency may
	// reach before the limit shrinks; default 1.5.
	Tolerance float64
	// Smoothing is the weight of each new estimate, in (0, 1]; default 0.2.
	Smoothing float64
	// LongWindow is the length of the long-term latency average in intervals;
	// default 120 (30 s at 250 ms).
	LongWindow int
	// QueueSize is the growth allowance per interval while healthy and in use,
	// before smoothing; default 4.
	QueueSize int
	// MaxInflation caps the long-term latency at this multiple of the no-load
	// floor, so a latency that stays high cannot become the new normal; default 2.
	MaxInflation float64
	// UseRatio is the app-limited guard's threshold; default DefaultUseRatio.
	UseRatio float64
}

// Validate reports every problem with the params.
func (p GradientParams) Validate() error {
	var pr problems
	p.Bounds.check(&pr)
	if p.Tolerance != 0 && !(p.Tolerance >= 1) {
		pr.add("gradient tolerance %v must be at least 1", p.Tolerance)
	}
	if p.Smoothing != 0 && !(p.Smoothing > 0 && p.Smoothing <= 1) {
		pr.add("gradient smoothing %v must be in (0, 1]", p.Smoothing)
	}
	if p.LongWindow < 0 {
		pr.add("gradient long window %d must be positive", p.LongWindow)
	}
	if p.QueueSize < 0 {
		pr.add("gradient queue size %d must be positive", p.QueueSize)
	}
	if p.MaxInflation != 0 && !(p.MaxInflation >= 1) {
		pr.add("gradient max inflation %v must be at least 1", p.MaxInflation)
	}
	pr.useRatio(p.UseRatio)
	return pr.err()
}

// Gradient is Netflix concurrency-limits' Gradient2: the limit follows the ratio
// of a long-term latency average to the current latency,
//
//	gradient = clamp(Tolerance × long / short, 0.5, 1)
//	estimate ← (1 − Smoothing) × estimate + Smoothing × (estimate × gradient + queue)
//
// where short is the interval's mean latency and long its exponential average
// over LongWindow intervals (decayed by 10 % whenever it exceeds twice short, as
// Gradient2 does to recover after load).
//
// Gradient2's known failures are fixed here:
//   - drops count: any drop caps the gradient at max(0.5, 0.9 − drop ratio);
//   - a latency that stays high (a stable timeout, a standing queue) does not read
//     as healthy: long is capped at MaxInflation × the no-load floor (the lowest
//     interval mean, see baseline), so it cannot drift up to meet short;
//   - no creep under modest overload: the +queue term is added only when the
//     gradient is 1 (no inflation beyond tolerance) and the limit is in use, never
//     on top of a decrease (Gradient2 adds it always, so limit × 0.95 + 4 grows);
//   - the floor is separate from any probe: the limit's floor is Bounds.Min and
//     the latency floor is measured passively; nothing drops the limit to probe.
//
// Not safe for concurrent use.
type Gradient struct {
	p        GradientParams
	limit    int
	estimate float64
	long     float64
	base     baseline
}

// NewGradient returns a Gradient law starting at p.Initial.
func NewGradient(p GradientParams) (*Gradient, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.Bounds = p.withDefaults()
	p.Tolerance = orDefault(p.Tolerance, defaultTolerance)
	p.Smoothing = orDefault(p.Smoothing, 0.2)
	p.LongWindow = orDefault(p.LongWindow, 120)
	p.QueueSize = orDefault(p.QueueSize, 4)
	p.MaxInflation = orDefault(p.MaxInflation, 2)
	p.UseRatio = orDefault(p.UseRatio, DefaultUseRatio)
	return &Gradient{p: p, limit: p.Initial, estimate: float64(p.Initial)}, nil
}

// Limit returns the current limit.
func (g *Gradient) Limit() int { return g.limit }

// Update applies one interval's sample.
func (g *Gradient) Update(s Sample) Decision {
	old := g.limit
	short := seconds(s.Latency.Mean)
	use := inUse(&s, old, g.p.UseRatio)
	grad := 1.0
	var why Reason
	switch {
	case short > 0:
		g.base.observe(short, use, s.interval())
		if g.long == 0 {
			g.long = short
		} else {
			g.long += (short - g.long) * 2 / float64(g.p.LongWindow+1)
		}
		if g.long > 2*short {
			g.long *= 0.9
		}
		ref := min(g.long, g.p.MaxInflation*g.base.v)
		grad = max(0.5, min(1, g.p.Tolerance*ref/short))
		why = Reason{Signal: SignalGradient, Observed: grad, Bound: 1}
	case s.Drops == 0:
		return Decision{Limit: old, Reason: Reason{Signal: SignalNoData}}
	}
	if s.Drops > 0 {
		d := s.dropRatio()
		if c := max(0.5, 0.9-d); c < grad {
			grad = c
			why = Reason{Signal: SignalDrops, Observed: d}
		}
	}
	queue := 0.0
	if grad >= 1 {
		if !use {
			return Decision{Limit: old, Reason: Reason{Signal: SignalAppLimited, Observed: float64(s.MaxInFlight), Bound: float64(old)}}
		}
		queue = float64(g.p.QueueSize)
		why = Reason{Signal: SignalInUse, Observed: float64(s.MaxInFlight), Bound: float64(old)}
	}
	next := g.estimate*grad + queue
	g.estimate = g.estimate*(1-g.p.Smoothing) + next*g.p.Smoothing
	g.estimate = min(max(g.estimate, float64(g.p.Min)), float64(g.p.Max))
	g.limit = int(g.estimate)
	return decide(old, g.limit, 0, 0, why)
}

// defaultTolerance is GradientParams.Tolerance's default.
const defaultTolerance = 1.5

var gradientLaw = LawKind{
	Name:  "gradient",
	Doc:   "Gradient2: short-term against long-term latency",
	Knobs: []Knob{{Name: "tolerance", Min: 1, Max: 10, Default: defaultTolerance}},
	Type:  reflect.TypeFor[*Gradient](),
	New: func(s LawSettings) (Law, error) {
		return NewGradient(GradientParams{Bounds: s.Bounds, Tolerance: s.Tolerance})
	},
}
