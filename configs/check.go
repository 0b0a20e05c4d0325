package configs

import (
	"time"

	"github.com/sluicehq/sluice/internal/check"
)

// The range and type checks of every section are internal/check's, shared
// with the gate's own validation (package gate/spec) so that both word a
// problem alike; these hand them the file's problems.

// shared returns c's checker of internal/check: its problems go to c, with
// the file's lines.
func (c *checker) shared() *check.Checker {
	if c.sh == nil {
		c.sh = check.NewChecker(func(p check.Problem) { c.report(p.Path, p.Msg, p.Incomplete) })
	}
	return c.sh
}

// report records a problem found by a shared check.
func (c *checker) report(path, msg string, incomplete bool) {
	if incomplete {
		c.incompletef(path, "%s", msg)
	} else {
		c.errorf(path, "%s", msg)
	}
}

func (c *checker) intRange(path string, v, lo, hi int) bool {
	return c.shared().IntRange(path, v, lo, hi)
}

func (c *checker) floatRange(path string, v, lo, hi float64) bool {
	return c.shared().FloatRange(path, v, lo, hi)
}

// ratio checks a share in [0, 1], with a hint for percentages.
func (c *checker) ratio(path string, v float64) bool { return c.shared().Ratio(path, v) }

// duration checks lo <= d <= hi, with a plainer message for a negative d.
func (c *checker) duration(path string, d, lo, hi Duration) bool {
	return c.shared().Duration(path, time.Duration(d), time.Duration(lo), time.Duration(hi))
}

// optionalDuration checks that d is 0 ("none" or "off") or within lo..hi.
func (c *checker) optionalDuration(path string, d, lo, hi Duration) bool {
	return c.shared().OptionalDuration(path, time.Duration(d), time.Duration(lo), time.Duration(hi))
}

// oneOf checks an enum value.
func oneOf[T ~string](c *checker, path string, v T, allowed ...T) bool {
	return check.OneOf(c.shared(), path, v, allowed...)
}

// unused reports a knob set for a mode that does not read it.
func (c *checker) unused(path string, set bool, why string) { c.shared().Unused(path, set, why) }
