package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/gate/spec"
)

func TestStatus(t *testing.T) {
	f := newFixture(t, testConfig)
	f.tick(250 * time.Millisecond)
	f.clock.Advance(time.Minute)
	a := f.get(t, "/v1/status")
	if a.status != http.StatusOK || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
		t.Fatalf("status: %d %s", a.status, a.header.Get("Content-Type"))
	}
	var v api.Status
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatal(err)
	}
	st := f.gate.Status()
	checks := []struct {
		name      string
		got, want any
	}{
		{"version", v.Version, "v0.0.0-test"},
		{"uptime", v.UptimeSeconds, 60.25},
		{"ready", v.Ready, true},
		{"config source", v.Config.Source, "sluice.toml"},
		{"config hash", v.Config.Hash, st.ConfigHash},
		{"groups", strings.Join(v.Config.Groups, ","), "api,batch"},
		{"ticks", v.Control.Ticks, uint64(1)},
		{"interval", v.Control.Interval, 0.25},
		{"cpu known", v.Resources.CPU.Known, false},
		{"cpu reason", v.Resources.CPU.Reason, "fake: not set"},
		{"memory reason", v.Resources.Memory.Reason, "fake: not set"},
		{"listen", v.Admin.Listen, strings.TrimPrefix(f.url, "http://")},
		{"writable", v.Admin.Writable, true},
		{"reads need token", v.Admin.ReadsNeedToken, false},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if st.ConfigHash == "" || v.Resources.CPU.Value != nil {
		t.Errorf("hash %q, unknown cpu value %v", st.ConfigHash, v.Resources.CPU.Value)
	}
	// The unknown value is null in the JSON, not 0.
	if !strings.Contains(compactJSON(t, a.body), `"cpu":{"value":null,"known":false,"reason":"fake: not set"}`) {
		t.Errorf("unknown cpu not explained in the JSON:\n%s", a.body)
	}
}

// TestStatusCircuit: /v1/status shows the upstream's circuit breaker as
// Params.Circuit reports it (state, since when, why), and null without one.
func TestStatusCircuit(t *testing.T) {
	since := time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC)
	f := newFixture(t, testConfig, func(p *Params) {
		p.Circuit = func() (CircuitStatus, bool) {
			return CircuitStatus{State: "open", Since: since, Reason: "5 failures in a row (last: connect)"}, true
		}
	})
	body := compactJSON(t, f.get(t, "/v1/status").body)
	if want := `"circuit":{"state":"open","since":"2026-03-01T12:00:05Z","reason":"5 failures in a row (last: connect)"}`; !strings.Contains(body, want) {
		t.Errorf("status lacks %s:\n%s", want, body)
	}
	for _, opt := range []fixtureOpt{
		func(p *Params) {},
		func(p *Params) { p.Circuit = func() (CircuitStatus, bool) { return CircuitStatus{}, false } },
	} {
		f := newFixture(t, testConfig, opt)
		if body := compactJSON(t, f.get(t, "/v1/status").body); !strings.Contains(body, `"circuit":null`) {
			t.Errorf("no breaker, yet:\n%s", body)
		}
	}
}

// TestResourceSources: the status says where each guarded signal comes
// from, and a group's decision carries the figures the law was given at
// that tick, which the dashboard's cards show beside the law's reason.
func TestResourceSources(t *testing.T) {
	f := newFixture(t, testConfig)
	f.tick(250 * time.Millisecond)
	if d := f.group(t, "api").Decision; d.CPU != nil || d.Memory != nil {
		t.Errorf("decision before the sampler knows anything: cpu %v memory %v, want null", d.CPU, d.Memory)
	}
	f.res.set(0.42, 0.61)
	f.tick(250 * time.Millisecond)
	var v api.Status
	if err := json.Unmarshal(f.get(t, "/v1/status").body, &v); err != nil {
		t.Fatal(err)
	}
	r := v.Resources
	if r.CPUFrom != "cgroup" || r.CPUSource != fakeCPUSource || r.MemoryFrom != "process" ||
		r.CPUPressureFrom != "cgroup" || r.CPUPressure.Value == nil || *r.CPUPressure.Value != 0.07 {
		t.Errorf("resources %+v", r)
	}
	d := f.group(t, "api").Decision
	if d.CPU == nil || *d.CPU != 0.42 || d.Memory == nil || *d.Memory != 0.61 {
		t.Errorf("decision cpu %v memory %v, want the sample's 0.42 and 0.61", d.CPU, d.Memory)
	}
	body := compactJSON(t, f.get(t, "/v1/status").body)
	for _, w := range []string{`"cpu_source":"` + fakeCPUSource + `"`, `"cpu_pressure":{"value":0.07,"known":true}`, `"cpu_pressure_from":"cgroup"`} {
		if !strings.Contains(body, w) {
			t.Errorf("status lacks %s:\n%s", w, body)
		}
	}
}

func TestGroups(t *testing.T) {
	f := newFixture(t, testConfig)
	f.serve(t, "/api/users", 20, 30*time.Millisecond, gate.Success)
	f.serve(t, "/api/users", 2, 0, gate.Dropped)
	// A request stays in flight across the tick: its key is in use, so the
	// control loop's sweep of idle keys (one shard per tick, the shard of a
	// key depending on a random seed) cannot drop it.
	r, _ := http.NewRequest(http.MethodGet, "http://sluice/api/users", nil)
	inFlight, rej, ok := f.gate.Enter(r)
	if !ok {
		t.Fatalf("rejected: %v", rej.Reason)
	}
	defer inFlight.Done(gate.Ignored)
	f.tick(250 * time.Millisecond)

	a := f.get(t, "/v1/groups")
	if a.status != http.StatusOK {
		t.Fatalf("GET /v1/groups: %d %s", a.status, a.body)
	}
	var all api.Groups
	if err := json.Unmarshal(a.body, &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Groups) != 2 || all.Groups[0].Name != "api" || all.Groups[1].Name != "batch" {
		t.Fatalf("groups %+v, want api then batch", all.Groups)
	}

	want := api.Group{Name: "api", Law: spec.LawAIMD, Min: 1, Max: 100}
	api := f.group(t, "api")
	if api.Name != want.Name || api.Law != want.Law || api.Min != want.Min || api.Max != want.Max {
		t.Errorf("api = %s %s [%d, %d], want %s %s [%d, %d]", api.Name, api.Law, api.Min, api.Max, want.Name, want.Law, want.Min, want.Max)
	}
	if api.Limit != 9 || api.LastChange == nil || api.LastChange.From != 10 || api.LastChange.To != 9 || api.LastChange.Reason == "" {
		t.Errorf("after drops: limit %d, last change %+v; want AIMD's backoff 10 → 9 with a reason", api.Limit, api.LastChange)
	}
	if api.Latency.Samples != 20 || api.Latency.P99 == nil || *api.Latency.P99 < 0.0299 || *api.Latency.P99 > 0.0301 {
		t.Errorf("latency %+v, want 20 samples with p99 30ms", api.Latency)
	}
	if api.Requests.Success != 20 || api.Requests.Dropped != 2 || api.Requests.Rejected != 0 || len(api.Requests.ByReason) != adaptive.NumRejections-1 {
		t.Errorf("requests %+v", api.Requests)
	}
	if api.Rate == nil || api.Rate.PerSecond != 1000 || api.Keys != 1 {
		t.Errorf("rate %+v, keys %d; want 1000/s and one key", api.Rate, api.Keys)
	}
	if api.Targets.Latency == nil || *api.Targets.Latency != 0.2 || api.Targets.Quantile != 0.99 {
		t.Errorf("targets %+v, want p99 200ms", api.Targets)
	}
	if api.Config == nil || time.Duration(api.Config.Targets.Latency) != 200*time.Millisecond {
		t.Errorf("config %+v", api.Config)
	}
	if api.Override != nil || api.Floor != nil {
		t.Errorf("override %+v floor %+v, want none", api.Override, api.Floor)
	}

	batch := f.group(t, "batch")
	if batch.Rate != nil || batch.Targets.Latency != nil || batch.Latency.P50 != nil || batch.Limit != 4 {
		t.Errorf("batch: rate %+v, latency target %v, p50 %v, limit %d; want no rate, no target, no samples, 4",
			batch.Rate, batch.Targets.Latency, batch.Latency.P50, batch.Limit)
	}
	if !strings.Contains(compactJSON(t, f.get(t, "/v1/groups/batch").body), `"rate":null`) {
		t.Error(`a group without a rate limit does not show "rate":null`)
	}
}

func TestRoutingErrors(t *testing.T) {
	f := newFixture(t, testConfig)
	for _, c := range []struct {
		method, path string
		status       int
		allow, msg   string
	}{
		{http.MethodGet, "/v1/groups/nope", 404, "", `no group named "nope"`},
		{http.MethodPatch, "/v1/groups/nope", 404, "", `no group named "nope"`},
		{http.MethodGet, "/v1/nope", 404, "", "no such endpoint: /v1/nope"},
		{http.MethodGet, "/ui/missing.js", 404, "", "no such file"},
		{http.MethodDelete, "/v1/groups/api", 405, "GET, HEAD, PATCH", "does not take DELETE"},
		{http.MethodPost, "/v1/groups", 405, "GET, HEAD", "does not take POST"},
		{http.MethodGet, "/v1/reload", 405, "POST", "does not take GET"},
		{http.MethodPut, "/metrics", 405, "GET, HEAD", "does not take PUT"},
	} {
		body := ""
		if c.method == http.MethodPatch {
			body = `{"targets": {"latency": "1s"}}`
		}
		a := f.do(t, req{method: c.method, path: c.path, body: body, token: testToken})
		if a.status != c.status || a.header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want %d Allow %q", c.method, c.path, a.status, a.header.Get("Allow"), c.status, c.allow)
			continue
		}
		if msg, _ := a.json(t)["error"].(string); !strings.Contains(msg, c.msg) || !strings.HasPrefix(msg, "admin: ") {
			t.Errorf("%s %s: error %q, want it to hold %q", c.method, c.path, msg, c.msg)
		}
	}
	// HEAD works wherever GET does.
	if a := f.do(t, req{method: http.MethodHead, path: "/v1/groups"}); a.status != 200 || len(a.body) != 0 {
		t.Errorf("HEAD /v1/groups: %d, %d bytes", a.status, len(a.body))
	}
}

// patchCase is a case of TestPatch.
type patchCase struct {
	name   string
	group  string
	body   string
	status int
	field  string // of the error
	msg    string // in the error, or in the notes of a success
	check  func(t *testing.T, v api.Group)
}

// patchCases are the cases of TestPatch.
var patchCases = []patchCase{
	{name: "latency target", group: "api", body: `{"targets": {"latency": "150ms"}}`, status: 200,
		check: func(t *testing.T, v api.Group) {
			if v.Override == nil || len(v.Override.Changes) != 1 ||
				v.Override.Changes[0] != (api.FieldChange{Field: "targets.latency", From: "200ms", To: "150ms"}) || v.Override.KeepOnReload {
				t.Errorf("override %+v, want targets.latency 200ms → 150ms, not kept", v.Override)
			}
			if *v.Targets.Latency != 0.15 {
				t.Errorf("target %v, want 0.15", *v.Targets.Latency)
			}
		}},
	{name: "max below initial moves initial", group: "api", body: `{"concurrency": {"max": 5}}`, status: 200,
		msg: "concurrency.initial lowered from 10 to 5, the new max",
		check: func(t *testing.T, v api.Group) {
			if v.Limit != 5 || v.Max != 5 || v.Config.Concurrency.Initial != 5 {
				t.Errorf("limit %d max %d initial %d, want 5, 5, 5", v.Limit, v.Max, v.Config.Concurrency.Initial)
			}
		}},
	{name: "min above initial moves initial", group: "api", body: `{"concurrency": {"min": 20}}`, status: 200,
		msg: "concurrency.initial raised from 10 to 20, the new min",
		check: func(t *testing.T, v api.Group) {
			if v.Limit != 20 || v.Min != 20 {
				t.Errorf("limit %d min %d, want 20, 20", v.Limit, v.Min)
			}
		}},
	{name: "fixed limit, rate and queue, kept", group: "batch", body: `{"concurrency": {"limit": 8}, "queue": {"max": 10, "max_wait": "20ms"}, "keep_on_reload": true}`, status: 200,
		check: func(t *testing.T, v api.Group) {
			if v.Limit != 8 || v.Queue.Max != 10 || v.Override == nil || !v.Override.KeepOnReload || len(v.Override.Changes) != 3 {
				t.Errorf("limit %d queue max %d override %+v", v.Limit, v.Queue.Max, v.Override)
			}
		}},
	{name: "rate", group: "api", body: `{"rate": {"rate": 50, "burst": 10}}`, status: 200,
		check: func(t *testing.T, v api.Group) {
			if v.Rate == nil || v.Rate.PerSecond != 50 {
				t.Errorf("rate %+v, want 50/s", v.Rate)
			}
		}},

	{name: "bad duration", group: "api", body: `{"targets": {"latency": "fast"}}`, status: 400,
		field: "targets.latency", msg: `invalid duration "fast"`},
	{name: "number for a duration", group: "api", body: `{"targets": {"latency": 150}}`, status: 400,
		field: "targets.latency", msg: `must be a duration string such as "250ms", got number`},
	{name: "fraction for a whole number", group: "api", body: `{"concurrency": {"max": 1.5}}`, status: 400,
		field: "concurrency.max", msg: "must be a whole number, got number 1.5"},
	{name: "string for a number", group: "api", body: `{"targets": {"cpu": "high"}}`, status: 400,
		field: "targets.cpu", msg: "must be a number, got string"},
	{name: "null", group: "api", body: `{"targets": {"latency": null}}`, status: 400,
		field: "targets.latency", msg: "must be a value, got null"},
	{name: "law", group: "api", body: `{"concurrency": {"law": "fixed"}}`, status: 400,
		field: "concurrency.law", msg: "cannot change at runtime: edit the config file and reload"},
	{name: "match", group: "api", body: `{"match": {"path": "/x"}}`, status: 400,
		field: "match", msg: "cannot change at runtime"},
	{name: "name", group: "api", body: `{"name": "other"}`, status: 400,
		field: "name", msg: "cannot change at runtime"},
	{name: "misspelt", group: "api", body: `{"targets": {"latncy": "1s"}}`, status: 400,
		field: "targets.latncy", msg: `unknown field "targets.latncy" (did you mean "targets.latency"?)`},
	{name: "unknown", group: "api", body: `{"bogus": 1}`, status: 400,
		field: "bogus", msg: `unknown field "bogus"`},
	{name: "section not an object", group: "api", body: `{"targets": 5}`, status: 400,
		field: "targets", msg: "must be an object of the fields to change, got a number"},
	{name: "no rate to change", group: "batch", body: `{"rate": {"rate": 5}}`, status: 400,
		field: "rate", msg: "the group has no rate limit"},
	{name: "keep not a bool", group: "api", body: `{"keep_on_reload": "yes"}`, status: 400,
		field: "keep_on_reload", msg: "must be true or false, got a string"},
	{name: "empty object", group: "api", body: `{}`, status: 400, msg: "changes nothing"},
	{name: "array", group: "api", body: `[1]`, status: 400, msg: "must be one JSON object"},
	{name: "two objects", group: "api", body: `{"targets": {"cpu": 0.5}} {}`, status: 400, msg: "more than one JSON value"},
	{name: "truncated", group: "api", body: `{"targets": {"cpu": 0.5}`, status: 400, msg: "must be one JSON object"},

	{name: "min above max", group: "api", body: `{"concurrency": {"min": 50, "max": 20}}`, status: 422,
		field: "concurrency.min", msg: "must be ≤ max (20), got 50"},
	{name: "initial outside, given", group: "api", body: `{"concurrency": {"max": 5, "initial": 8}}`, status: 422,
		field: "concurrency.initial"},
	{name: "cpu out of range", group: "api", body: `{"targets": {"cpu": 1.5}}`, status: 422,
		field: "targets.cpu", msg: "must be a ratio from 0 to 1"},
	{name: "bad order", group: "api", body: `{"queue": {"order": "sideways"}}`, status: 422,
		field: "queue.order", msg: `got "sideways"`},
}

func TestPatch(t *testing.T) {
	for _, c := range patchCases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, testConfig)
			before := f.group(t, c.group)
			a := f.patch(t, c.group, c.body)
			if a.status != c.status {
				t.Fatalf("PATCH %s: %d, want %d\n%s", c.body, a.status, c.status, a.body)
			}
			if c.status != http.StatusOK {
				e := a.json(t)
				msg, _ := e["error"].(string)
				if field, _ := e["field"].(string); field != c.field || !strings.Contains(msg, c.msg) {
					t.Errorf("error %q field %q, want field %q and %q", msg, field, c.field, c.msg)
				}
				if after := f.group(t, c.group); after.Override != nil || after.Limit != before.Limit {
					t.Errorf("a refused PATCH changed the group: override %+v, limit %d → %d", after.Override, before.Limit, after.Limit)
				}
				return
			}
			var v api.Group
			if err := json.Unmarshal(a.body, &v); err != nil {
				t.Fatal(err)
			}
			if c.msg != "" && !slices.Contains(v.Notes, c.msg) {
				t.Errorf("notes %q, want %q", v.Notes, c.msg)
			}
			c.check(t, v)
			// The override stays in the read-out.
			if g := f.group(t, c.group); g.Override == nil || len(g.Notes) != 0 {
				t.Errorf("GET after PATCH: override %+v notes %q", g.Override, g.Notes)
			}
		})
	}
}

func TestPatchReportsEveryProblem(t *testing.T) {
	f := newFixture(t, testConfig)
	a := f.patch(t, "api", `{"targets": {"latncy": "1s", "cpu": "x"}, "match": {}}`)
	if a.status != http.StatusBadRequest {
		t.Fatalf("%d %s", a.status, a.body)
	}
	var e apiError
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, p := range e.Problems {
		fields = append(fields, p.Field)
	}
	if want := []string{"match", "targets.cpu", "targets.latncy"}; !slices.Equal(fields, want) || e.Field != "" {
		t.Errorf("problems %q, field %q; want %q and no single field", fields, e.Field, want)
	}
	if !strings.Contains(e.Message, "targets.cpu: must be a number") || !strings.Contains(e.Message, "match: cannot change") {
		t.Errorf("message %q does not list every problem", e.Message)
	}
}

func TestReload(t *testing.T) {
	f := newFixture(t, testConfig)
	if a := f.patch(t, "api", `{"targets": {"latency": "150ms"}, "keep_on_reload": true}`); a.status != 200 {
		t.Fatalf("PATCH api: %d %s", a.status, a.body)
	}
	if a := f.patch(t, "batch", `{"concurrency": {"limit": 2}}`); a.status != 200 {
		t.Fatalf("PATCH batch: %d %s", a.status, a.body)
	}
	if a := f.get(t, "/v1/status"); !strings.Contains(compactJSON(t, a.body), `"overrides":["api","batch"],"refused_reload":null`) {
		t.Errorf("status does not list the overrides, or shows a refused reload before any:\n%s", a.body)
	}

	// A file that changes batch's queue: api keeps its override (asked),
	// batch's is cleared.
	next := parseConfig(t, strings.Replace(testConfig, "max = 0", "max = 3", 1))
	f.setNext(next, nil)
	a := f.do(t, req{method: http.MethodPost, path: "/v1/reload", token: testToken}) // no body, no content type
	if a.status != http.StatusOK {
		t.Fatalf("reload: %d %s", a.status, a.body)
	}
	var rv api.Reload
	if err := json.Unmarshal(a.body, &rv); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rv.KeptOverrides, []string{"api"}) || !slices.Equal(rv.ClearedOverrides, []string{"batch"}) ||
		!slices.Equal(rv.Changed, []string{"batch"}) || rv.Source != "sluice.toml" || rv.Hash == "" {
		t.Errorf("reload answer %+v", rv)
	}
	api, batch := f.group(t, "api"), f.group(t, "batch")
	if api.Override == nil || !api.Override.KeepOnReload || *api.Targets.Latency != 0.15 {
		t.Errorf("api after reload: override %+v target %v; want the kept 150ms", api.Override, *api.Targets.Latency)
	}
	if batch.Override != nil || batch.Limit != 4 || batch.Queue.Max != 3 {
		t.Errorf("batch after reload: override %+v limit %d queue %d; want the file's 4 and 3", batch.Override, batch.Limit, batch.Queue.Max)
	}

	// A later PATCH without keep_on_reload un-keeps it; keep_overrides in
	// the reload body keeps it all the same.
	if a := f.patch(t, "api", `{"targets": {"latency": "120ms"}}`); a.status != 200 {
		t.Fatalf("PATCH api: %d %s", a.status, a.body)
	}
	a = f.do(t, req{method: http.MethodPost, path: "/v1/reload", body: `{"keep_overrides": true}`, token: testToken})
	if a.status != http.StatusOK || !strings.Contains(compactJSON(t, a.body), `"kept_overrides":["api"]`) {
		t.Errorf("reload keeping overrides: %d %s", a.status, a.body)
	}
	a = f.do(t, req{method: http.MethodPost, path: "/v1/reload", body: `{}`, token: testToken})
	if a.status != http.StatusOK || !strings.Contains(compactJSON(t, a.body), `"cleared_overrides":["api"]`) {
		t.Errorf("plain reload: %d %s", a.status, a.body)
	}
	if api := f.group(t, "api"); api.Override != nil || *api.Targets.Latency != 0.2 {
		t.Errorf("api after a plain reload: override %+v target %v", api.Override, *api.Targets.Latency)
	}

	// A bad file is refused whole, with its problems; the running config stays.
	_, bad := configs.Parse("sluice.toml", []byte(strings.Replace(testConfig, `law = "aimd"`, `law = "aimdd"`, 1)))
	if bad == nil {
		t.Fatal("the bad config parses")
	}
	f.setNext(nil, bad)
	hash := f.gate.Status().ConfigHash
	a = f.do(t, req{method: http.MethodPost, path: "/v1/reload", token: testToken, contentType: "application/json"})
	e := a.json(t)
	if a.status != http.StatusUnprocessableEntity || !strings.Contains(e["error"].(string), "the running one stays") {
		t.Errorf("bad reload: %d %s", a.status, a.body)
	}
	if ps, _ := e["problems"].([]any); len(ps) == 0 || !strings.Contains(ps[0].(map[string]any)["error"].(string), "sluice.toml:") {
		t.Errorf("bad reload problems %v, want them with file and line", e["problems"])
	}
	if f.gate.Status().ConfigHash != hash {
		t.Error("a refused reload changed the config")
	}
	var st struct { // api is a group here
		Config struct {
			RefusedReload *struct {
				At        time.Time
				By, Error string
			} `json:"refused_reload"`
		}
	}
	if err := json.Unmarshal(f.get(t, "/v1/status").body, &st); err != nil {
		t.Fatal(err)
	}
	if r := st.Config.RefusedReload; r == nil || !strings.Contains(r.Error, `"aimdd"`) || !strings.HasPrefix(r.By, "admin API from 127.0.0.1:") || !r.At.Equal(f.clock.Now()) {
		t.Errorf("status after a refused reload: refused_reload %+v, want its error (aimdd), who asked and when", r)
	}
	f.setNext(nil, errors.New("configs: open sluice.toml: permission denied"))
	if a := f.do(t, req{method: http.MethodPost, path: "/v1/reload", token: testToken, contentType: "application/json"}); a.status != 500 ||
		!strings.Contains(a.json(t)["error"].(string), "permission denied") {
		t.Errorf("unreadable file: %d %s", a.status, a.body)
	}
	if a := f.do(t, req{method: http.MethodPost, path: "/v1/reload", body: `{"keep": 1}`, token: testToken}); a.status != 400 {
		t.Errorf("reload with a bad body: %d %s", a.status, a.body)
	}

	// Every attempt through the server is counted, and told to OnReload.
	if s := metricText(t, f.srv.Registry(), "sluice_config_reloads_total"); !strings.Contains(s, `sluice_config_reloads_total{result="success"} 3`) ||
		!strings.Contains(s, `sluice_config_reloads_total{result="failure"} 2`) {
		t.Errorf("reload counters:\n%s", s)
	}
}

func TestReloadWithoutLoader(t *testing.T) {
	var reported error
	f := newFixture(t, testConfig, func(p *Params) {
		p.Load = nil
		p.OnReload = func(_ ReloadReport, err error) { reported = err }
	})
	a := f.do(t, req{method: http.MethodPost, path: "/v1/reload", token: testToken, contentType: "application/json"})
	if a.status != http.StatusNotImplemented || !errors.Is(reported, ErrNoLoad) {
		t.Errorf("reload without a loader: %d %s, reported %v", a.status, a.body, reported)
	}
}

func TestHealth(t *testing.T) {
	var notReady error = errors.New("upstream has not answered yet")
	f := newFixture(t, testConfig, func(p *Params) { p.Ready = func() error { return notReady } })
	if a := f.get(t, "/livez"); a.status != 200 || a.json(t)["status"] != "ok" {
		t.Errorf("livez: %d %s", a.status, a.body)
	}
	a := f.get(t, "/readyz")
	if a.status != http.StatusServiceUnavailable || a.json(t)["error"] != "upstream has not answered yet" {
		t.Errorf("readyz, not ready: %d %s", a.status, a.body)
	}
	if s := f.get(t, "/v1/status").json(t); s["ready"] != false || s["not_ready"] != "upstream has not answered yet" {
		t.Errorf("status when not ready: ready %v, not_ready %v", s["ready"], s["not_ready"])
	}
	notReady = nil
	if a := f.get(t, "/readyz"); a.status != 200 || a.json(t)["status"] != "ready" {
		t.Errorf("readyz, ready: %d %s", a.status, a.body)
	}
}

func TestPageAndProfiles(t *testing.T) {
	f := newFixture(t, testConfig)
	for _, c := range []struct{ path, ctype, holds string }{
		{"/", "text/html", `<script src="/ui/app.js"`},
		{"/ui/app.js", "text/javascript", "/v1/history"},
		{"/ui/style.css", "text/css", ".chart"},
		{"/debug/pprof/", "text/html", "goroutine"},
		{"/debug/pprof/cmdline", "text/plain", "admin.test"},
		{"/metrics", "text/plain", "sluice_concurrency_limit"},
	} {
		a := f.get(t, c.path)
		if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), c.ctype) || !strings.Contains(string(a.body), c.holds) {
			t.Errorf("GET %s: %d %s, %d bytes; want %s holding %q", c.path, a.status, a.header.Get("Content-Type"), len(a.body), c.ctype, c.holds)
		}
	}
	// The page loads nothing from elsewhere, and the policy says so.
	remote := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import|fetch\(\s*["'](https?:)?//`)
	for _, p := range []string{"/", "/ui/app.js", "/ui/style.css"} {
		if m := remote.FindString(string(f.get(t, p).body)); m != "" {
			t.Errorf("%s loads from elsewhere: %q", p, m)
		}
	}
	if csp := f.get(t, "/").header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

// steerCounter counts the calls that change the running config.
type steerCounter struct {
	Gate
	reloads, overrides atomic.Int32
}

func (c *steerCounter) Reload(cfg gate.Config, o gate.ReloadOptions) (gate.ReloadResult, error) {
	c.reloads.Add(1)
	return c.Gate.Reload(cfg, o)
}

func (c *steerCounter) Override(g gate.Group) error {
	c.overrides.Add(1)
	return c.Gate.Override(g)
}

// TestReloadIsOneSwap: a reload that keeps one override and clears another
// is one Reload of the gate, with no Override after it to put file values
// back (a moment in which the new config runs with an override it drops).
func TestReloadIsOneSwap(t *testing.T) {
	var sc *steerCounter
	f := newFixture(t, testConfig, func(p *Params) {
		sc = &steerCounter{Gate: p.Gate}
		p.Gate = sc
	})
	if a := f.patch(t, "api", `{"targets": {"latency": "150ms"}, "keep_on_reload": true}`); a.status != 200 {
		t.Fatalf("PATCH api: %d %s", a.status, a.body)
	}
	if a := f.patch(t, "batch", `{"concurrency": {"limit": 2}}`); a.status != 200 {
		t.Fatalf("PATCH batch: %d %s", a.status, a.body)
	}
	sc.overrides.Store(0)
	rep, err := f.srv.Reload(context.Background(), "SIGHUP")
	if err != nil {
		t.Fatal(err)
	}
	if want := []GroupFields{{"batch", []gate.FieldChange{{Path: "concurrency.limit", From: "2", To: "4"}}}}; rep.By != "SIGHUP" || !reflect.DeepEqual(rep.Fields, want) {
		t.Errorf("the reload's report: by %q, fields %+v; want SIGHUP and %+v (the cleared override)", rep.By, rep.Fields, want)
	}
	if n, m := sc.reloads.Load(), sc.overrides.Load(); n != 1 || m != 0 {
		t.Errorf("the reload made %d reloads and %d overrides of the gate, want 1 and 0", n, m)
	}
	if !slices.Equal(rep.KeptOverrides, []string{"api"}) || !slices.Equal(rep.Cleared, []string{"batch"}) {
		t.Errorf("kept %q, cleared %q; want api kept, batch cleared", rep.KeptOverrides, rep.Cleared)
	}
	if batch := f.group(t, "batch"); batch.Override != nil || batch.Limit != 4 {
		t.Errorf("batch after reload: override %+v limit %d; want the file's 4", batch.Override, batch.Limit)
	}
}
