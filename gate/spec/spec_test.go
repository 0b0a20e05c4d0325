package spec

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/limits"
)

func TestFixedLimit(t *testing.T) {
	var custom maker
	for _, c := range []struct {
		c    Concurrency
		want bool
	}{
		{Concurrency{Law: LawFixed, Limit: 4}, true},
		{Concurrency{Law: LawAIMD}, false},
		{Concurrency{}, false},
		{Concurrency{Law: LawFixed, Custom: custom}, false}, // a custom law moves its limit
	} {
		if got := c.c.FixedLimit(); got != c.want {
			t.Errorf("%+v: FixedLimit %v, want %v", c.c, got, c.want)
		}
	}
}

// maker is a LawMaker that is never called.
type maker struct{}

func (maker) NewLaw(adaptive.Bounds) (adaptive.Law, error) { return nil, nil }

// TestKnobsHaveFields: every knob of the registry of laws is a field of
// Concurrency (by its toml key) and of adaptive.LawSettings, and what a
// group sets reaches its law's settings.
func TestKnobsHaveFields(t *testing.T) {
	names := adaptive.KnobNames()
	if len(names) < 2 {
		t.Fatalf("KnobNames = %q", names)
	}
	for i, name := range names {
		var g Group
		f := g.Concurrency.Knob(name)
		if f == nil {
			t.Errorf("knob %q: no field of Concurrency has that toml key", name)
			continue
		}
		*f = float64(i) + 0.5
		ls := g.LawSettings()
		if got := ls.Knob(name); got == nil || *got != *f {
			t.Errorf("knob %q: LawSettings holds %v, want %v", name, got, *f)
		}
	}
	if (&Concurrency{}).Knob("law") != nil || (&Concurrency{}).Knob("nope") != nil {
		t.Error("Knob answers for a name that is no knob")
	}
}

// TestKeyBoundIsTheLimiters: a group's rate that leaves max_keys out bounds
// its keys as a zero limits.KeyedParams does (one figure, in limits), for
// every algorithm; a keyless rate keeps no key bound.
func TestKeyBoundIsTheLimiters(t *testing.T) {
	for _, name := range limits.AlgorithmNames(nil) {
		r := Rate{Algorithm: Algorithm(name), Rate: 10, Burst: 10, Limit: 10, Window: time.Second}
		if got := r.WithDefaults(KeyIP).MaxKeys; got != limits.DefaultMaxKeys {
			t.Errorf("%s per ip: max_keys default %d, want limits.DefaultMaxKeys %d", name, got, limits.DefaultMaxKeys)
		}
		if got := r.WithDefaults(KeyNone).MaxKeys; got != 0 {
			t.Errorf("%s keyless: max_keys default %d, want 0", name, got)
		}
	}
}
