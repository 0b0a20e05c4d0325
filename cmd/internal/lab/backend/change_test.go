package backend

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseChange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Change
	}{
		{"30s:slow=2", Change{At: 30 * time.Second, Slowdown: 2}},
		{"1m:workers=8,slow=1", Change{At: time.Minute, Workers: 8, Slowdown: 1}},
		{"0s:workers=4", Change{Workers: 4}},
	} {
		got, err := ParseChange(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseChange(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if back, err := ParseChange(got.String()); err != nil || back != got {
			t.Errorf("round trip of %q: %+v, %v", tc.in, back, err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"30s", "want AT:key=value"},
		{"x:slow=2", "at:"},
		{"-1s:slow=2", "must not be negative"},
		{"1s:speed=2", `unknown key "speed"`},
		{"1s:workers=-3", "workers must be in"},
		{"1s:slow=abc", "slow:"},
		{"1s:slow=0", "changes nothing"},
	} {
		_, err := ParseChange(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseChange(%q) error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParseChange(f *testing.F) {
	for _, s := range []string{"30s:slow=2", "1m:workers=8,slow=1", "1s:", ":", "1s:workers=1,workers=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseChange(s)
		if err != nil {
			return
		}
		if back, err := ParseChange(c.String()); err != nil || back != c {
			t.Fatalf("%q parsed as %+v; String %q reparses as %+v, %v", s, c, c.String(), back, err)
		}
	})
}

// TestCapacitySchedule checks the model's C along a schedule given out of
// order: slows 2× at 30 s, loses half its workers at 60 s, recovers at 90 s.
func TestCapacitySchedule(t *testing.T) {
	p := Params{
		Workers: 16,
		Service: Dist{Kind: Exponential, Mean: 40 * time.Millisecond},
		Changes: []Change{
			{At: 90 * time.Second, Workers: 16, Slowdown: 1},
			{At: 30 * time.Second, Slowdown: 2},
			{At: 60 * time.Second, Workers: 8},
		},
	}
	for _, step := range []struct {
		at   time.Duration
		want float64
	}{
		{0, 400}, {29 * time.Second, 400}, {30 * time.Second, 200},
		{59 * time.Second, 200}, {60 * time.Second, 100}, {90 * time.Second, 400}, {time.Hour, 400},
	} {
		if got := p.CapacityAt(step.at); math.Abs(got-step.want) > 1e-9 {
			t.Errorf("CapacityAt(%v) = %v, want %v", step.at, got, step.want)
		}
	}
	if got := p.Capacity(); got != 400 {
		t.Errorf("Capacity = %v, want 400", got)
	}
	if got := (Params{}).Capacity(); got != 400 {
		t.Errorf("default Capacity = %v, want 400 (16 workers / 40ms)", got)
	}
}

func TestParamsValidateReportsEveryProblem(t *testing.T) {
	p := Params{Workers: -1, Service: Dist{Kind: "gauss", Mean: -1}, Queue: -2, Changes: []Change{{At: time.Second}}}
	errs := p.Validate()
	for _, want := range []string{"workers must be", "unknown distribution", "mean must be positive", "queue must not", "changes nothing"} {
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e.Error(), want)
		}
		if !found {
			t.Errorf("Validate() = %v: missing %q", errs, want)
		}
	}
}
