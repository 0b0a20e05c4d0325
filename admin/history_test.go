package admin

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate"
)

func TestHistoryRatesFromCounters(t *testing.T) {
	f := newFixture(t, testConfig)
	h := newHistory(10)
	h.sample(f.clock.Now(), f.gate) // the first point has no rates

	// One second: 40 successes and 10 drops in api; batch rejects 3.
	f.serve(t, "/api/a", 40, 20*time.Millisecond, gate.Success)
	f.serve(t, "/api/a", 10, 0, gate.Dropped)
	hold := make([]gate.Pass, 4)
	for i := range hold {
		r, _ := http.NewRequest(http.MethodGet, "http://sluice/b", nil)
		hold[i], _, _ = f.gate.Enter(r)
	}
	for range 3 {
		r, _ := http.NewRequest(http.MethodGet, "http://sluice/b", nil)
		if _, _, ok := f.gate.Enter(r); ok {
			t.Fatal("batch admitted over its limit")
		}
	}
	f.tick(time.Second)
	h.sample(f.clock.Now(), f.gate)

	v := h.view(0, time.Second)
	if len(v.Time) != 2 || v.Time[1]-v.Time[0] != 1000 || len(v.Groups) != 2 {
		t.Fatalf("view: %d points, times %v, %d groups", len(v.Time), v.Time, len(v.Groups))
	}
	api, batch := v.Groups[0], v.Groups[1]
	checks := []struct {
		name      string
		got, want float64
	}{
		{"api admitted/s at the first point", api.Series["admitted"][0], math.NaN()},
		{"api admitted/s", api.Series["admitted"][1], 50},
		{"api dropped/s", api.Series["dropped"][1], 10},
		{"api rejected/s", api.Series["rejected"][1], 0},
		{"api p99", api.Series["p99"][1], 0.02},
		{"api latency target", api.Series["latency_target"][1], 0.2},
		{"api token rate", api.Series["token_rate"][1], 1000},
		{"api limit (AIMD backed off)", api.Series["limit"][1], 9},
		{"batch in flight", batch.Series["in_flight"][1], 4},
		{"batch rejected/s", batch.Series["rejected"][1], 3},
		{"batch latency target (off)", batch.Series["latency_target"][1], math.NaN()},
		{"batch token rate (none)", batch.Series["token_rate"][1], math.NaN()},
		{"cpu (unknown)", v.CPU[1], math.NaN()},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if r := batch.RejectedByReason["concurrency"]; len(r) != 2 || r[1] != 3 || len(batch.RejectedByReason) != 1 || len(api.RejectedByReason) != 0 {
		t.Errorf("rejections by reason: batch %v, api %v; want batch concurrency 3/s alone", batch.RejectedByReason, api.RejectedByReason)
	}
	if api.Quantile != 0.99 || api.Law != "aimd" {
		t.Errorf("api quantile %v law %q", api.Quantile, api.Law)
	}
	for i := range hold {
		hold[i].Done(gate.Success)
	}
}

func TestHistoryRingAndSince(t *testing.T) {
	f := newFixture(t, testConfig)
	h := newHistory(3)
	var times []int64
	for range 5 {
		now := f.clock.Advance(time.Second)
		h.sample(now, f.gate)
		times = append(times, now.UnixMilli())
	}
	v := h.view(0, time.Second)
	if len(v.Time) != 3 || v.Time[0] != times[2] || v.Time[2] != times[4] || v.Capacity != 3 {
		t.Errorf("ring of 3 after 5 points: %v, want the last three %v", v.Time, times[2:])
	}
	for _, g := range v.Groups {
		for name, s := range g.Series {
			if len(s) != 3 {
				t.Errorf("%s %s: %d points", g.Name, name, len(s))
			}
		}
	}
	if v := h.view(times[3], time.Second); len(v.Time) != 1 || v.Time[0] != times[4] || len(v.Groups[0].Series["limit"]) != 1 {
		t.Errorf("since the 4th point: %v", v.Time)
	}
	if v := h.view(times[4], time.Second); len(v.Time) != 0 {
		t.Errorf("since the last point: %v", v.Time)
	}
}

func TestHistoryFollowsReloads(t *testing.T) {
	f := newFixture(t, testConfig)
	h := newHistory(5)
	h.sample(f.clock.Advance(time.Second), f.gate)
	if _, err := f.gate.Reload(parseConfig(t, strings.Replace(testConfig, `name = "api"`, `name = "web"`, 1)).Gate(), gate.ReloadOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sample(f.clock.Advance(time.Second), f.gate)
	v := h.view(0, time.Second)
	var names []string
	for _, g := range v.Groups {
		names = append(names, g.Name)
	}
	if strings.Join(names, ",") != "web,batch" {
		t.Fatalf("groups after the reload: %v", names)
	}
	if web := v.Groups[0].Series["limit"]; !math.IsNaN(web[0]) || web[1] != 10 {
		t.Errorf("a group added by a reload: limit %v, want null then 10", web)
	}
}

func TestHistoryJSON(t *testing.T) {
	f := newFixture(t, testConfig)
	f.serve(t, "/api/a", 4, 10*time.Millisecond, gate.Success)
	f.tick(250 * time.Millisecond)
	// Serve took its first point at start; take one more.
	f.srv.history.sample(f.clock.Advance(time.Second), f.gate)
	a := f.get(t, "/v1/history")
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	var v struct {
		Interval float64 `json:"interval_seconds"`
		Time     []int64
		CPU      []*float64
		Groups   []struct {
			Name   string
			Series map[string][]*float64
		}
	}
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("%v\n%s", err, a.body)
	}
	if v.Interval != 1 || len(v.Time) < 2 || len(v.Groups) != 2 {
		t.Fatalf("history %+v", v)
	}
	last := len(v.Time) - 1
	if v.CPU[last] != nil || v.Groups[0].Series["p50"][last] == nil || *v.Groups[0].Series["p50"][last] != 0.01 {
		t.Errorf("cpu %v (unknown: want null), p50 %v (want 0.01)", v.CPU[last], v.Groups[0].Series["p50"][last])
	}
	if strings.Contains(string(a.body), "NaN") || strings.Contains(string(a.body), "\n  ") {
		t.Errorf("history is not compact JSON with nulls:\n%.300s", a.body)
	}
	if a := f.get(t, "/v1/history?since=yesterday"); a.status != 400 || a.json(t)["field"] != "since" {
		t.Errorf("bad since: %d %s", a.status, a.body)
	}
}

// near reports whether got is want within 0.1 %, or both are NaN.
func near(got, want float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	return math.Abs(got-want) <= 1e-3*math.Abs(want)
}
