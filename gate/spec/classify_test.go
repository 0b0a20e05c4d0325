package spec

import "testing"

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
