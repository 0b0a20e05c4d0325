package spec

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/adaptive"
)

func TestParseLevel(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Level
		ok   bool
	}{{"critical", LevelCritical, true}, {"SHEDDABLE", LevelSheddable, true}, {"Default", LevelDefault, true}, {"urgent", "", false}, {"", "", false}} {
		if got, ok := ParseLevel(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("ParseLevel(%q) = %q, %v", tt.in, got, ok)
		}
	}
	if !(LevelCritical.Rank() < LevelDefault.Rank() && LevelDefault.Rank() < LevelSheddable.Rank()) || Level("x").Rank() != -1 {
		t.Error("ranks out of order")
	}
	if allocs := testing.AllocsPerRun(100, func() { ParseLevel("Sheddable") }); allocs != 0 {
		t.Errorf("ParseLevel allocates %v times", allocs)
	}
}

// TestLevelsArePriorities: each Level is the name of the adaptive.Priority
// it stands for, in the order they are shed, and nothing else is a level.
func TestLevelsArePriorities(t *testing.T) {
	for i, c := range []struct {
		l Level
		p adaptive.Priority
	}{{LevelCritical, adaptive.Critical}, {LevelDefault, adaptive.Default}, {LevelSheddable, adaptive.Sheddable}} {
		if p, ok := c.l.Priority(); !ok || p != c.p || string(c.l) != c.p.String() || c.l.Rank() != i {
			t.Errorf("%q: Priority %v %v, Rank %d; want %v, rank %d", c.l, p, ok, c.l.Rank(), c.p, i)
		}
		if l, ok := ParseLevel(strings.ToUpper(string(c.l))); !ok || l != c.l {
			t.Errorf("ParseLevel(%q) = %q, %v", strings.ToUpper(string(c.l)), l, ok)
		}
	}
	for _, bad := range []Level{"", "4", "high"} {
		if p, ok := bad.Priority(); ok || p != adaptive.Default || bad.Rank() != -1 {
			t.Errorf("%q names priority %v (%v), rank %d", bad, p, ok, bad.Rank())
		}
	}
}
