package gate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
)

const reloadBefore = `
[[group]]
name = "keep"
match = { path_prefix = "/keep/" }
  [group.concurrency]
  law = "aimd"
  initial = 10
  max = 100
  [group.queue]
  max = 0

[[group]]
name = "change"
match = { path_prefix = "/change/" }
  [group.concurrency]
  law = "aimd"
  initial = 10
  max = 100
  [group.queue]
  max = 0

[[group]]
name = "drop"
match = { path_prefix = "/drop/" }
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 0
`

const reloadAfter = `
[[group]]
name = "keep"
match = { path_prefix = "/kept/" }
  [group.concurrency]
  law = "aimd"
  initial = 10
  max = 100
  [group.queue]
  max = 0

[[group]]
name = "change"
match = { path_prefix = "/change/" }
  [group.concurrency]
  law = "aimd"
  initial = 10
  max = 30
  [group.queue]
  max = 0

[[group]]
name = "new"
match = { path_prefix = "/drop/" }
  [group.concurrency]
  law = "fixed"
  limit = 2
  [group.queue]
  max = 0
`

// learn sets a group's limit as if its law had learned it.
func learn(t *testing.T, g *Gate, name string, limit int) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	gr := g.testGroup(t, name)
	gr.pol.law = mustLaw(t, gr, seed{limit: limit})
}

func TestReload(t *testing.T) {
	g, _ := newGate(t, reloadBefore)
	keep, drop := g.testGroup(t, "keep"), g.testGroup(t, "drop")
	learn(t, g, "keep", 42)
	learn(t, g, "change", 55)
	g.Reject(g.Classify(request("/keep/x")), adaptive.RejectCircuitOpen, 0)
	g.Reject(g.Classify(request("/change/x")), adaptive.RejectCircuitOpen, 0)
	held := mustEnter(t, g, request("/drop/x")) // in flight across the reload
	mustReject(t, g, request("/drop/x"), adaptive.RejectConcurrency)

	res, err := g.Reload(config(t, reloadAfter), ReloadOptions{Source: "after.toml"})
	if err != nil {
		t.Fatal(err)
	}
	want := ReloadResult{Unchanged: []string{"keep", "default"}, Changed: []string{"change"},
		Added: []string{"new"}, Removed: []string{"drop"}}
	if !slices.Equal(res.Unchanged, want.Unchanged) || !slices.Equal(res.Changed, want.Changed) ||
		!slices.Equal(res.Added, want.Added) || !slices.Equal(res.Removed, want.Removed) {
		t.Fatalf("Reload = %+v, want %+v", res, want)
	}
	// keep: the same group, its learned limit and counters, its new match.
	if g.testGroup(t, "keep") != keep {
		t.Error("an unchanged group was rebuilt")
	}
	st, _ := g.Group("keep")
	if st.Limit != 42 || st.Rejected[adaptive.RejectCircuitOpen] != 1 {
		t.Errorf("keep: limit %d, circuit_open %d; want 42 and 1", st.Limit, st.Rejected[adaptive.RejectCircuitOpen])
	}
	if c := g.Classify(request("/kept/x")); c.Group() != "keep" {
		t.Errorf("/kept/x goes to %s, want keep", c.Group())
	}
	if c := g.Classify(request("/keep/x")); c.Group() != configs.CatchAllName {
		t.Errorf("/keep/x goes to %s, want the catch-all", c.Group())
	}
	// change: rebuilt from its learned limit, clamped to the new max; its
	// counters carried over.
	st, _ = g.Group("change")
	if st.Limit != 30 || st.Max != 30 || st.Rejected[adaptive.RejectCircuitOpen] != 1 {
		t.Errorf("change: limit %d max %d circuit_open %d; want 30, 30, 1", st.Limit, st.Max, st.Rejected[adaptive.RejectCircuitOpen])
	}
	// drop is gone: its path goes to new, and its request in flight
	// releases into drop, not into new.
	a := mustEnter(t, g, request("/drop/x"))
	b := mustEnter(t, g, request("/drop/x"))
	mustReject(t, g, request("/drop/x"), adaptive.RejectConcurrency)
	held.Done(Success)
	if drop.conc.InFlight() != 0 || g.testGroup(t, "new").conc.InFlight() != 2 {
		t.Errorf("after the old request's Done: drop holds %d, new %d; want 0, 2",
			drop.conc.InFlight(), g.testGroup(t, "new").conc.InFlight())
	}
	a.Done(Success)
	b.Done(Success)
	if s := g.Status(); s.ConfigSource != "after.toml" || s.ConfigHash == "" {
		t.Errorf("status source %q hash %q", s.ConfigSource, s.ConfigHash)
	}

	// A bad config is refused whole; the running one stays.
	bad := config(t, reloadAfter)
	bad.Groups[0].Concurrency.Min = 500
	if _, err := g.Reload(bad, ReloadOptions{}); err == nil || !strings.Contains(err.Error(), `group "keep"`) ||
		!strings.Contains(err.Error(), "concurrency.min: must be ≤ max (100), got 500") {
		t.Fatalf("Reload of a bad config: %v, want it refused naming the group and its min limit", err)
	}
	if c := g.Classify(request("/kept/x")); c.Group() != "keep" || g.testGroup(t, "keep") != keep {
		t.Error("a refused reload changed the running config")
	}
}

const overrideConfig = `
[[group]]
name = "api"
key = "header:X-Key"
  [group.rate]
  rate = 10
  burst = 5
  [group.concurrency]
  law = "aimd"
  initial = 10
  max = 100
  [group.targets]
  latency = "100ms"
`

func TestOverride(t *testing.T) {
	g, _ := newGate(t, overrideConfig)
	gr := g.testGroup(t, "api")
	// Spend key a's burst but one.
	for range 4 {
		p := mustEnter(t, g, request("/", "X-Key", "a"))
		p.Done(Success)
	}

	c := g.Config().Group("api").Clone()
	c.Concurrency.Max, c.Concurrency.Initial = 5, 5 // configs refuses max below initial
	c.Targets.Latency = 50 * time.Millisecond
	c.Rate.Rate, c.Rate.Burst = 1, 1
	if err := g.Override(c); err != nil {
		t.Fatal(err)
	}
	st, _ := g.Group("api")
	if st.Limit != 5 || st.Max != 5 || g.Config().Group("api").Concurrency.Max != 5 {
		t.Errorf("after override: limit %d max %d config max %d; want 5", st.Limit, st.Max, g.Config().Group("api").Concurrency.Max)
	}
	if st.Override == nil {
		t.Fatal("no override in the read-out")
	}
	var paths []string
	for _, ch := range st.Override.Changes {
		paths = append(paths, ch.Path+": "+ch.From+" → "+ch.To)
	}
	wantPaths := []string{"targets.latency: 100ms → 50ms", "concurrency.initial: 10 → 5", "concurrency.max: 100 → 5",
		"rate.rate: 10 → 1", "rate.burst: 5 → 1"}
	if !slices.Equal(paths, wantPaths) {
		t.Errorf("override changes %q, want %q", paths, wantPaths)
	}
	// Key a keeps its state under the new rate: its one token left is now
	// the whole (new) burst.
	p := mustEnter(t, g, request("/", "X-Key", "a"))
	p.Done(Success)
	rej := mustReject(t, g, request("/", "X-Key", "a"), adaptive.RejectRate)
	if rej.Policy.Quota != 1 || rej.Policy.Window != time.Second {
		t.Errorf("policy after override %+v, want 1 per second", rej.Policy)
	}

	// What an override cannot change.
	bad := g.Config().Group("api").Clone()
	bad.Key = spec.KeyIP
	if err := g.Override(bad); err == nil || !strings.Contains(err.Error(), "key") {
		t.Errorf("override of the key: %v, want a refusal naming it", err)
	}
	bad = g.Config().Group("api").Clone()
	bad.Concurrency.Min = 50
	if err := g.Override(bad); err == nil || err.Error() != `gate: override: group "api": concurrency.min: must be ≤ max (5), got 50` {
		t.Errorf("override with min > max: %v, want the law's refusal naming the min limit", err)
	}
	bad.Name = "nope"
	if err := g.Override(bad); !errors.Is(err, ErrNoGroup) {
		t.Errorf("override of an unknown group: %v, want ErrNoGroup", err)
	}
	if st, _ := g.Group("api"); st.Limit != 5 || g.testGroup(t, "api") != gr {
		t.Error("a refused override changed the group")
	}

	// KeepOverride re-applies it over the file: the group runs on as it is.
	res, err := g.Reload(config(t, overrideConfig), ReloadOptions{KeepOverride: KeepAllOverrides})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.KeptOverrides, []string{"api"}) || g.testGroup(t, "api") != gr {
		t.Errorf("reload keeping overrides: %+v, group rebuilt %v", res, g.testGroup(t, "api") != gr)
	}
	if st, _ := g.Group("api"); st.Override == nil || len(st.Override.Changes) != 5 || st.Max != 5 {
		t.Errorf("override after a reload keeping it: %+v", st.Override)
	}

	// A plain reload clears it: the file's settings, from the limit in force.
	if _, err := g.Reload(config(t, overrideConfig), ReloadOptions{}); err != nil {
		t.Fatal(err)
	}
	st, _ = g.Group("api")
	if st.Override != nil || st.Max != 100 || st.Limit != 5 {
		t.Errorf("after a reload: override %+v, max %d, limit %d; want none, 100, 5", st.Override, st.Max, st.Limit)
	}

	// Overriding back to the file's values leaves no override.
	c = g.Config().Group("api").Clone()
	c.Concurrency.Max = 99
	if err := g.Override(c); err != nil {
		t.Fatal(err)
	}
	c.Concurrency.Max = 100
	if err := g.Override(c); err != nil {
		t.Fatal(err)
	}
	if st, _ := g.Group("api"); st.Override != nil {
		t.Errorf("override back to the file: %+v, want none", st.Override)
	}
}

func TestOverrideFixedLimitAndQueue(t *testing.T) {
	g := newRealGate(t, `
[[group]]
name = "g"
  [group.concurrency]
  law = "fixed"
  limit = 3
  [group.queue]
  max = 10
`)
	gr := g.testGroup(t, "g")
	c := g.Config().Group("g").Clone()
	c.Concurrency.Limit = 7
	c.Queue.Max = 0
	if err := g.Override(c); err != nil {
		t.Fatal(err)
	}
	if gr.conc.Limit() != 7 || gr.conc.MaxQueue() != 0 {
		t.Fatalf("limit %d queue %d, want 7 and 0", gr.conc.Limit(), gr.conc.MaxQueue())
	}
	// The law stays fixed at the new limit through ticks.
	g.Tick(time.Now().Add(time.Second))
	if gr.conc.Limit() != 7 {
		t.Errorf("limit after a tick %d, want 7", gr.conc.Limit())
	}
}

// TestReloadKeepsChosenOverridesInOneSwap reloads a gate whose two groups
// have overrides, keeping b's and dropping a's, while a reader watches the
// running table: it sees the old table (both overrides) or the new one (b's
// only), never one with a's override and the new config, nor one without
// b's.
func TestReloadKeepsChosenOverridesInOneSwap(t *testing.T) {
	const toml = `
[[group]]
name = "a"
match = { path_prefix = "/a/" }
  [group.concurrency]
  law = "aimd"
  initial = 10
  max = 100
  [group.targets]
  latency = "100ms"

[[group]]
name = "b"
  [group.concurrency]
  law = "fixed"
  limit = 4
`
	g, _ := newGate(t, toml)
	a := g.Config().Group("a").Clone()
	a.Concurrency.Max = 50
	if err := g.Override(a); err != nil {
		t.Fatal(err)
	}
	b := g.Config().Group("b").Clone()
	b.Concurrency.Limit = 2
	if err := g.Override(b); err != nil {
		t.Fatal(err)
	}

	bad := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			t := g.table.Load()
			oa, ob := t.byName["a"].override.Load(), t.byName["b"].override.Load()
			next := t.source == "next.toml"
			switch {
			case next && (oa != nil || ob == nil):
				bad <- fmt.Sprintf("new table with override a %v, b %v", oa != nil, ob != nil)
				return
			case !next && (oa == nil || ob == nil):
				bad <- fmt.Sprintf("old table with override a %v, b %v", oa != nil, ob != nil)
				return
			case next:
				return
			}
		}
	}()
	res, err := g.Reload(config(t, toml), ReloadOptions{Source: "next.toml",
		KeepOverride: func(name string) bool { return name == "b" }})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	select {
	case msg := <-bad:
		t.Error(msg)
	default:
	}
	if !slices.Equal(res.KeptOverrides, []string{"b"}) || len(res.DroppedOverrides) != 0 {
		t.Errorf("kept %q, dropped %v; want b kept, none dropped", res.KeptOverrides, res.DroppedOverrides)
	}
	sa, _ := g.Group("a")
	sb, _ := g.Group("b")
	if sa.Override != nil || sa.Max != 100 || sb.Override == nil || sb.Limit != 2 {
		t.Errorf("after the reload: a override %v max %d, b override %v limit %d; want none 100, kept 2",
			sa.Override != nil, sa.Max, sb.Override != nil, sb.Limit)
	}
}
