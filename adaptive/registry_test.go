package adaptive

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRegistryNames(t *testing.T) {
	names := LawNames()
	// The simplest first, the default among them; each name once.
	if len(names) < 5 || names[0] != "fixed" || !slices.Contains(names, "target") {
		t.Fatalf("LawNames = %q", names)
	}
	for i, n := range names {
		if k, ok := LookupLaw(n); !ok || k.Name != n || slices.Index(names, n) != i {
			t.Errorf("%q: LookupLaw %v, %v; first at %d", n, k, ok, slices.Index(names, n))
		}
	}
	if _, err := NewLaw("aimdd", LawSettings{}); err == nil || !strings.Contains(err.Error(), "aimd") {
		t.Errorf("NewLaw of an unknown name: %v, want an error listing the names", err)
	}
}

// TestRegistryKinds ties each kind's description to the laws it builds:
// their type and name, RateManager, FixedLimit, NeedsTarget and the knobs'
// defaults.
func TestRegistryKinds(t *testing.T) {
	s := LawSettings{Bounds: Bounds{Min: 2, Max: 50, Initial: 10}, Latency: 100 * time.Millisecond,
		Rate: RateParams{Initial: 100}}
	for _, k := range Laws() {
		t.Run(k.Name, func(t *testing.T) {
			if k.Doc == "" {
				t.Error("no Doc")
			}
			l, err := k.New(s)
			if err != nil {
				t.Fatal(err)
			}
			if reflect.TypeOf(l) != k.Type || LawName(l) != k.Name {
				t.Errorf("built a %T named %q", l, LawName(l))
			}
			rm, ok := l.(RateManager)
			if ok != k.ManagesRate || ok && rm.Rate() != 100 {
				t.Errorf("ManagesRate %v, but RateManager %v", k.ManagesRate, ok)
			}
			fixed := s
			fixed.Limit = 7
			if l, err := k.New(fixed); err != nil || (l.Limit() == 7) != k.FixedLimit {
				t.Errorf("FixedLimit %v, but Limit 7 gives %v, %v", k.FixedLimit, l, err)
			}
			none := s
			none.Latency = 0
			if err := k.Validate(none); (err != nil) != k.NeedsTarget {
				t.Errorf("NeedsTarget %v, but no target gives %v", k.NeedsTarget, err)
			}
			for _, kn := range k.Knobs {
				if !(kn.Min <= kn.Default && kn.Default <= kn.Max) {
					t.Errorf("knob %s: default %v outside [%v, %v]", kn.Name, kn.Default, kn.Min, kn.Max)
				}
				if _, ok := k.Knob(kn.Name); !ok {
					t.Errorf("Knob(%q) not found", kn.Name)
				}
			}
		})
	}
	if LawName(nil) != "" {
		t.Error("LawName(nil) names a kind")
	}
}

// The knobs' defaults are the laws' own.
func TestRegistryKnobDefaults(t *testing.T) {
	a, _ := NewAIMD(AIMDParams{})
	g, _ := NewGradient(GradientParams{})
	for _, c := range []struct {
		law, knob string
		got       float64
	}{{"aimd", "backoff", a.p.Backoff}, {"gradient", "tolerance", g.p.Tolerance}} {
		k, _ := LookupLaw(c.law)
		if kn, ok := k.Knob(c.knob); !ok || kn.Default != c.got {
			t.Errorf("%s %s: registry default %v, law's %v", c.law, c.knob, kn.Default, c.got)
		}
	}
}

// judgingLaw is a law that judges the CPU signal unmoved.
type judgingLaw struct{ Law }

func (judgingLaw) Unmoved() Unmoved { return UnmovedCPU }

func TestUnmovedOf(t *testing.T) {
	aimd, err := NewAIMD(AIMDParams{Bounds: Bounds{Min: 1, Max: 10, Initial: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if u := UnmovedOf(aimd); u != 0 {
		t.Errorf("aimd: %v, want none (it does not judge)", u)
	}
	if u := UnmovedOf(judgingLaw{aimd}); u != UnmovedCPU {
		t.Errorf("a law with Unmoved: %v, want its cpu", u)
	}
	for _, k := range Laws() {
		if want := k.Name == "target"; k.JudgesUnmoved() != want {
			t.Errorf("law %s: JudgesUnmoved %v, want %v", k.Name, k.JudgesUnmoved(), want)
		}
	}
}
