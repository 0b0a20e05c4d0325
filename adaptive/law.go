package adaptive

import (
	"errors"
	"fmt"
	"math"
)

// Law is a control law: a pure state machine from Sample to Decision.
//
// Update must be called by one goroutine, once per control interval, with
// non-decreasing Sample.Now. It never blocks, allocates, reads a clock or logs.
// Limit returns the limit of the last Decision (Bounds.Initial before the first).
type Law interface {
	Update(s Sample) Decision
	Limit() int
}

// Default bounds of every law.
const (
	DefaultMinLimit     = 1
	DefaultMaxLimit     = 1000
	DefaultInitialLimit = 20
)

// Bounds are the limits every law keeps to. Zero fields mean the defaults
// (DefaultMinLimit, DefaultMaxLimit, DefaultInitialLimit clamped into [Min, Max]).
type Bounds struct {
	// Min is the floor of the limit: no signal takes it lower.
	Min int
	// Max is the ceiling of the limit.
	Max int
	// Initial is the limit before the first Update; set it to a saved limit to
	// restart a law where it left off.
	Initial int
}

// withDefaults fills zero fields.
func (b Bounds) withDefaults() Bounds {
	if b.Min == 0 {
		b.Min = DefaultMinLimit
	}
	if b.Max == 0 {
		b.Max = max(DefaultMaxLimit, b.Min)
	}
	if b.Initial == 0 {
		b.Initial = min(max(DefaultInitialLimit, b.Min), b.Max)
	}
	return b
}

// Clamp returns n limited to [Min, Max] (with defaults applied): what a saved
// limit becomes when it is restored under these bounds.
func (b Bounds) Clamp(n int) int {
	b = b.withDefaults()
	return min(max(n, b.Min), b.Max)
}

// Validate reports every problem with the bounds.
func (b Bounds) Validate() error {
	var p problems
	b.check(&p)
	return p.err()
}

func (b Bounds) check(p *problems) {
	if b.Min < 0 {
		p.add("min limit %d must be positive", b.Min)
	}
	if b.Max < 0 {
		p.add("max limit %d must be positive", b.Max)
	}
	if b.Initial < 0 {
		p.add("initial limit %d must be positive", b.Initial)
	}
	if b.Min < 0 || b.Max < 0 || b.Initial < 0 {
		return
	}
	d := b.withDefaults()
	if d.Max < d.Min {
		p.add("max limit %d is below min limit %d", d.Max, d.Min)
		return
	}
	if d.Initial < d.Min || d.Initial > d.Max {
		p.add("initial limit %d is outside [%d, %d]", d.Initial, d.Min, d.Max)
	}
}

// problems collects validation errors, each prefixed "adaptive: ".
type problems struct{ errs []error }

func (p *problems) add(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("adaptive: "+format, args...))
}

func (p *problems) err() error { return errors.Join(p.errs...) }

// ratio checks an optional fraction in [lo, hi) (zero means default).
func (p *problems) ratio(name string, v, lo, hi float64) {
	if v == 0 {
		return
	}
	if math.IsNaN(v) || v < lo || v >= hi {
		p.add("%s %v must be in [%v, %v)", name, v, lo, hi)
	}
}

// useRatio checks an optional app-limited threshold in (0, 1].
func (p *problems) useRatio(v float64) {
	if v != 0 && !(v > 0 && v <= 1) {
		p.add("use ratio %v must be in (0, 1]", v)
	}
}

// utilTarget checks an optional utilisation target in (0, 1].
func (p *problems) utilTarget(name string, v float64) {
	if v == 0 {
		return
	}
	if math.IsNaN(v) || v < 0 || v > 1 {
		p.add("%s target %v must be in (0, 1]", name, v)
	}
}

// DefaultUseRatio is the default of every law's UseRatio: a limit counts as in
// use when the peak in flight reached half of it (the guard of Netflix's
// concurrency-limits: "inflight * 2 >= limit").
const DefaultUseRatio = 0.5

// inUse is the app-limited guard: the limit was in use during the interval when
// requests were refused or queued for a slot, or when the peak in flight reached
// ratio × limit. A limit that is not in use says nothing about whether more
// concurrency would be healthy, so no law raises it.
func inUse(s *Sample, limit int, ratio float64) bool {
	return s.Rejected > 0 || s.Queued > 0 || s.QueueLength > 0 ||
		float64(s.MaxInFlight) >= ratio*float64(limit)
}

// orDefault returns v, or def when v is zero.
func orDefault[T int | float64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// finite reports whether v is a usable number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// round converts a limit estimate to an int, saturating at the int32 range.
func round(v float64) int {
	switch {
	case math.IsNaN(v) || v < 0:
		return 0
	case v > math.MaxInt32:
		return math.MaxInt32
	}
	return int(math.Round(v))
}

// decide assembles a Decision for a limit change from old to next (already
// clamped) and the rate change from oldRate to rate.
func decide(old, next int, oldRate, rate float64, why Reason) Decision {
	return Decision{Limit: next, Rate: rate, Changed: next != old || rate != oldRate, Reason: why}
}
