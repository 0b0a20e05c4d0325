package limits

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// spec is a valid Spec for every algorithm: 10 units per second.
var spec = Spec{Rate: 10, Limit: 10, Window: time.Second, Burst: 10, MaxWait: time.Second, Buckets: 5}

func TestRegistryNames(t *testing.T) {
	names := AlgorithmNames(nil)
	// The config's default first among the buckets; each name once.
	if len(names) < 7 || !slices.Contains(names, "token_bucket") {
		t.Fatalf("AlgorithmNames = %q", names)
	}
	for i, n := range names {
		if a, ok := LookupAlgorithm(n); !ok || a.Name != n || a.Doc == "" || slices.Index(names, n) != i {
			t.Errorf("%q: LookupAlgorithm %+v, %v; first at %d", n, a, ok, slices.Index(names, n))
		}
	}
	if _, err := New("token-bucket", spec); err == nil || !strings.Contains(err.Error(), "token_bucket") {
		t.Errorf("New of an unknown name: %v, want an error listing the names", err)
	}
}

// TestRegistryCapabilities ties each algorithm's description to what its
// limiters do: the shape and knobs to their setters, Paced to a delay.
func TestRegistryCapabilities(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, a := range Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			l, err := a.New(spec)
			if err != nil {
				t.Fatal(err)
			}
			_, rate := l.(RateSetter)
			_, window := l.(WindowSetter)
			_, burst := l.(BurstSetter)
			_, wait := l.(MaxWaitSetter)
			if rate != (a.Shape == ShapeRate) || window != (a.Shape == ShapeWindow) {
				t.Errorf("shape %d but RateSetter %v, WindowSetter %v", a.Shape, rate, window)
			}
			if burst != a.Knobs.Has(KnobBurst) || wait != a.Knobs.Has(KnobMaxWait) {
				t.Errorf("knobs %b but BurstSetter %v, MaxWaitSetter %v", a.Knobs, burst, wait)
			}
			var delayed bool
			for range 3 {
				delayed = delayed || l.AllowAt(now, 1).Delay > 0
			}
			if delayed != a.Paced {
				t.Errorf("Paced %v but an admitted request waits: %v", a.Paced, delayed)
			}
			// Retune to twice the figures doubles the quota per second.
			perSecond := func(p Policy) float64 { return float64(p.Quota) / p.Window.Seconds() }
			before := l.Policy()
			double := spec
			double.Rate, double.Burst, double.Limit = 20, 20, 20
			if errs := Retune(l, double); errs != nil {
				t.Fatal(errs)
			}
			if after := l.Policy(); math.Abs(perSecond(after)-2*perSecond(before)) > 1e-9*perSecond(after) {
				t.Errorf("Retune: policy %+v, was %+v", after, before)
			}
		})
	}
}

func TestRegistryBadSpec(t *testing.T) {
	for _, a := range Algorithms() {
		if _, err := a.New(Spec{}); err == nil {
			t.Errorf("%s: New(Spec{}) accepted a zero quota", a.Name)
		}
	}
}

// TestRegistryFreshness ties each algorithm's FreshAfter to its limiters: a
// key left unused for FreshAfter admits what a new key admits, and its
// Defaults name only knobs it reads.
func TestRegistryFreshness(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	for _, a := range Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			if a.FreshAfter == nil {
				t.Fatal("no FreshAfter")
			}
			if (a.Defaults.Buckets != 0) != a.Knobs.Has(KnobBuckets) || (a.Defaults.MaxWait != 0) != a.Knobs.Has(KnobMaxWait) ||
				a.Defaults.Burst != 0 || a.Defaults.Rate != 0 || a.Defaults.Limit != 0 {
				t.Errorf("Defaults %+v for knobs %b", a.Defaults, a.Knobs)
			}
			fresh := time.Duration(a.FreshAfter(spec) * float64(time.Second))
			if fresh <= 0 {
				t.Fatalf("FreshAfter = %v", fresh)
			}
			if a.Paced {
				// leaky_queue's FreshAfter (max_wait) leaves its last
				// departure's interval out (see its Algorithm).
				fresh += time.Duration(float64(time.Second) / spec.Rate)
			}
			admitted := func(l Limiter, at time.Time) int {
				n := 0
				for range 100 {
					if r := l.AllowAt(at, 1); r.Allowed && r.Delay == 0 {
						n++
					}
				}
				return n
			}
			used, err := a.New(spec)
			if err != nil {
				t.Fatal(err)
			}
			admitted(used, start) // drain it
			fresh0, _ := a.New(spec)
			want := admitted(fresh0, start.Add(fresh))
			if got := admitted(used, start.Add(fresh)); got != want {
				t.Errorf("after FreshAfter (%v) a used limiter admits %d, a new one %d", fresh, got, want)
			}
		})
	}
}
