package admin

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/gate/redisrate"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/limits/redis"
)

// quotaConfig is a node's config with a global token bucket of RATE/s.
const quotaConfig = `
[upstream]
url = "http://127.0.0.1:9"

[redis]
address = "REDIS"

[[group]]
name = "api"
match = { path_prefix = "/api/" }
  [group.rate]
  scope = "global"
  sync = "leased"
  rate = RATE
  burst = 40

[[group]]
name = "batch"
  [group.rate]
  rate = 10
`

// quotaNode is one node: its own store on the shared Redis (no heartbeat:
// the test refreshes it) and an admin server on a gate built on it.
func quotaNode(t *testing.T, srv *redistest.Server, rate string) (*fixture, *redis.Store, string) {
	t.Helper()
	s, err := redis.Open(redis.StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	toml := strings.NewReplacer("REDIS", srv.Addr(), "RATE", rate).Replace(quotaConfig)
	return newGlobalFixture(t, toml, redisrate.New(s)), s, toml
}

// quotaOf reads GET /v1/groups/api/global.
func quotaOf(t *testing.T, f *fixture) api.Quota {
	t.Helper()
	a := f.get(t, "/v1/groups/api/global")
	var v api.Quota
	if a.status != http.StatusOK || json.Unmarshal(a.body, &v) != nil {
		t.Fatalf("GET global: %d %s", a.status, a.body)
	}
	return v
}

// TestGlobalQuotaPatch: a PATCH of a global quota on one node is written to
// Redis and applies on every node (here at its next refresh); it wins over
// every node's TOML at a reload and at a restart, until a DELETE, after
// which each node applies its own TOML again. Bad bodies are 4xx with a
// JSON error and change nothing, amounts the leased quota cannot take
// included.
func TestGlobalQuotaPatch(t *testing.T) {
	srv := redistest.Start(t)
	a, _, _ := quotaNode(t, srv, "100")
	b, bStore, bToml := quotaNode(t, srv, "100")

	if v := quotaOf(t, a); v.Rate != 100 || v.Burst != 40 || v.Version != 0 || v.Source != "config" || v.Algorithm != "token_bucket" {
		t.Fatalf("before: %+v, want the configured 100/s", v)
	}
	ans := a.do(t, req{method: http.MethodPatch, path: "/v1/groups/api/global", body: `{"rate": 50}`, token: testToken})
	var v api.Quota
	if ans.status != http.StatusOK || json.Unmarshal(ans.body, &v) != nil || v.Rate != 50 || v.Burst != 40 || v.Version != 1 || v.Source != "redis" {
		t.Fatalf("PATCH: %d %s, want 50/s version 1 from redis", ans.status, ans.body)
	}
	if g := a.group(t, "api").Rate.Global; g.QuotaVersion != 1 {
		t.Errorf("node a's read-out: quota_version %d, want 1", g.QuotaVersion)
	}
	if err := bStore.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v := quotaOf(t, b); v.Rate != 50 || v.Version != 1 {
		t.Errorf("node b after its refresh: %+v, want 50/s version 1", v)
	}

	// A reload with another TOML rate: the definition in Redis wins.
	next := strings.Replace(bToml, "rate = 100", "rate = 200", 1)
	b.setNext(parseConfig(t, next), nil)
	if r := b.do(t, req{method: http.MethodPost, path: "/v1/reload", body: "{}", token: testToken}); r.status != http.StatusOK {
		t.Fatalf("reload: %d %s", r.status, r.body)
	}
	if v := quotaOf(t, b); v.Rate != 50 || v.Version != 1 {
		t.Errorf("node b after a reload to 200/s: %+v, want the definition's 50/s", v)
	}
	// A restart (a new store and gate, the new TOML): still the definition.
	c, _, _ := quotaNode(t, srv, "300")
	if v := quotaOf(t, c); v.Rate != 50 || v.Version != 1 {
		t.Errorf("a node started with 300/s: %+v, want the definition's 50/s", v)
	}

	// Refused bodies change nothing.
	for _, tc := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/v1/groups/api/global", `{"rat": 5}`, http.StatusBadRequest, `"field": "rat"`},
		{"/v1/groups/api/global", `{"rate": "fast"}`, http.StatusBadRequest, `"field": "rate"`},
		{"/v1/groups/api/global", `[1]`, http.StatusBadRequest, "JSON object"},
		{"/v1/groups/api/global", `{}`, http.StatusBadRequest, "nothing to change"},
		{"/v1/groups/api/global", `{"rate": -1}`, http.StatusUnprocessableEntity, "rate"},
		{"/v1/groups/api/global", `{"limit": 5}`, http.StatusUnprocessableEntity, "limit"},
		// The group is leased (lease period 100ms): a burst below a
		// period's refill, as sluice check refuses it.
		{"/v1/groups/api/global", `{"burst": 4}`, http.StatusUnprocessableEntity, "burst 4 is below rate × lease period (5)"},
		{"/v1/groups/api/global", `{"rate": 1000}`, http.StatusUnprocessableEntity, "set burst ≥ 100"},
		{"/v1/groups/batch/global", `{"rate": 5}`, http.StatusConflict, "no global quota"},
		{"/v1/groups/nope/global", `{"rate": 5}`, http.StatusNotFound, "no group"},
	} {
		r := a.do(t, req{method: http.MethodPatch, path: tc.path, body: tc.body, token: testToken})
		var e apiError
		if r.status != tc.status || json.Unmarshal(r.body, &e) != nil || e.Message == "" || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("PATCH %s %s: %d %s, want %d with %q", tc.path, tc.body, r.status, r.body, tc.status, tc.want)
		}
	}
	if v := quotaOf(t, a); v.Rate != 50 || v.Version != 1 {
		t.Errorf("after refused bodies: %+v, want 50/s version 1 still", v)
	}

	// DELETE: every node back to its own TOML (b's is now 200/s).
	if r := a.do(t, req{method: http.MethodDelete, path: "/v1/groups/api/global", body: "{}", token: testToken}); r.status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if v := quotaOf(t, a); v.Rate != 100 || v.Version != 0 || v.Source != "config" {
		t.Errorf("node a after DELETE: %+v, want its 100/s", v)
	}
	if err := bStore.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v := quotaOf(t, b); v.Rate != 200 || v.Version != 0 {
		t.Errorf("node b after DELETE and a refresh: %+v, want its 200/s", v)
	}
}

// TestGlobalQuotaRedisDown: with Redis gone, a PATCH is a 503 with a JSON
// error and the quota in force is unchanged.
func TestGlobalQuotaRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	a, _, _ := quotaNode(t, srv, "100")
	srv.Kill()
	r := a.do(t, req{method: http.MethodPatch, path: "/v1/groups/api/global", body: `{"rate": 50}`, token: testToken})
	var e apiError
	if r.status != http.StatusServiceUnavailable || json.Unmarshal(r.body, &e) != nil || !strings.Contains(e.Message, "nothing is changed") {
		t.Errorf("PATCH with Redis down: %d %s, want 503", r.status, r.body)
	}
	if v := quotaOf(t, a); v.Rate != 100 || v.Version != 0 {
		t.Errorf("after: %+v, want the configured 100/s", v)
	}
}
