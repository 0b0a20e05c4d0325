package gate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

func stateConfig(path string) string {
	return `
[control]
interval = "250ms"
save_interval = "1s"

[[group]]
name = "api"
match = { path_prefix = "/api/" }
  [group.concurrency]
  law = "aimd"
  initial = 10
  min = 2
  max = 50

[[group]]
name = "rated"
match = { path_prefix = "/rated/" }
  [group.rate]
  rate = 500
  [group.concurrency]
  law = "target"
  initial = 10
  [group.targets]
  latency = "100ms"

[[group]]
name = "static"
  [group.concurrency]
  law = "fixed"
  limit = 4
`
}

// TestStateSurvivesRestart: a gate that learned limits saves them; a new gate
// on the same state file starts at the learned limits (and rate).
func TestStateSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	clk := newFakeClock()
	a, err := New(Params{Config: config(t, stateConfig(path)), StateFile: path, Resources: NoResources, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if info := a.RestoreInfo(); info.Err != nil || info.Groups != 0 {
		t.Fatalf("first start: %+v, want nothing restored and no error", info)
	}
	// Learned: api rose to 37 and rated's law manages 123 req/s.
	a.mu.Lock()
	_ = a.testGroup(t, "api").conc.SetLimit(37)
	rg := a.testGroup(t, "rated")
	rg.pol.law = mustLaw(t, rg, seed{limit: 12, rate: 123})
	a.mu.Unlock()
	if err := a.SaveState(); err != nil {
		t.Fatal(err)
	}

	b, err := New(Params{Config: config(t, stateConfig(path)), StateFile: path, Resources: NoResources, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	info := b.RestoreInfo()
	if info.Err != nil || info.Groups != 3 || !info.SavedAt.Equal(clk.Now()) {
		t.Fatalf("restore: %+v, want 3 groups saved at %v", info, clk.Now())
	}
	if st, _ := b.Group("api"); st.Limit != 37 {
		t.Errorf("api starts at %d, want the learned 37", st.Limit)
	}
	if st, _ := b.Group("rated"); st.Limit != 12 || st.TokenRate != 123 {
		t.Errorf("rated starts at limit %d rate %v, want 12 and 123", st.Limit, st.TokenRate)
	}
	if st, _ := b.Group("static"); st.Limit != 4 {
		t.Errorf("static starts at %d, want its fixed 4", st.Limit)
	}
}

func mustLaw(t *testing.T, gr *group, s seed) adaptive.Law {
	t.Helper()
	p, err := newPolicy(gr.cfg.Load(), s, gr.managedMax)
	if err != nil {
		t.Fatal(err)
	}
	_ = gr.conc.SetLimit(p.law.Limit())
	return p.law
}

// TestStateRestoreIsClamped: a saved limit outside the group's bounds (the
// config changed since) is clamped into them.
func TestStateRestoreIsClamped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	writeFile(t, path, `{"version":1,"saved_at":"2025-03-01T11:00:00Z","groups":{
		"api":{"law":"aimd","limit":900,"rate":0},
		"rated":{"limit":1,"rate":1e9},
		"gone":{"limit":5,"rate":0}}}`)
	g, err := New(Params{Config: config(t, stateConfig(path)), StateFile: path, Resources: NoResources,
		Clock: newFakeClock()}) // an hour later
	if err != nil {
		t.Fatal(err)
	}
	if info := g.RestoreInfo(); info.Err != nil || info.Groups != 3 {
		t.Fatalf("restore: %+v", info)
	}
	if st, _ := g.Group("api"); st.Limit != 50 {
		t.Errorf("api limit %d, want 900 clamped to max 50", st.Limit)
	}
	if st, _ := g.Group("rated"); st.Limit != 1 || st.TokenRate != 500 {
		t.Errorf("rated limit %d rate %v, want 1 and the rate clamped to the configured 500", st.Limit, st.TokenRate)
	}
}

// TestStateTooOldIsNotRestored: a state file saved longer ago than
// Params.StateMaxAge (default 24h, as control.state_max_age) is not restored: the groups start
// from their initial limits and RestoreInfo says why; one just younger is.
func TestStateTooOldIsNotRestored(t *testing.T) {
	for _, c := range []struct {
		savedAt  string
		restored bool
	}{
		{"2025-02-28T11:00:00Z", false}, // 25h before t0
		{"2025-02-28T13:00:00Z", true},  // 23h before t0
	} {
		path := filepath.Join(t.TempDir(), "state.json")
		writeFile(t, path, `{"version":1,"saved_at":"`+c.savedAt+`","groups":{"api":{"law":"aimd","limit":33,"rate":0}}}`)
		g, err := New(Params{Config: config(t, stateConfig(path)), StateFile: path, Resources: NoResources, Clock: newFakeClock()})
		if err != nil {
			t.Fatal(err)
		}
		info := g.RestoreInfo()
		st, _ := g.Group("api")
		if c.restored {
			if info.Err != nil || st.Limit != 33 {
				t.Errorf("saved %s: %v, limit %d; want restored (33)", c.savedAt, info.Err, st.Limit)
			}
			continue
		}
		if info.Err == nil || !strings.Contains(info.Err.Error(), "25h0m0s ago, older than the maximum age 24h0m0s") || st.Limit != 10 {
			t.Errorf("saved %s: %v, limit %d; want not restored (initial 10), the age in the error", c.savedAt, info.Err, st.Limit)
		}
	}
}

// TestStateFolderCheckedAtStart: a state file whose folder is missing or is
// not a folder stops New with the path, rather than failing at the first
// save or at shutdown; a good folder is left as it was.
func TestStateFolderCheckedAtStart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	writeFile(t, file, "x")
	for path, want := range map[string]string{
		filepath.Join(dir, "missing", "state.json"): "gate: state file " + filepath.Join(dir, "missing", "state.json") + ": its folder " +
			filepath.Join(dir, "missing") + " does not exist: create it, writable by this process (mkdir -p " + filepath.Join(dir, "missing") + ")",
		filepath.Join(file, "state.json"): "gate: state file " + filepath.Join(file, "state.json") + ": its folder " + file + " is not writable by this process (not a directory)",
	} {
		_, err := New(Params{Config: config(t, stateConfig(path)), StateFile: path, Resources: NoResources})
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), ".check-") {
			t.Errorf("New with state file %s: %v, want it refused with %q, and no probe file named", path, err, want)
		}
	}
	good := t.TempDir()
	if _, err := New(Params{Config: config(t, stateConfig(filepath.Join(good, "state.json"))),
		StateFile: filepath.Join(good, "state.json"), Resources: NoResources}); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(good); len(left) != 0 {
		t.Errorf("the check left %v in the folder", left)
	}
}

// TestStateFileProblems: a state file that cannot be used is reported and
// the groups start from their configured initial limits; New never fails
// for it.
func TestStateFileProblems(t *testing.T) {
	cases := map[string]struct{ content, want string }{
		"corrupt":         {`{"version":1,"groups":{"api":`, "not a sluice state file"},
		"not json":        {"limit=5\n", "not a sluice state file"},
		"unknown version": {`{"version":2,"groups":{"api":{"limit":5}}}`, "version 2 is not supported"},
		"no version":      {`{"groups":{"api":{"limit":5}}}`, "no version"},
		"bad limit":       {`{"version":1,"groups":{"api":{"limit":0,"rate":-1}}}`, `group "api": limit must be at least 1`},
		"unknown field":   {`{"version":1,"groups":{"api":{"limit":5,"burst":3}}}`, "unknown field"},
		"empty":           {``, "not a sluice state file"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			writeFile(t, path, c.content)
			g, err := New(Params{Config: config(t, stateConfig(path)), StateFile: path, Resources: NoResources})
			if err != nil {
				t.Fatalf("New failed for a bad state file: %v", err)
			}
			info := g.RestoreInfo()
			if info.Err == nil || !strings.Contains(info.Err.Error(), c.want) || !strings.HasPrefix(info.Err.Error(), "gate: ") {
				t.Fatalf("restore error %v, want one mentioning %q", info.Err, c.want)
			}
			if st, _ := g.Group("api"); st.Limit != 10 {
				t.Errorf("api limit %d, want its initial 10", st.Limit)
			}
			if got := g.Status().Restore.Err; got != info.Err {
				t.Errorf("status restore error %v, want %v", got, info.Err)
			}
		})
	}
}

// TestStateSavedPeriodically: Tick saves every save_interval of (injected)
// time, atomically: the file is whole JSON and no temporary file remains.
func TestStateSavedPeriodically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	clk := newFakeClock()
	var saves []error
	g, err := New(Params{Config: config(t, stateConfig(path)), StateFile: path, Resources: NoResources, Clock: clk,
		OnSave: func(p string, err error) {
			if p != path {
				t.Errorf("saved to %s, want %s", p, path)
			}
			saves = append(saves, err)
		}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		g.Tick(clk.Advance(250 * time.Millisecond))
	}
	if len(saves) != 0 {
		t.Fatalf("saved after 750ms, want the first save at 1s")
	}
	g.Tick(clk.Advance(250 * time.Millisecond))
	if len(saves) != 1 || saves[0] != nil {
		t.Fatalf("saves after 1s: %v, want one", saves)
	}
	for range 8 {
		g.Tick(clk.Advance(250 * time.Millisecond))
	}
	if len(saves) != 3 {
		t.Fatalf("saves after 3s: %d, want 3", len(saves))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil || st.Version != 1 || len(st.Groups) != 3 || !st.SavedAt.Equal(clk.Now()) {
		t.Fatalf("state file %s: %+v, %v", b, st, err)
	}
	if s := g.Status(); !s.LastSave.Equal(clk.Now()) || s.SaveErr != nil || s.StateFile != path {
		t.Errorf("status %+v", s)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the state file", len(entries))
	}

	// A state file that cannot be written: the error is reported, nothing
	// crashes, and the old file stays whole.
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	if os.Getuid() == 0 {
		t.Skip("root writes to read-only directories")
	}
	if err := g.SaveState(); err == nil {
		t.Error("SaveState into a read-only directory succeeded")
	}
	if s := g.Status(); s.SaveErr == nil {
		t.Error("status shows no save error")
	}
	if b2, _ := os.ReadFile(path); string(b2) != string(b) {
		t.Error("a failed save changed the state file")
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
