package admin

import (
	"math"
	"testing"
	"time"
)

// TestTargetSwitchedOff: a memory target whose signal has no source (no
// memory limit to measure against) is shown as off once the first sample
// has found that out: null in the group's targets and no target line in
// the history the dashboard draws, while the group's config still says
// what the file set.
func TestTargetSwitchedOff(t *testing.T) {
	f := newFixture(t, testConfig)
	if m := f.group(t, "api").Targets.Memory; m == nil || *m != 0.85 {
		t.Fatalf("before the first sample: memory target %v, want 0.85 (nothing is known yet)", m)
	}
	f.res.mu.Lock()
	f.res.noMemory = true
	f.res.mu.Unlock()
	f.tick(250 * time.Millisecond)
	g := f.group(t, "api")
	if g.Targets.Memory != nil {
		t.Errorf("memory target %v with no memory source, want null (off)", *g.Targets.Memory)
	}
	if g.Targets.CPU != nil || g.Targets.Latency == nil || *g.Targets.Latency != 0.2 {
		t.Errorf("the other targets changed: cpu %v, latency %v", g.Targets.CPU, g.Targets.Latency)
	}
	if g.Config == nil || g.Config.Targets.Memory != 0.85 {
		t.Errorf("the group's config lost what the file set: %+v", g.Config)
	}
	f.srv.history.sample(f.clock.Now(), f.gate)
	for _, gs := range f.srv.history.view(0, time.Second).Groups {
		if v := gs.Series["memory_target"]; gs.Name == "api" && (len(v) == 0 || !math.IsNaN(v[len(v)-1])) {
			t.Errorf("history memory_target %v, want null once switched off", v)
		}
	}
}
