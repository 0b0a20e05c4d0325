package adaptive

import "reflect"

// FixedParams configures Fixed.
type FixedParams struct {
	// Bounds.Initial is the fixed limit.
	Bounds
}

// Validate reports every problem with the params.
func (p FixedParams) Validate() error { return p.Bounds.Validate() }

// Fixed is a static concurrency limit: the baseline every adaptive law is compared
// with, and the law to use when an operator wants a hand-tuned number.
type Fixed struct{ limit int }

// NewFixed returns a Fixed law holding p.Initial.
func NewFixed(p FixedParams) (*Fixed, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Fixed{limit: p.withDefaults().Initial}, nil
}

// Update returns the fixed limit; it never changes.
func (f *Fixed) Update(Sample) Decision { return Decision{Limit: f.limit} }

// Limit returns the fixed limit.
func (f *Fixed) Limit() int { return f.limit }

var fixedLaw = LawKind{
	Name:       "fixed",
	Doc:        "a constant limit, hand-tuned",
	FixedLimit: true,
	Type:       reflect.TypeFor[*Fixed](),
	New: func(s LawSettings) (Law, error) {
		b := s.Bounds
		if n := s.Limit; n != 0 {
			b = Bounds{Min: n, Max: n, Initial: n}
		}
		return NewFixed(FixedParams{Bounds: b})
	},
}
