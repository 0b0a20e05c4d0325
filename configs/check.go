package configs

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Range and type checks shared by the validation of every section. Each
// reports at most one problem for the value and returns whether the value
// was good, so that cross-field checks can skip values already reported.

func (c *checker) intRange(path string, v, lo, hi int) bool {
	if v < lo || v > hi {
		c.errorf(path, "must be from %d to %d, got %d", lo, hi, v)
		return false
	}
	return true
}

func (c *checker) floatRange(path string, v, lo, hi float64) bool {
	if math.IsNaN(v) || v < lo || v > hi {
		c.errorf(path, "must be from %s to %s, got %s", formatFloat(lo), formatFloat(hi), formatFloat(v))
		return false
	}
	return true
}

// ratio checks a share in [0, 1], with a hint for percentages.
func (c *checker) ratio(path string, v float64) bool {
	if math.IsNaN(v) || v < 0 || v > 1 {
		hint := ""
		if v > 1 && v <= 100 {
			hint = fmt.Sprintf(" (for %s%%, write %s)", formatFloat(v), formatFloat(v/100))
		}
		c.errorf(path, "must be a ratio from 0 to 1, got %s%s", formatFloat(v), hint)
		return false
	}
	return true
}

// duration checks lo <= d <= hi, with a plainer message for a negative d.
func (c *checker) duration(path string, d, lo, hi Duration) bool {
	switch {
	case d < 0:
		c.errorf(path, "must not be negative, got %s", d)
	case d == 0 && lo > 0:
		c.errorf(path, "must be positive (at least %s), got 0s", lo)
	case d < lo || d > hi:
		c.errorf(path, "must be from %s to %s, got %s", lo, hi, d)
	default:
		return true
	}
	return false
}

// optionalDuration checks that d is 0 ("none" or "off") or within lo..hi.
func (c *checker) optionalDuration(path string, d, lo, hi Duration) bool {
	if d == 0 {
		return true
	}
	return c.duration(path, d, lo, hi)
}

// oneOf checks an enum value.
func oneOf[T ~string](c *checker, path string, v T, allowed ...T) bool {
	if slices.Contains(allowed, v) {
		return true
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = fmt.Sprintf("%q", a)
	}
	c.errorf(path, "must be one of %s, got %q", strings.Join(names, ", "), v)
	return false
}

// unused reports a knob set for a mode that does not read it.
func (c *checker) unused(path string, set bool, why string) {
	if set {
		c.errorf(path, "not used %s; remove it", why)
	}
}
