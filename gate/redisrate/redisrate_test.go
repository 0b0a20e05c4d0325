package redisrate

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/internal/clocktest"
	"github.com/sluicehq/sluice/limits"
	"github.com/sluicehq/sluice/limits/redis"
)

// config parses a test config, an upstream plus the given TOML, and
// converts it as the daemon does.
func config(t testing.TB, toml string) gate.Config {
	t.Helper()
	cfg, err := configs.Parse("test.toml", []byte("[upstream]\nurl = \"http://127.0.0.1:9\"\n"+toml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg.Gate()
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
		"tb": {Name: "tb", Algorithm: redis.TokenBucket, Rate: 300, Burst: 30, MaxKeys: 500, Sync: limits.SyncExact},
		"lb": {Name: "lb", Algorithm: redis.LeakyBucket, Rate: 0.5, Burst: 2, Sync: limits.SyncExact},
		"fw": {Name: "fw", Algorithm: redis.FixedWindow, Limit: 100, Window: time.Minute, Sync: limits.SyncExact},
		"sw": {Name: "sw", Algorithm: redis.SlidingWindow, Limit: 7, Window: 250 * time.Millisecond, Sync: limits.SyncExact},
		"tbl": {Name: "tbl", Algorithm: redis.TokenBucket, Rate: 2000, Burst: 400, Sync: limits.SyncLeased,
			Lease: redis.LeaseParams{Period: 50 * time.Millisecond, TTL: time.Second}},
		// The derived period and expiry, stated: limits/redis's defaults.
		"fwl": {Name: "fwl", Algorithm: redis.FixedWindow, Limit: 100, Window: time.Minute, Sync: limits.SyncLeased,
			Lease: redis.LeaseParams{Period: redis.DefaultLeasePeriod, TTL: redis.DefaultLeaseTTL}},
	}
	for name, w := range want {
		got, err := Params(cfg.Group(name))
		if err != nil || got != w {
			t.Errorf("%s: Params = %+v, %v; want %+v", name, got, err, w)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := cfg.Group("tb").Clone()
	bad.Rate.Algorithm = "leaky_queue"
	if _, err := Params(&bad); err == nil || !strings.Contains(err.Error(), "leaky_queue") {
		t.Errorf("leaky_queue: err = %v, want it refused", err)
	}
}

// quietRedisLog drops go-redis's log lines while a test dials a dead Redis
// on purpose (the daemon routes them to its logger).
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

// TestRedisRateFallback: a gate with New's limiters on a Redis that does not
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
	g, err := gate.New(gate.Params{Config: cfg, Clock: clocktest.New(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)),
		Resources: gate.NoResources, GlobalRate: New(s)})
	if err != nil {
		t.Fatal(err)
	}
	enter := func() (gate.Rejection, bool) {
		p, rej, ok := g.Enter(httptest.NewRequest("GET", "/api/x", nil))
		if ok {
			p.Done(gate.Success)
		}
		return rej, ok
	}
	for i := range 3 {
		if rej, ok := enter(); !ok {
			t.Fatalf("request %d rejected: %v", i, rej.Reason)
		}
	}
	rej, ok := enter()
	if ok || rej.Reason != adaptive.RejectRate {
		t.Fatalf("fourth request: admitted %v, reason %v; want rejected for rate", ok, rej.Reason)
	}
	if rej.Rate.Limit != 3 {
		t.Errorf("rejection's limit %d, want the burst 3", rej.Rate.Limit)
	}
	st, _ := g.Group("api")
	gl := st.Global
	if gl == nil {
		t.Fatal("api: no Global status")
	}
	if gl.Mode != redis.ModeFallback.String() || gl.FallbackDecisions != 4 || gl.StoreDecisions != 0 || gl.Errors != 3 ||
		gl.LastError == "" || gl.Fallback != limits.FallbackLocal || gl.Nodes != 1 {
		t.Errorf("api: Global = %+v; want fallback mode, 4 fallback decisions, 3 errors, a last error, local, 1 node", *gl)
	}
}
