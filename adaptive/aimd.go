package adaptive

import (
	"math"
	"reflect"
	"time"
)

// AIMDParams configures AIMD. Zero fields mean the defaults.
type AIMDParams struct {
	Bounds
	// Increase is added to the limit per interval while it is in use and healthy;
	// default 1.
	Increase int
	// Backoff multiplies the limit on overload, in (0, 1); default 0.9.
	Backoff float64
	// Latency, when set, is the bound on the Quantile above which the interval
	// counts as overload; zero means only drops signal overload.
	Latency time.Duration
	// Quantile is the latency figure compared with Latency; default P99.
	Quantile Quantile
	// UseRatio is the app-limited guard's threshold; default DefaultUseRatio.
	UseRatio float64
}

// Validate reports every problem with the params.
func (p AIMDParams) Validate() error {
	var pr problems
	p.Bounds.check(&pr)
	if p.Increase < 0 {
		pr.add("aimd increase %d must be positive", p.Increase)
	}
	if p.Backoff != 0 && !(p.Backoff > 0 && p.Backoff < 1) {
		pr.add("aimd backoff %v must be in (0, 1)", p.Backoff)
	}
	if p.Latency < 0 {
		pr.add("aimd latency bound %v must be positive", p.Latency)
	}
	pr.useRatio(p.UseRatio)
	return pr.err()
}

// AIMD is additive increase, multiplicative decrease, the law of TCP Reno
// congestion avoidance (Jacobson 1988; Chiu & Jain 1989) applied per control
// interval: on a drop or latency above the bound, limit ← ⌊limit × Backoff⌋;
// otherwise, when the limit is in use, limit ← limit + Increase.
//
// It needs no model of the service and recovers slowly by design (Increase per
// interval); it saw-tooths around the overload point. Not safe for concurrent use.
type AIMD struct {
	p     AIMDParams
	limit int
}

// NewAIMD returns an AIMD law starting at p.Initial.
func NewAIMD(p AIMDParams) (*AIMD, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.Bounds = p.withDefaults()
	p.Increase = orDefault(p.Increase, 1)
	p.Backoff = orDefault(p.Backoff, defaultBackoff)
	p.UseRatio = orDefault(p.UseRatio, DefaultUseRatio)
	return &AIMD{p: p, limit: p.Initial}, nil
}

// Limit returns the current limit.
func (a *AIMD) Limit() int { return a.limit }

// Update applies one interval's sample.
func (a *AIMD) Update(s Sample) Decision {
	old := a.limit
	var why Reason
	next := old
	lat := seconds(s.Latency.Quantile(a.p.Quantile))
	bound := seconds(a.p.Latency)
	switch {
	case s.Drops > 0:
		why = Reason{Signal: SignalDrops, Observed: s.dropRatio()}
		next = a.backoff()
	case bound > 0 && lat > bound:
		why = Reason{Signal: SignalLatency, Quantile: a.p.Quantile, Observed: lat, Bound: bound}
		next = a.backoff()
	case inUse(&s, old, a.p.UseRatio):
		why = Reason{Signal: SignalInUse, Observed: float64(s.MaxInFlight), Bound: float64(old)}
		next = old + a.p.Increase
	default:
		why = Reason{Signal: SignalAppLimited, Observed: float64(s.MaxInFlight), Bound: float64(old)}
	}
	a.limit = min(max(next, a.p.Min), a.p.Max)
	return decide(old, a.limit, 0, 0, why)
}

// backoff returns the decreased limit, at least one less than now.
func (a *AIMD) backoff() int {
	n := int(math.Floor(float64(a.limit) * a.p.Backoff))
	return min(n, a.limit-1)
}

// defaultBackoff is AIMDParams.Backoff's default.
const defaultBackoff = 0.9

var aimdLaw = LawKind{
	Name:  "aimd",
	Doc:   "additive increase, multiplicative decrease on drops or latency over the bound",
	Knobs: []Knob{{Name: "backoff", Min: 0.5, Max: 0.99, Default: defaultBackoff}},
	Type:  reflect.TypeFor[*AIMD](),
	New: func(s LawSettings) (Law, error) {
		return NewAIMD(AIMDParams{Bounds: s.Bounds, Backoff: s.Backoff, Latency: s.Latency, Quantile: s.Quantile})
	},
}
