package gate

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/limits"
	"github.com/sluicehq/sluice/limits/redis"
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

func (f *fakeGlobal) Status() redis.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return redis.Status{Mode: redis.ModeRedis, Fallback: redis.FallbackLocal, Nodes: 3, RedisDecisions: f.calls}
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

func (gs *globals) build(c *configs.Group) (RateLimiter, error) {
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
func globalGroups(t *testing.T, groups ...string) *configs.Config {
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
	g, err := New(Params{Config: globalGroups(t, "keep=10", "change=10", "drop=10"), Clock: newFakeClock(), GlobalRate: gs.build})
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
	if st, _ := g.Group("change"); st.Global == nil || st.Global.RedisDecisions != 2 || st.Global.Nodes != 3 {
		t.Fatalf("change: Global = %+v, want 2 decisions by Redis, 3 nodes", st.Global)
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
	if st, _ := g.Group("change"); st.Global == nil || st.Global.RedisDecisions != 3 {
		t.Errorf("change after its rebuild: Global = %+v, want 3 decisions (2 carried over)", st.Global)
	}
	if gs.closedTwice() {
		t.Error("a limiter was closed twice")
	}

	// New refuses a config whose group cannot be built, and closes what it
	// built before it.
	var gs2 globals
	if _, err := New(Params{Config: globalGroups(t, "one=10", "bad=10"), GlobalRate: gs2.build}); err == nil {
		t.Fatal("New with a group that cannot be built succeeded")
	}
	if len(gs2.built) != 1 || len(gs2.open()) != 0 {
		t.Errorf("New refused: built %d, open %v; want 1 built and closed", len(gs2.built), gs2.open())
	}
}

// TestRedisParams: each algorithm a global rate may have maps onto the
// limits/redis quota with the same amounts.
func TestRedisParams(t *testing.T) {
	cfg := config(t, `
[redis]
address = "127.0.0.1:6379"

[[group]]
name = "tb"
match = { path_prefix = "/tb/" }
key = "header:X-Tenant"
  [group.rate]
  scope = "global"
  rate = 300
  burst = 30
  max_keys = 500

[[group]]
name = "lb"
match = { path_prefix = "/lb/" }
  [group.rate]
  scope = "global"
  algorithm = "leaky_bucket"
  rate = 0.5
  burst = 2

[[group]]
name = "fw"
match = { path_prefix = "/fw/" }
  [group.rate]
  scope = "global"
  algorithm = "fixed_window"
  limit = 100
  window = "1m"

[[group]]
name = "sw"
match = { path_prefix = "/sw/" }
  [group.rate]
  scope = "global"
  algorithm = "sliding_window"
  limit = 7
  window = "250ms"

[[group]]
name = "tbl"
match = { path_prefix = "/tbl/" }
  [group.rate]
  scope = "global"
  sync = "leased"
  rate = 2000
  burst = 400
  lease_period = "50ms"
  lease_expiry = "1s"

[[group]]
name = "fwl"
match = { path_prefix = "/fwl/" }
  [group.rate]
  scope = "global"
  sync = "leased"
  algorithm = "fixed_window"
  limit = 100
  window = "1m"
`)
	want := map[string]redis.LimiterParams{
		"tb": {Name: "tb", Algorithm: redis.TokenBucket, Rate: 300, Burst: 30, MaxKeys: 500},
		"lb": {Name: "lb", Algorithm: redis.LeakyBucket, Rate: 0.5, Burst: 2},
		"fw": {Name: "fw", Algorithm: redis.FixedWindow, Limit: 100, Window: time.Minute},
		"sw": {Name: "sw", Algorithm: redis.SlidingWindow, Limit: 7, Window: 250 * time.Millisecond},
		"tbl": {Name: "tbl", Algorithm: redis.TokenBucket, Rate: 2000, Burst: 400, Sync: redis.SyncLeased,
			Lease: redis.LeaseParams{Period: 50 * time.Millisecond, TTL: time.Second}},
		// The derived period and expiry, stated: limits/redis's defaults.
		"fwl": {Name: "fwl", Algorithm: redis.FixedWindow, Limit: 100, Window: time.Minute, Sync: redis.SyncLeased,
			Lease: redis.LeaseParams{Period: redis.DefaultLeasePeriod, TTL: redis.DefaultLeaseTTL}},
	}
	for name, w := range want {
		got, err := redisParams(cfg.Group(name))
		if err != nil || got != w {
			t.Errorf("%s: redisParams = %+v, %v; want %+v", name, got, err, w)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := cfg.Group("tb").Clone()
	bad.Rate.Algorithm = configs.AlgorithmLeakyQueue
	if _, err := redisParams(&bad); err == nil || !strings.Contains(err.Error(), "leaky_queue") {
		t.Errorf("leaky_queue: err = %v, want it refused", err)
	}
}

// quietRedisLog drops go-redis's log lines while a test dials a dead Redis
// on purpose (the daemon routes them to its logger).
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

// TestRedisRateFallback: a gate with RedisRate on a Redis that does not
// answer still decides every request, by the local fallback with the whole
// quota (one node), and its read-out says so: three failed calls, then the
// fallback mode, every decision counted as the fallback's.
func TestRedisRateFallback(t *testing.T) {
	goredis.SetLogger(quietRedisLog{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close() // nothing listens there now: connections are refused
	s, err := redis.Open(redis.StoreParams{Address: dead, Heartbeat: -1, BackoffMin: time.Hour, BackoffMax: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg := config(t, `
[redis]
address = "`+dead+`"

[[group]]
name = "api"
match = { path_prefix = "/api/" }
  [group.rate]
  scope = "global"
  rate = 1
  burst = 3
`)
	g, err := New(Params{Config: cfg, Clock: newFakeClock(), GlobalRate: RedisRate(s)})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		p := mustEnter(t, g, request("/api/x"))
		p.Done(Success)
	}
	rej := mustReject(t, g, request("/api/x"), adaptive.RejectRate)
	if rej.Rate.Limit != 3 {
		t.Errorf("rejection's limit %d, want the burst 3", rej.Rate.Limit)
	}
	st, _ := g.Group("api")
	gl := st.Global
	if gl == nil {
		t.Fatal("api: no Global status")
	}
	if gl.Mode != redis.ModeFallback || gl.FallbackDecisions != 4 || gl.RedisDecisions != 0 || gl.Errors != 3 ||
		gl.LastError == "" || gl.Fallback != redis.FallbackLocal || gl.Nodes != 1 {
		t.Errorf("api: Global = %+v; want fallback mode, 4 fallback decisions, 3 errors, a last error, local, 1 node", *gl)
	}
}
