package rls_test

import (
	"context"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/internal/clocktest"
	"github.com/sluicehq/sluice/rls"
)

// t0 is the tests' epoch, aligned to whole minutes (fixed windows are).
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a gate on a clock moved by hand and a service on it.
type env struct {
	gate  *gate.Gate
	clock *clocktest.Clock
	svc   *rls.Service
}

func newEnv(t testing.TB, groups string, p rls.Params) *env {
	t.Helper()
	cfg, err := configs.Parse("test.toml", []byte("[upstream]\nurl = \"http://127.0.0.1:9\"\n"+groups))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	e := &env{clock: clocktest.New(t0)}
	if e.gate, err = gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources, Clock: e.clock}); err != nil {
		t.Fatalf("gate: %v", err)
	}
	p.Gate = e.gate
	if e.svc, err = rls.New(p); err != nil {
		t.Fatalf("rls.New: %v", err)
	}
	return e
}

// edgeGroups has a per-client quota of 3 per 10s and a token bucket of 2/s
// with a burst of 4 for one generic key. Their HTTP matches only keep them
// apart for configs (each group must be reachable); the service finds them
// by name.
const edgeGroups = `
[[group]]
name = "per-client"
key = "ip"
  [group.match]
  path_prefix = "/per-client"
  [group.rate]
  algorithm = "fixed_window"
  limit = 3
  window = "10s"
[[group]]
name = "checkout"
  [group.match]
  path_prefix = "/checkout"
  [group.rate]
  algorithm = "token_bucket"
  rate = 2
  burst = 4
[[group]]
name = "open"
  [group.match]
  path_prefix = "/open"
`

// edgeMapping maps the domain "edge" onto edgeGroups.
var edgeMapping = rls.Mapping{Domains: []rls.Domain{{
	Name: "edge",
	Descriptors: []rls.Descriptor{
		{Entries: []rls.Entry{{Key: "remote_address"}}, Group: "per-client"},
		{Entries: []rls.Entry{{Key: "generic_key", Value: "checkout"}}, Group: "checkout"},
		{Entries: []rls.Entry{{Key: "generic_key", Value: "open"}}, Group: "open"},
		{Entries: []rls.Entry{{Key: "tenant"}, {Key: "header_match", Value: "premium"}, {Key: "path"}}, Group: "per-client"},
	},
}}}

// desc builds a descriptor from key, value pairs.
func desc(kv ...string) *rlv3.RateLimitDescriptor {
	d := &rlv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// withHits sets a descriptor's own hits_addend.
func withHits(d *rlv3.RateLimitDescriptor, n uint64) *rlv3.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

func request(domain string, hits uint32, ds ...*rlv3.RateLimitDescriptor) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits}
}

// ask calls the service and fails the test on an error.
func (e *env) ask(t testing.TB, req *rlsv3.RateLimitRequest) *rlsv3.RateLimitResponse {
	t.Helper()
	resp, err := e.svc.ShouldRateLimit(context.Background(), req)
	if err != nil {
		t.Fatalf("ShouldRateLimit(%v): %v", req, err)
	}
	if len(resp.GetStatuses()) != len(req.GetDescriptors()) {
		t.Fatalf("%d statuses for %d descriptors", len(resp.GetStatuses()), len(req.GetDescriptors()))
	}
	return resp
}

// headers returns the response's header fields as a map of lists.
func headers(resp *rlsv3.RateLimitResponse) map[string][]string {
	m := map[string][]string{}
	for _, h := range resp.GetResponseHeadersToAdd() {
		m[h.GetKey()] = append(m[h.GetKey()], h.GetValue())
	}
	return m
}
