package rls_test

import (
	"context"
	"strings"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/gate/redisrate"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/limits"
	"github.com/sluicehq/sluice/limits/redis"
	"github.com/sluicehq/sluice/rls"
)

// TestGlobalQuotaAcrossTwoNodes: two sluice nodes, each a gate and a rate
// limit service, share a per-client quota of scope "global" in a real
// Redis (exact mode: each decision in Redis). Envoys asking either node
// spend the same 4 units. The fallback is closed: a decision Redis did not
// make would be OVER_LIMIT at the first step.
func TestGlobalQuotaAcrossTwoNodes(t *testing.T) {
	srv := redistest.Start(t)
	cfg, err := configs.Parse("global.toml", []byte(strings.ReplaceAll(`
[upstream]
url = "http://127.0.0.1:9"
[redis]
address = "ADDR"
timeout = "1s"
[[group]]
name = "shared"
key = "ip"
  [group.rate]
  rate = 0.000125
  burst = 4
  scope = "global"
`, "ADDR", srv.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	mapping := rls.Mapping{Domains: []rls.Domain{{Name: "edge",
		Descriptors: []rls.Descriptor{{Entries: []rls.Entry{{Key: "remote_address"}}, Group: "shared"}}}}}
	var nodes [2]*rls.Service
	for i := range nodes {
		store, err := redis.Open(redis.StoreParams{Address: srv.Addr(), Timeout: time.Second, Fallback: limits.FallbackClosed})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources, GlobalRate: redisrate.New(store)})
		if err != nil {
			t.Fatal(err)
		}
		if nodes[i], err = rls.New(rls.Params{Gate: g, Mapping: mapping}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	ask := func(node int, hits uint32) *rlsv3.RateLimitResponse_DescriptorStatus {
		t.Helper()
		resp, err := nodes[node].ShouldRateLimit(ctx, request("edge", hits, desc("remote_address", "203.0.113.5")))
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetStatuses()[0]
	}
	for i, step := range []struct {
		node      int
		hits      uint32
		want      rlsv3.RateLimitResponse_Code
		remaining uint32
	}{
		{0, 1, ok, 3},
		{1, 2, ok, 1},
		{0, 1, ok, 0},
		{1, 1, over, 0},
		{0, 1, over, 0},
	} {
		st := ask(step.node, step.hits)
		if st.GetCode() != step.want || st.GetLimitRemaining() != step.remaining {
			t.Fatalf("step %d (node %d, %d hits): %v, want %v with %d remaining", i, step.node, step.hits, st, step.want, step.remaining)
		}
	}
}
