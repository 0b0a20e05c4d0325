package gate

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/limits"
)

// fakeGlobal is a global rate limiter that admits everything and records
// its life: the gate builds it through Params.GlobalRate, decides on it, and
// must close it when its group goes.
type fakeGlobal struct {
	name   string
	rate   float64
	mu     sync.Mutex
	calls  uint64
	closed int
}

func (f *fakeGlobal) AllowAt(string, time.Time, int64) limits.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return limits.Result{Allowed: true, Limit: 10, Remaining: 9}
}

func (f *fakeGlobal) Policy() limits.Policy { return limits.Policy{Quota: 10, Window: time.Second} }

func (f *fakeGlobal) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed++
	return nil
}

func (f *fakeGlobal) GlobalStatus() GlobalStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return GlobalStatus{Mode: "redis", Fallback: "local", StoreStatus: limits.StoreStatus{Nodes: 3, StoreDecisions: f.calls}}
}

func (f *fakeGlobal) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed > 0
}

// globals builds fakeGlobals and keeps every one it built; a group named
// "bad" cannot be built.
type globals struct {
	mu    sync.Mutex
	built []*fakeGlobal
}

func (gs *globals) build(c *Group) (RateLimiter, error) {
	if c.Name == "bad" {
		return nil, errors.New("cannot build it")
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	f := &fakeGlobal{name: c.Name, rate: c.Rate.PerSecond()}
	gs.built = append(gs.built, f)
	return f, nil
}

// open returns the limiters built and not closed, as "name@rate".
func (gs *globals) open() []string {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var out []string
	for _, f := range gs.built {
		if !f.isClosed() {
			out = append(out, f.name+"@"+strconv.FormatFloat(f.rate, 'g', -1, 64))
		}
	}
	slices.Sort(out)
	return out
}

// closedTwice reports whether a limiter was closed more than once.
func (gs *globals) closedTwice() bool {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for _, f := range gs.built {
		f.mu.Lock()
		twice := f.closed > 1
		f.mu.Unlock()
		if twice {
			return true
		}
	}
	return false
}

// globalGroups is a config with a [redis] section and the named global
// token buckets, each "name=rate".
func globalGroups(t *testing.T, groups ...string) Config {
	t.Helper()
	toml := "[redis]\naddress = \"127.0.0.1:6379\"\n"
	for _, g := range groups {
		name, rate, _ := strings.Cut(g, "=")
		toml += "[[group]]\nname = \"" + name + "\"\nmatch = { path_prefix = \"/" + name + "/\" }\n" +
			"  [group.rate]\n  scope = \"global\"\n  rate = " + rate + "\n  burst = 5\n"
	}
	return config(t, toml)
}

// TestGlobalRateLifecycle: the gate builds a global limiter per group with
// a global rate, keeps it while its group runs unchanged, closes it when a
// reload replaces or removes its group, and closes what it built for a
// config it refuses. Its status shows in the group's read-out, its counts
// kept across a rebuild.
func TestGlobalRateLifecycle(t *testing.T) {
	var gs globals
	g, err := New(Params{Config: globalGroups(t, "keep=10", "change=10", "drop=10"), Clock: newFakeClock(), GlobalRate: gs.build, Resources: NoResources})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gs.open(), []string{"change@10", "drop@10", "keep@10"}; !slices.Equal(got, want) {
		t.Fatalf("after New: open limiters %v, want %v", got, want)
	}
	for range 2 {
		p := mustEnter(t, g, request("/change/x"))
		p.Done(Success)
	}
	if st, _ := g.Group("change"); st.Global == nil || st.Global.StoreDecisions != 2 || st.Global.Nodes != 3 {
		t.Fatalf("change: Global = %+v, want 2 decisions by the store, 3 nodes", st.Global)
	}
	if st, _ := g.Group(configs.CatchAllName); st.Global != nil {
		t.Errorf("the catch-all (no rate) has Global = %+v, want nil", st.Global)
	}

	// A refused config: the limiters built for it are closed, the running
	// ones stay open.
	if _, err := g.Reload(globalGroups(t, "keep=10", "change=20", "fresh=10", "bad=10"), ReloadOptions{}); err == nil {
		t.Fatal("a reload with a group that cannot be built succeeded")
	}
	if got, want := gs.open(), []string{"change@10", "drop@10", "keep@10"}; !slices.Equal(got, want) {
		t.Fatalf("after a refused reload: open limiters %v, want %v", got, want)
	}

	res, err := g.Reload(globalGroups(t, "keep=10", "change=20"), ReloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Changed, []string{"change"}) || !slices.Equal(res.Removed, []string{"drop"}) {
		t.Fatalf("Reload = %+v", res)
	}
	if got, want := gs.open(), []string{"change@20", "keep@10"}; !slices.Equal(got, want) {
		t.Fatalf("after the reload: open limiters %v, want %v", got, want)
	}
	p := mustEnter(t, g, request("/change/x"))
	p.Done(Success)
	if st, _ := g.Group("change"); st.Global == nil || st.Global.StoreDecisions != 3 {
		t.Errorf("change after its rebuild: Global = %+v, want 3 decisions (2 carried over)", st.Global)
	}
	if gs.closedTwice() {
		t.Error("a limiter was closed twice")
	}

	// New refuses a config whose group cannot be built, and closes what it
	// built before it.
	var gs2 globals
	if _, err := New(Params{Config: globalGroups(t, "one=10", "bad=10"), GlobalRate: gs2.build, Resources: NoResources}); err == nil {
		t.Fatal("New with a group that cannot be built succeeded")
	}
	if len(gs2.built) != 1 || len(gs2.open()) != 0 {
		t.Errorf("New refused: built %d, open %v; want 1 built and closed", len(gs2.built), gs2.open())
	}
}
