package admin

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/limits"
)

// globalConfig has two groups with a global quota and one with a local rate.
const globalConfig = `
[upstream]
url = "http://127.0.0.1:9"

[redis]
address = "127.0.0.1:6379"
nodes = 2

[[group]]
name = "api"
match = { path_prefix = "/api/" }
  [group.rate]
  scope = "global"
  rate = 100

[[group]]
name = "search"
match = { path_prefix = "/search/" }
  [group.rate]
  scope = "global"
  algorithm = "fixed_window"
  limit = 50
  window = "1s"

[[group]]
name = "batch"
  [group.rate]
  rate = 10
`

// fakeQuota is a global quota whose status the test sets, as a
// gate/redisrate Limiter reports it.
type fakeQuota struct {
	mu sync.Mutex
	st gate.GlobalStatus
}

func (q *fakeQuota) AllowAt(string, time.Time, int64) limits.Result {
	return limits.Result{Allowed: true, Limit: 100, Remaining: 99}
}
func (q *fakeQuota) Policy() limits.Policy { return limits.Policy{Quota: 100, Window: time.Second} }

func (q *fakeQuota) GlobalStatus() gate.GlobalStatus {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.st
}

func (q *fakeQuota) set(st gate.GlobalStatus) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.st = st
}

// globalFixture serves globalConfig; the quotas of api and search are
// fakes, in fallback mode with known counts.
func globalFixture(t *testing.T) (*fixture, map[string]*fakeQuota) {
	t.Helper()
	link := gate.GlobalStatus{Mode: "fallback", Fallback: "local", StoreStatus: limits.StoreStatus{
		Since: t0, NextProbe: t0.Add(2 * time.Second),
		LastError: "dial tcp 127.0.0.1:6379: connect: connection refused", LastErrorAt: t0.Add(time.Millisecond),
		Nodes: 3, ObservedNodes: 3, Timeout: 7 * time.Millisecond,
	}}
	api, search := link, link
	api.StoreDecisions, api.FallbackDecisions, api.Errors, api.Timeouts = 10, 5, 4, 1
	api.LateBound, api.LateAdmitted = 1.5, 3
	search.StoreDecisions, search.FallbackDecisions, search.LateBound = 1, 2, -1
	quotas := map[string]*fakeQuota{"api": {st: api}, "search": {st: search}}
	f := newGlobalFixture(t, globalConfig, func(c *gate.Group) (gate.RateLimiter, error) { return quotas[c.Name], nil })
	return f, quotas
}

// TestGlobalStatus: /v1/status shows the link to Redis (mode, since, next
// probe, last error, nodes configured, observed and shared by) and the sums
// of the global quotas; each group's rate shows its own quota; without a
// global quota, "redis" is null.
func TestGlobalStatus(t *testing.T) {
	f, _ := globalFixture(t)
	a := f.get(t, "/v1/status")
	var v api.Status
	if err := json.Unmarshal(a.body, &v); err != nil || a.status != http.StatusOK {
		t.Fatalf("status: %d %v\n%s", a.status, err, a.body)
	}
	r := v.Redis
	if r == nil {
		t.Fatalf("no redis in %s", a.body)
	}
	observed, lateBound := 3, 1.5
	want := api.Redis{
		Mode: "fallback", Since: t0, NextProbe: when(t0.Add(2 * time.Second)),
		LastError: "dial tcp 127.0.0.1:6379: connect: connection refused", LastErrorAt: when(t0.Add(time.Millisecond)),
		Fallback: "local", Nodes: api.Nodes{Configured: 2, Observed: &observed, Share: 3},
		Groups: []string{"api", "search"}, Decisions: api.Decisions{Redis: 11, Fallback: 7}, Errors: 4, Timeouts: 1,
		Timeout: 0.007, Late: []api.Late{{Group: "api", Bound: &lateBound, Admitted: 3}, {Group: "search"}},
	}
	if got, w := mustJSON(t, r), mustJSON(t, want); got != w {
		t.Errorf("redis =\n%s\nwant\n%s", got, w)
	}

	wantGlobal := api.Global{Mode: "fallback", Fallback: "local", Decisions: api.Decisions{Redis: 10, Fallback: 5}, Errors: 4, Timeouts: 1}
	api := f.group(t, "api")
	if api.Rate == nil || api.Rate.Global == nil {
		t.Fatalf("api: rate %+v, want a global quota", api.Rate)
	}
	if g := *api.Rate.Global; g != wantGlobal {
		t.Errorf("api: global = %+v", g)
	}
	if b := f.group(t, "batch"); b.Rate == nil || b.Rate.Global != nil {
		t.Errorf("batch (local rate): rate %+v, want no global", b.Rate)
	}
	if s := string(f.get(t, "/v1/groups/batch").body); strings.Contains(s, `"global"`) {
		t.Errorf("batch's read-out names a global quota:\n%s", s)
	}

	plain := newFixture(t, testConfig)
	if s := compactJSON(t, plain.get(t, "/v1/status").body); !strings.Contains(s, `"redis":null`) {
		t.Errorf("without a global quota, want \"redis\":null in\n%s", s)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGlobalMetrics: the link's state and each global quota's counts are
// read at scrape time; nothing is exported without a global quota.
func TestGlobalMetrics(t *testing.T) {
	f, quotas := globalFixture(t)
	reg := f.srv.Registry()
	names := []string{"sluice_redis_up", "sluice_redis_decisions_total", "sluice_redis_errors_total",
		"sluice_redis_nodes", "sluice_redis_observed_nodes"}
	want := `# HELP sluice_redis_decisions_total Decisions of the group's global quota, by source: redis, or fallback (Redis down, failing or too slow).
# TYPE sluice_redis_decisions_total counter
sluice_redis_decisions_total{group="api",source="fallback"} 5
sluice_redis_decisions_total{group="api",source="redis"} 10
sluice_redis_decisions_total{group="search",source="fallback"} 2
sluice_redis_decisions_total{group="search",source="redis"} 1
# HELP sluice_redis_errors_total Calls to Redis for the group's global quota that failed, by kind: timeout (beyond redis.timeout) or error.
# TYPE sluice_redis_errors_total counter
sluice_redis_errors_total{group="api",kind="error"} 3
sluice_redis_errors_total{group="api",kind="timeout"} 1
sluice_redis_errors_total{group="search",kind="error"} 0
sluice_redis_errors_total{group="search",kind="timeout"} 0
# HELP sluice_redis_nodes The node count the local fallback shares each global quota by: the larger of redis.nodes and the nodes seen alive.
# TYPE sluice_redis_nodes gauge
sluice_redis_nodes 3
# HELP sluice_redis_observed_nodes sluice nodes seen alive through their heartbeats in Redis; absent before the first heartbeat.
# TYPE sluice_redis_observed_nodes gauge
sluice_redis_observed_nodes 3
# HELP sluice_redis_up 1 while global quotas are decided by Redis, 0 while Redis is down and the fallback decides them; absent without a global quota.
# TYPE sluice_redis_up gauge
sluice_redis_up 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	// Redis is back: up, read at the next scrape.
	for _, q := range quotas {
		st := q.GlobalStatus()
		st.Mode, st.NextProbe = "redis", time.Time{}
		q.set(st)
	}
	if s := metricText(t, reg, "sluice_redis_up"); !strings.Contains(s, "sluice_redis_up 1") {
		t.Errorf("after Redis came back:\n%s", s)
	}

	problems, err := testutil.CollectAndLint(newGateCollector(f.gate, "v1", "abc123"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	plain := newFixture(t, testConfig)
	if s := metricText(t, plain.srv.Registry(), names...); s != "" {
		t.Errorf("without a global quota:\n%s", s)
	}
}

// TestGlobalLeaseReadout: a leased global quota shows its sync, its
// definition's version, and its lease (the bound, what is leased out and
// held, the local decisions and the renewals) in its group's read-out and
// in the metrics; an exact one shows no lease and exports no lease metric.
func TestGlobalLeaseReadout(t *testing.T) {
	f, quotas := globalFixture(t)
	st := quotas["search"].GlobalStatus()
	st.Mode, st.NextProbe = "redis", time.Time{}
	st.Sync, st.QuotaVersion = "leased", 4
	st.Bound, st.Outstanding, st.Held, st.Leases = 300, 270, 80, 1
	st.LeasedUnits, st.RefusedUnits, st.Renewals, st.RenewalErrors, st.LastRenewal = 1900, 4100, 97, 2, t0
	quotas["search"].set(st)
	ex := quotas["api"].GlobalStatus()
	ex.Sync = "exact"
	quotas["api"].set(ex)

	g := f.group(t, "search").Rate.Global
	want := api.Lease{Bound: 300, Outstanding: 270, Held: 80, Keys: 1, Admitted: 1900, Refused: 4100,
		Renewals: 97, RenewalErrors: 2, LastRenewal: when(t0)}
	if g == nil || g.Sync != "leased" || g.QuotaVersion != 4 || g.Lease == nil || mustJSON(t, *g.Lease) != mustJSON(t, want) {
		t.Fatalf("search: global = %s, want leased, version 4, lease %s", mustJSON(t, g), mustJSON(t, want))
	}
	if a := f.group(t, "api").Rate.Global; a.Sync != "exact" || a.Lease != nil {
		t.Errorf("api: global = %s, want exact without a lease", mustJSON(t, a))
	}

	var sv api.Status
	if a := f.get(t, "/v1/status"); json.Unmarshal(a.body, &sv) != nil || sv.Redis == nil ||
		mustJSON(t, sv.Redis.Leased) != mustJSON(t, []api.Leased{{Group: "search", Bound: 300, Outstanding: 270}}) {
		t.Errorf("/v1/status: want the leased quota's bound in redis.leased:\n%s", a.body)
	}

	reg := f.srv.Registry()
	text := metricText(t, reg, "sluice_redis_lease_bound_units", "sluice_redis_lease_outstanding_units",
		"sluice_redis_lease_held_units", "sluice_redis_lease_decided_units_total", "sluice_redis_lease_renewals_total")
	for _, line := range []string{
		`sluice_redis_lease_bound_units{group="search"} 300`,
		`sluice_redis_lease_outstanding_units{group="search"} 270`,
		`sluice_redis_lease_held_units{group="search"} 80`,
		`sluice_redis_lease_decided_units_total{group="search",result="admitted"} 1900`,
		`sluice_redis_lease_decided_units_total{group="search",result="refused"} 4100`,
		`sluice_redis_lease_renewals_total{group="search",result="error"} 2`,
		`sluice_redis_lease_renewals_total{group="search",result="ok"} 97`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("want %s in\n%s", line, text)
		}
	}
	if strings.Contains(text, `group="api"`) {
		t.Errorf("the exact quota exports lease metrics:\n%s", text)
	}
	problems, err := testutil.CollectAndLint(newGateCollector(f.gate, "v1", "abc123"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
