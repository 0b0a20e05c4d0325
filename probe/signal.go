package probe

import (
	"math"
	"strconv"
)

// Signal is one measured figure. Known is false when it could not be
// measured (no cgroup limit, no PSI, a cgroup v1 host, a file that is missing
// or malformed, the first CPU sample); Value is then 0 and meaningless, and
// Reason says why, in words fit for the admin API. The unit of Value is given
// by the field that holds the Signal. The zero value is unknown with no
// reason.
type Signal struct {
	Value  float64
	Known  bool
	Reason string
}

func known(v float64) Signal       { return Signal{Value: v, Known: true} }
func unknown(reason string) Signal { return Signal{Reason: reason} }

// ratio returns v clamped to 0–1 as a known signal.
func ratio(v float64) Signal {
	if math.IsNaN(v) {
		return unknown("not a number")
	}
	return known(min(max(v, 0), 1))
}

// String returns the value, or "unknown (reason)".
func (s Signal) String() string {
	if !s.Known {
		return "unknown (" + s.Reason + ")"
	}
	return strconv.FormatFloat(s.Value, 'g', 6, 64)
}
