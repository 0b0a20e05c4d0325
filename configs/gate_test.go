package configs

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/gate/spec"
)

// gateConfigs are every config the repository ships or tests as valid.
func gateConfigs(t *testing.T) map[string]*Config {
	t.Helper()
	out := map[string]*Config{"default": Default()}
	var paths []string
	for _, pat := range []string{"examples/*.toml", "examples/*/*.toml", "testdata/valid/*.toml"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) < 5 {
		t.Fatalf("found only %d configs: %q", len(paths), paths)
	}
	for _, p := range paths {
		c, err := Load(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[p] = c
	}
	return out
}

// TestGateSpecRoundTrip: the gate gets every setting of a group (Gate's
// groups are the file's), and the defaults SetDefaults fills in are the
// gate's (spec's WithDefaults changes nothing of a loaded config), so each
// default the file and the library share is written once.
func TestGateSpecRoundTrip(t *testing.T) {
	for name, c := range gateConfigs(t) {
		t.Run(filepath.Base(name), func(t *testing.T) { gateRoundTrip(t, c) })
	}
}

// gateRoundTrip checks a loaded config against the gate's types (see
// TestGateSpecRoundTrip); FuzzParse runs it on every config that loads.
func gateRoundTrip(t *testing.T, c *Config) {
	t.Helper()
	s := c.Gate()
	if len(s.Groups) != len(c.Groups) {
		t.Fatalf("%d groups, want %d", len(s.Groups), len(c.Groups))
	}
	for i := range c.Groups {
		if back := s.Groups[i]; !reflect.DeepEqual(back, c.Groups[i]) {
			t.Errorf("group %q does not survive Gate:\n got %+v\nwant %+v", c.Groups[i].Name, back, c.Groups[i])
		}
	}
	if d := s.WithDefaults(); !reflect.DeepEqual(d, s) {
		t.Errorf("the gate's defaults change a loaded config:\n got %+v\nwant %+v", d, s)
	}
}

// TestDefaultsAreTheGates ties the file's static defaults to the gate's
// where both have one.
func TestDefaultsAreTheGates(t *testing.T) {
	c, g := New(), NewGroup("g")
	for _, tt := range []struct {
		name      string
		got, want any
	}{
		{"control.interval", c.Control.Interval, Duration(spec.DefaultInterval)},
		{"control.save_interval", c.Control.SaveInterval, Duration(spec.DefaultSaveInterval)},
		{"control.state_max_age", c.Control.StateMaxAge, Duration(spec.DefaultStateMaxAge)},
		{"targets.quantile", g.Targets.Quantile, spec.DefaultQuantile},
		{"queue.max_wait", g.Queue.MaxWait, spec.DefaultQueueMaxWait},
		{"queue.codel_interval", g.Queue.CodelInterval, spec.DefaultCodelInterval},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: configs' default %v, the gate's %v", tt.name, tt.got, tt.want)
		}
	}
}
