package adaptive

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
