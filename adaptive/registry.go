package adaptive

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// LawSettings is what a group gives its law: one plain struct for every
// law, of which each reads its part (LawKind says which knobs). Zero fields
// mean the law's defaults.
type LawSettings struct {
	// Bounds are the limits an adaptive law moves between.
	Bounds Bounds
	// Limit is the constant limit of a law with LawKind.FixedLimit; 0 means
	// Bounds.Initial.
	Limit int
	// Latency is the target (or, for AIMD, the bound) on the Quantile of the
	// upstream latency; zero means none.
	Latency time.Duration
	// Quantile is the latency figure Latency applies to; default P99.
	Quantile Quantile
	// CPU, Memory and CPUPressure are targets in (0, 1]; zero means none.
	CPU, Memory, CPUPressure float64
	// PressureWindow is the averaging window of Sample.CPUPressure; default
	// DefaultPressureWindow.
	PressureWindow time.Duration
	// Backoff is AIMD's factor on overload, in (0, 1); default 0.9.
	Backoff float64
	// Tolerance is Gradient's allowed ratio of short to long latency;
	// default 1.5.
	Tolerance float64
	// Rate is the token rate a law with LawKind.ManagesRate manages; its
	// zero value means none. Other laws ignore it.
	Rate RateParams
}

// LawKind describes one control law: its name in configs and reports, what
// it reads of a LawSettings, and how to build it. Every law of this package
// has one, listed by Laws; the values are immutable.
type LawKind struct {
	// Name is the law's name in a config ([group.concurrency] law) and in
	// the simulator's reports.
	Name string
	// Doc is a one-line description.
	Doc string
	// FixedLimit: the law holds LawSettings.Limit and reads no Bounds; else
	// it moves between Bounds.Min and Bounds.Max.
	FixedLimit bool
	// Knobs are the law's own settings beyond the bounds and targets, with
	// the range a config may give them.
	Knobs []Knob
	// NeedsTarget: the law needs at least one of the latency, CPU, memory
	// and CPU pressure targets.
	NeedsTarget bool
	// ManagesRate: the law can manage a token rate (LawSettings.Rate), and
	// the laws it builds are RateManagers.
	ManagesRate bool
	// Type is the dynamic type of the laws New returns (LawName reads it).
	Type reflect.Type
	// New builds the law from s, or returns every problem with s.
	New func(s LawSettings) (Law, error)
}

// Knob is one of a law's own settings, by its name in a config
// ([group.concurrency] backoff) and LawSettings field of the same name.
type Knob struct {
	Name string
	// Min and Max bound what a config may set, inclusive.
	Min, Max float64
	// Default is the value the law uses when the setting is 0.
	Default float64
}

// RateManager is a law that manages a token rate beside its limit (a
// LawKind with ManagesRate). Rate is the rate in force in requests per
// second, 0 when the law was built without one (LawSettings.Rate zero).
type RateManager interface {
	Law
	Rate() float64
}

// UnmovedJudge is a law that judges which resource signals its limit does
// not move (law "target"), which the resource guard must then not shed on
// either.
type UnmovedJudge interface {
	Law
	Unmoved() Unmoved
}

// UnmovedOf returns the signals law judges unmoved; 0 for a law that is no
// UnmovedJudge.
func UnmovedOf(law Law) Unmoved {
	if u, ok := law.(UnmovedJudge); ok {
		return u.Unmoved()
	}
	return 0
}

// JudgesUnmoved reports whether the laws k builds are UnmovedJudges.
func (k *LawKind) JudgesUnmoved() bool {
	return k.Type.Implements(reflect.TypeFor[UnmovedJudge]())
}

// laws is the registry, in the order reports compare laws and errors list
// them. Adding a law: its file defines its LawKind, and one line here.
var laws = [...]*LawKind{
	&fixedLaw,
	&aimdLaw,
	&vegasLaw,
	&gradientLaw,
	&targetLaw,
}

// Laws returns every law's kind, in a stable order (simplest first, the
// default, "target", last). The caller must not modify them.
func Laws() []*LawKind { return laws[:] }

// LawNames returns the names of Laws, in the same order.
func LawNames() []string {
	names := make([]string, len(laws))
	for i, k := range laws {
		names[i] = k.Name
	}
	return names
}

// LookupLaw returns the kind of the law named name.
func LookupLaw(name string) (*LawKind, bool) {
	for _, k := range laws {
		if k.Name == name {
			return k, true
		}
	}
	return nil, false
}

// NewLaw builds the law named name from s.
func NewLaw(name string, s LawSettings) (Law, error) {
	k, ok := LookupLaw(name)
	if !ok {
		return nil, fmt.Errorf("adaptive: unknown law %q (one of %s)", name, strings.Join(LawNames(), ", "))
	}
	return k.New(s)
}

// LawName returns the name of l's kind, or "" for a law of no registered
// kind.
func LawName(l Law) string {
	t := reflect.TypeOf(l)
	for _, k := range laws {
		if k.Type == t {
			return k.Name
		}
	}
	return ""
}

// Knob returns the field of s that holds the knob called name: the float64
// field of that name, capitalised in Go's way ("backoff" is Backoff,
// "rate_headroom" RateHeadroom); nil for none. Callers that fill a
// LawSettings from a config's knobs (gate/spec) read and write them through
// it, so that a new knob is a field here and an entry in its LawKind.Knobs.
func (s *LawSettings) Knob(name string) *float64 {
	return floatField(reflect.ValueOf(s).Elem(), goName(name))
}

// goName is a knob's name as a Go field's.
func goName(knob string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(knob, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// floatField is the float64 field called name of the struct v, nil for
// none.
func floatField(v reflect.Value, name string) *float64 {
	f := v.FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.Float64 || !f.CanAddr() {
		return nil
	}
	return f.Addr().Interface().(*float64)
}

// KnobNames returns the names of every law's knobs, each once, in the
// order of Laws.
func KnobNames() []string {
	var names []string
	for _, k := range laws {
		for _, kn := range k.Knobs {
			if !slices.Contains(names, kn.Name) {
				names = append(names, kn.Name)
			}
		}
	}
	return names
}

// Knob returns the law's knob named name.
func (k *LawKind) Knob(name string) (Knob, bool) {
	for _, kn := range k.Knobs {
		if kn.Name == name {
			return kn, true
		}
	}
	return Knob{}, false
}

// Validate reports every problem with s for this law.
func (k *LawKind) Validate(s LawSettings) error {
	_, err := k.New(s)
	return err
}
