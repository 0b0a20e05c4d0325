// Package check collects the problems found while validating a value, each
// at the key path of the field it is about, with the range checks and the
// wording that every part of sluice's validation shares: configs (the TOML
// file) and gate/spec (the gate's own types, what gate.New checks) word a
// problem the same way because they word it here.
//
// Key paths are written as the TOML file spells them: "rate.burst",
// "group[1].match.path_prefix", "headers.\"X Bad\"". A Checker is for one
// goroutine.
package check

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Problem is one problem of a value.
type Problem struct {
	// Path is the key path of the field, relative to what was checked; ""
	// for the value as a whole.
	Path string
	// Msg says what is wrong and, where it helps, what would be right;
	// lower case.
	Msg string
	// Incomplete marks a problem with a table as a whole, a value it lacks:
	// where part of that table could not be read from a file, the value may
	// be there, malformed, and the problem is moot.
	Incomplete bool
}

// Checker collects problems. The zero value appends them to Problems; one
// made by NewChecker hands each to a function instead.
type Checker struct {
	Problems []Problem
	report   func(Problem)
}

// NewChecker returns a Checker that gives every problem to report.
func NewChecker(report func(Problem)) *Checker { return &Checker{report: report} }

func (c *Checker) add(p Problem) {
	if c.report != nil {
		c.report(p)
		return
	}
	c.Problems = append(c.Problems, p)
}

// Errorf records a problem at path.
func (c *Checker) Errorf(path, format string, args ...any) {
	c.add(Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Incompletef records a problem with the table at path as a whole: a value
// it lacks (see Problem.Incomplete).
func (c *Checker) Incompletef(path, format string, args ...any) {
	c.add(Problem{Path: path, Msg: fmt.Sprintf(format, args...), Incomplete: true})
}

// The range checks each report at most one problem for the value and
// return whether the value was good, so that checks across fields can skip
// values already reported.

// IntRange checks lo <= v <= hi.
func (c *Checker) IntRange(path string, v, lo, hi int) bool {
	if v < lo || v > hi {
		c.Errorf(path, "must be from %d to %d, got %d", lo, hi, v)
		return false
	}
	return true
}

// FloatRange checks lo <= v <= hi (NaN is out of every range).
func (c *Checker) FloatRange(path string, v, lo, hi float64) bool {
	if math.IsNaN(v) || v < lo || v > hi {
		c.Errorf(path, "must be from %s to %s, got %s", Float(lo), Float(hi), Float(v))
		return false
	}
	return true
}

// Ratio checks a share in [0, 1], with a hint for a percentage.
func (c *Checker) Ratio(path string, v float64) bool {
	if math.IsNaN(v) || v < 0 || v > 1 {
		hint := ""
		if v > 1 && v <= 100 {
			hint = fmt.Sprintf(" (for %s%%, write %s)", Float(v), Float(v/100))
		}
		c.Errorf(path, "must be a ratio from 0 to 1, got %s%s", Float(v), hint)
		return false
	}
	return true
}

// Duration checks lo <= d <= hi, with a plainer message for a negative d.
func (c *Checker) Duration(path string, d, lo, hi time.Duration) bool {
	switch {
	case d < 0:
		c.Errorf(path, "must not be negative, got %s", Dur(d))
	case d == 0 && lo > 0:
		c.Errorf(path, "must be positive (at least %s), got 0s", Dur(lo))
	case d < lo || d > hi:
		c.Errorf(path, "must be from %s to %s, got %s", Dur(lo), Dur(hi), Dur(d))
	default:
		return true
	}
	return false
}

// OptionalDuration checks that d is 0 ("none" or "off") or within lo..hi.
func (c *Checker) OptionalDuration(path string, d, lo, hi time.Duration) bool {
	return d == 0 || c.Duration(path, d, lo, hi)
}

// OneOf checks an enumerated value.
func OneOf[T ~string](c *Checker, path string, v T, allowed ...T) bool {
	if slices.Contains(allowed, v) {
		return true
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = strconv.Quote(string(a))
	}
	c.Errorf(path, "must be one of %s, got %q", strings.Join(names, ", "), v)
	return false
}

// Unused reports a knob that is set where nothing reads it; why says where
// ("by law \"fixed\"", "with key = \"none\": ...").
func (c *Checker) Unused(path string, set bool, why string) {
	if set {
		c.Errorf(path, "not used %s; remove it", why)
	}
}

// Dur formats d without the zero tails time.Duration.String adds: one minute
// is "1m", not "1m0s". The result parses back to d.
func Dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Float formats f in the shortest form that reads back as f ("0.5",
// "1e+09", "NaN", "Inf").
func Float(f float64) string {
	return strings.TrimPrefix(strconv.FormatFloat(f, 'g', -1, 64), "+")
}

// OrList quotes names and joins them as `"a", "b" or "c"`.
func OrList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// Join builds the key path of key inside the table at parent.
func Join(parent, key string) string {
	k := QuoteKey(key)
	if parent == "" {
		return k
	}
	return parent + "." + k
}

// Index builds the key path of element i of the array at parent.
func Index(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// QuoteKey writes a key as TOML would: bare if it can be, else quoted.
func QuoteKey(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return strconv.Quote(k)
		}
	}
	return k
}
