package limits

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// problems collects every validation error of a params struct, so Validate
// can report them all at once.
type problems []error

func (ps *problems) add(format string, args ...any) {
	*ps = append(*ps, fmt.Errorf("limits: "+format, args...))
}

func (ps problems) err() error { return errors.Join(ps...) }

// maxRate is the highest rate a bucket accepts: one unit per nanosecond.
const maxRate = 1e9

// rate checks a refill/leak/pace rate in units per second.
func (ps *problems) rate(name string, r float64) {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		ps.add("%s must be a finite number, got %v", name, r)
	case r <= 0:
		ps.add("%s must be positive, got %v", name, r)
	case r > maxRate:
		ps.add("%s must be at most %g per second, got %v", name, float64(maxRate), r)
	case 1e9/r > float64(maxSpan):
		ps.add("%s is too small: one unit would take longer than %v, got %v", name, time.Duration(maxSpan), r)
	}
}

func (ps *problems) positive(name string, v int64) {
	if v <= 0 {
		ps.add("%s must be positive, got %d", name, v)
	}
}

// window checks a window length.
func (ps *problems) window(name string, d time.Duration) {
	switch {
	case d <= 0:
		ps.add("%s must be positive, got %v", name, d)
	case int64(d) > maxSpan:
		ps.add("%s must be at most %v, got %v", name, time.Duration(maxSpan), d)
	}
}
