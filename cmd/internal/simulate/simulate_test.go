package simulate

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/cmd/internal/lab"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
)

func TestLoad(t *testing.T) {
	segs, phases, d, err := Load("0.7x for 30s, 1200/s for 10s, 0.5x..3x for 1m, 2C", 400, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.Segment{
		{At: 0, X: 0.7},
		{At: 30 * time.Second, X: 3},
		{At: 40 * time.Second, From: 0.5, To: 3, Ramp: true},
		{At: 100 * time.Second, X: 2},
	}
	if len(segs) != len(want) || d != 105*time.Second {
		t.Fatalf("segments %+v, duration %v", segs, d)
	}
	for i := range want {
		if segs[i] != want[i] {
			t.Errorf("segment %d = %+v, want %+v", i, segs[i], want[i])
		}
	}
	if phases[1].Name != "2:1200/s" || phases[2].At != 40*time.Second {
		t.Errorf("phases %+v", phases)
	}
	for _, bad := range []string{"", "3y", "3x for", "3x forever 1s", "3x for -1s", "x", "-1x", "2000x", "1x..", "3x for 25h"} {
		if _, _, _, err := Load(bad, 400, time.Second); err == nil {
			t.Errorf("Load(%q) accepted", bad)
		}
	}
}

// TestServiceOf: any two of capacity, workers and the service time give
// the third, the time as a mean, a median or in the lab backend's form;
// what is not given comes from the base; contradictions are refused.
func TestServiceOf(t *testing.T) {
	ms, one := time.Millisecond, time.Second
	lab := &sim.Service{Workers: 15, Dist: sim.Dist{Kind: sim.Lognormal, Mean: 10 * ms, Sigma: 0.5}}
	for _, c := range []struct {
		name   string
		d      ServiceDesc
		base   *sim.Service
		want   sim.Service
		remark string
	}{
		{"capacity and mean", ServiceDesc{Capacity: 800, Mean: 50 * ms}, nil,
			sim.Service{Workers: 40, Dist: sim.Dist{Kind: sim.Exponential, Mean: 50 * ms}}, ""},
		{"capacity and workers", ServiceDesc{Capacity: 400, Workers: 16, Shape: "lognormal:0.8"}, nil,
			sim.Service{Workers: 16, Dist: sim.Dist{Kind: sim.Lognormal, Mean: 40 * ms, Sigma: 0.8}}, ""},
		{"workers alone with a mean", ServiceDesc{Workers: 16, Mean: 10 * ms, Shape: "lognormal:0.3"}, nil,
			sim.Service{Workers: 16, Dist: sim.Dist{Kind: sim.Lognormal, Mean: 10 * ms, Sigma: 0.3}}, ""},
		// Issue 28's service: 16 workers, a lognormal of median 10ms, σ 0.3: mean 10ms·e^0.045.
		{"a median", ServiceDesc{Workers: 16, Median: 10 * ms, Shape: "lognormal:0.3"}, nil,
			sim.Service{Workers: 16, Dist: sim.Dist{Kind: sim.Lognormal, Mean: time.Duration(float64(10*ms) * math.Exp(0.045)), Sigma: 0.3}}, ""},
		{"an exponential's median", ServiceDesc{Workers: 4, Median: 10 * ms}, nil,
			sim.Service{Workers: 4, Dist: sim.Dist{Kind: sim.Exponential, Mean: time.Duration(float64(10*ms) / math.Ln2)}}, ""},
		{"the lab's form", ServiceDesc{Workers: 15, Shape: "lognormal:10ms:0.5"}, nil, *lab, ""},
		{"const", ServiceDesc{Capacity: 100, Workers: 1, Shape: "const"}, nil,
			sim.Service{Workers: 1, Dist: sim.Dist{Kind: sim.Lognormal, Mean: 10 * ms}}, ""},
		{"all three agreeing", ServiceDesc{Capacity: 1530, Workers: 16, Median: 10 * ms, Shape: "lognormal:0.3"}, nil,
			sim.Service{Workers: 16, Dist: sim.Dist{Kind: sim.Lognormal, Mean: time.Duration(float64(10*ms) * math.Exp(0.045)), Sigma: 0.3}}, ""},
		{"workers rounded", ServiceDesc{Capacity: 1530, Mean: 10 * ms}, nil,
			sim.Service{Workers: 15, Dist: sim.Dist{Kind: sim.Exponential, Mean: time.Duration(15 / 1530.0 * float64(one))}},
			"capacity 1530 × mean 10ms = 15.3 workers, rounded to 15: the mean is 9.804ms so that C stays 1530 req/s"},
		{"workers alone on a scenario", ServiceDesc{Workers: 16}, lab,
			sim.Service{Workers: 16, Dist: lab.Dist}, ""},
		{"a mean on a scenario", ServiceDesc{Mean: 20 * ms}, lab,
			sim.Service{Workers: 15, Dist: sim.Dist{Kind: sim.Lognormal, Mean: 20 * ms, Sigma: 0.5}}, ""},
		{"capacity on a scenario", ServiceDesc{Capacity: 3000}, lab,
			sim.Service{Workers: 30, Dist: lab.Dist}, ""},
		{"a shape on a scenario", ServiceDesc{Shape: "exp"}, lab,
			sim.Service{Workers: 15, Dist: sim.Dist{Kind: sim.Exponential, Mean: 10 * ms}}, ""},
	} {
		got, remark, err := ServiceOf(c.d, c.base)
		if err != nil || got != c.want || remark != c.remark {
			t.Errorf("%s: %+v %q %v, want %+v %q", c.name, got, remark, err, c.want, c.remark)
		}
	}
	for _, c := range []struct {
		d    ServiceDesc
		want string
	}{
		{ServiceDesc{Workers: 16}, "give two of"},
		{ServiceDesc{Capacity: 100}, "give two of"},
		{ServiceDesc{Mean: ms}, "give two of"},
		{ServiceDesc{Capacity: 1500, Workers: 16, Mean: 10 * ms}, "16 workers at a mean of 10ms serve 1600 req/s, not the capacity 1500"},
		{ServiceDesc{Workers: 2, Mean: ms, Median: ms}, "its mean or its median"},
		{ServiceDesc{Workers: 2, Mean: ms, Shape: "exp:5ms"}, "gives the mean already"},
		{ServiceDesc{Workers: 2, Median: ms, Shape: "bimodal:1ms:10ms:0.1"}, "gives the mean already"},
		{ServiceDesc{Capacity: -1, Mean: ms}, "capacity -1"},
		{ServiceDesc{Capacity: 100, Mean: ms, Shape: "pareto"}, `service time "pareto"`},
		{ServiceDesc{Capacity: 100, Mean: ms, Shape: "exp:2"}, `service time "exp:2"`},
		{ServiceDesc{Capacity: 100, Mean: ms, Shape: "lognormal:x"}, `service time "lognormal:x"`},
	} {
		if _, _, err := ServiceOf(c.d, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ServiceOf(%+v): %v, want an error with %q", c.d, err, c.want)
		}
	}
	if _, _, err := ServiceOf(ServiceDesc{Median: ms}, &sim.Service{Workers: 2, Dist: sim.Dist{Kind: sim.Bimodal, Fast: ms, Slow: 9 * ms, PSlow: 0.1}}); err == nil ||
		!strings.Contains(err.Error(), "no median") {
		t.Errorf("the median of a bimodal: %v", err)
	}
}

// TestFromLab checks a shipped lab scenario's backend, changes, load and
// clients in the simulator's terms.
func TestFromLab(t *testing.T) {
	s, err := lab.LoadScenario("stale")
	if err != nil {
		t.Fatal(err)
	}
	w, err := FromLab(s)
	if err != nil {
		t.Fatal(err)
	}
	sc := w.Scenario
	if sc.Service.Workers != 16 || sc.Service.Dist != (sim.Dist{Kind: sim.Exponential, Mean: 40 * time.Millisecond}) ||
		sc.SLO != 300*time.Millisecond || sc.Clients.Timeout != 5*time.Second || sc.Duration != 2*time.Minute {
		t.Errorf("stale: %+v", sc)
	}
	if want := []sim.WorkerChange{{At: 30 * time.Second, Workers: 8}, {At: 90 * time.Second, Workers: 16}}; len(sc.WorkerChanges) != 2 ||
		sc.WorkerChanges[0] != want[0] || sc.WorkerChanges[1] != want[1] {
		t.Errorf("worker changes %+v", sc.WorkerChanges)
	}
	if len(sc.Load) != 3 || sc.Load[1] != (sim.Segment{At: 30 * time.Second, X: 0.8}) || sc.Phases[1] != (sim.Phase{Name: "2:half", At: 30 * time.Second}) {
		t.Errorf("load %+v, phases %+v", sc.Load, sc.Phases)
	}

	// A new service keeps the changes' ratio to its workers.
	svc, _, _ := ServiceOf(ServiceDesc{Capacity: 800, Workers: 32}, nil)
	w.SetService(svc)
	if w.Scenario.WorkerChanges[0].Workers != 16 || w.Scenario.WorkerChanges[1].Workers != 32 {
		t.Errorf("changes after 32 workers: %+v", w.Scenario.WorkerChanges)
	}

	s, _ = lab.LoadScenario("retry-storm")
	if w, _ = FromLab(s); w.Scenario.Clients.Retries != 3 || w.Scenario.Clients.RetryAfter || !hasNote(w.Notes, "retry timing") {
		t.Errorf("retry-storm: clients %+v, notes %q", w.Scenario.Clients, w.Notes)
	}
	s, _ = lab.LoadScenario("tenants")
	if w, _ = FromLab(s); strings.Join(w.Tenants, " ") != "a b greedy" || w.Scenario.Tenants[2] != 6 {
		t.Errorf("tenants: %q %v", w.Tenants, w.Scenario.Tenants)
	}
	s, _ = lab.LoadScenario("priority")
	if w, _ = FromLab(s); w.Scenario.Priorities[adaptive.Critical] != 0.2 || w.Scenario.Priorities[adaptive.Sheddable] != 0.8 {
		t.Errorf("priority: %v", w.Scenario.Priorities)
	}
	s, _ = lab.LoadScenario("memory")
	if w, _ = FromLab(s); !hasNote(w.Notes, "queued_memory") || !hasNote(w.Notes, "request bodies") {
		t.Errorf("memory: notes %q", w.Notes)
	}
	// Every shipped scenario describes a valid simulator run.
	for _, name := range lab.Scenarios() {
		s, err := lab.LoadScenario(name)
		if err != nil {
			t.Fatal(err)
		}
		w, err := FromLab(s)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := w.Scenario.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestFromSimFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.scenario")
	src := "# A step.\nduration 10s\nslo 100ms\nload at=0s x=2\nstatic 70 # hand-tuned\n  gate queue=10\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := FromSimFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if w.Scenario.Name != "x" || w.Scenario.Duration != 10*time.Second || len(w.Notes) != 2 ||
		!strings.Contains(w.Notes[0], "line 5 (static)") || !strings.Contains(w.Notes[1], "line 6 (gate)") {
		t.Errorf("scenario %+v, notes %q", w.Scenario, w.Notes)
	}
	if _, err := FromSimFile(filepath.Join(t.TempDir(), "none.scenario")); err == nil {
		t.Error("a missing file accepted")
	}
}

const groupsTOML = `
[upstream]
url = "http://127.0.0.1:9000"

[control]
interval = "100ms"
state_file = "/var/lib/sluice/state.json"

[[group]]
name = "api"
match = { path_prefix = "/api/" }
key = "header:X-Tenant"
priority = "header:X-Priority"
default_priority = "sheddable"
  [group.rate]
  rate = 300
  burst = 60
  [group.concurrency]
  law = "aimd"
  min = 5
  max = 200
  initial = 10
  backoff = 0.8
  [group.targets]
  latency = "250ms"
  quantile = 0.95
  cpu = 0.7
  memory = 0
  [group.queue]
  max = 50
  order = "lifo"
  codel_target = "10ms"
  codel_interval = "200ms"

[[group]]
name = "managed"
match = { path_prefix = "/m/" }
  [group.rate]
  rate = 500
  cost = 2
  [group.concurrency]
  law = "target"
  [group.targets]
  latency = "100ms"

[[group]]
name = "batch"
priority = "critical"
  [group.rate]
  limit = 100
  window = "1s"
  algorithm = "fixed_window"
  scope = "global"
  [group.concurrency]
  law = "fixed"
  limit = 30
  [group.queue]
  max = 0

[redis]
address = "127.0.0.1:6379"
`

func loadGroups(t *testing.T) *configs.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.toml")
	if err := os.WriteFile(path, []byte(groupsTOML), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestForGroup checks that each group's settings reach the simulator's
// gate and law, and that what it cannot model is noted.
func TestForGroup(t *testing.T) {
	cfg := loadGroups(t)
	s, _ := lab.LoadScenario("tenants")
	w, err := FromLab(s)
	if err != nil {
		t.Fatal(err)
	}

	api, err := ForGroup(w, cfg, &cfg.Groups[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	sc := api.Scenario
	wantGate := sim.Gate{Queue: 50, Order: adaptive.OrderLIFO, QueueTarget: 10 * time.Millisecond,
		QueueInterval: 200 * time.Millisecond, Fair: true, Breaker: true, Guard: adaptive.ResourceGuardParams{CPU: 0.7}}
	if sc.Gate != wantGate {
		t.Errorf("api gate %+v, want %+v", sc.Gate, wantGate)
	}
	if sc.Interval != 100*time.Millisecond || sc.SLO != 250*time.Millisecond ||
		sc.Targets != (sim.Targets{Latency: 250 * time.Millisecond, Quantile: adaptive.P95, CPU: 0.7}) ||
		sc.Bounds != (adaptive.Bounds{Min: 5, Max: 200, Initial: 10}) {
		t.Errorf("api: interval %v, SLO %v, targets %+v, bounds %+v", sc.Interval, sc.SLO, sc.Targets, sc.Bounds)
	}
	if sc.Priorities != [adaptive.NumPriorities]float64{adaptive.Sheddable: 1} {
		t.Errorf("api priorities %v: want every request at the default priority, sheddable", sc.Priorities)
	}
	if _, ok := api.Law.(*adaptive.AIMD); !ok || api.Law.Limit() != 10 {
		t.Errorf("api law %T at %d", api.Law, api.Law.Limit())
	}
	if !hasNote(api.Notes, "rate per key") || !hasNote(api.Notes, "targets.cpu 0.70") || !hasNote(api.Notes, "initial limit (10)") {
		t.Errorf("api notes %q", api.Notes)
	}

	m, err := ForGroup(w, cfg, &cfg.Groups[1], 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if m.Scenario.Gate.Rate != 250 || m.Scenario.Gate.Burst != 250 || m.Scenario.SLO != 300*time.Millisecond {
		t.Errorf("managed: rate %v burst %v (want 500/s at cost 2: 250 req/s, 1 s of burst), SLO %v", m.Scenario.Gate.Rate, m.Scenario.Gate.Burst, m.Scenario.SLO)
	}
	if tl, ok := m.Law.(*adaptive.Target); !ok || tl.Rate() != 250 {
		t.Errorf("managed law %T: want target managing 250 req/s", m.Law)
	}
	if !hasNote(m.Notes, "no key") {
		t.Errorf("managed notes %q", m.Notes)
	}

	b, err := ForGroup(w, cfg, &cfg.Groups[2], 0)
	if err != nil {
		t.Fatal(err)
	}
	if b.Scenario.Gate.Queue != -1 || b.Scenario.Gate.Rate != 0 || b.Law.Limit() != 30 || b.Scenario.SLO != 300*time.Millisecond ||
		b.Scenario.Priorities != [adaptive.NumPriorities]float64{adaptive.Critical: 1} {
		t.Errorf("batch: gate %+v, limit %d, SLO %v, priorities %v", b.Scenario.Gate, b.Law.Limit(), b.Scenario.SLO, b.Scenario.Priorities)
	}
	if !hasNote(b.Notes, `scope "global"`) || hasNote(b.Notes, "state_file") {
		t.Errorf("batch notes %q", b.Notes)
	}

	// Run is deterministic and follows the law: the fixed group never
	// holds more than its limit.
	r1, err := sim.Run(b.Scenario, b.Law)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := ForGroup(w, cfg, &cfg.Groups[2], 0)
	r2, _ := sim.Run(b2.Scenario, b2.Law)
	if !reflect.DeepEqual(r1, r2) {
		t.Errorf("two runs differ: %+v, %+v", r1.Phases[0], r2.Phases[0])
	}
	for _, p := range r1.Series {
		if p.MaxInFlight > 30 {
			t.Fatalf("at %v %d in flight over the fixed limit 30", p.T, p.MaxInFlight)
		}
	}
}

// TestForGroupShadow: a group, or its rate rule, in shadow mode is
// simulated as it would enforce, and a note says so.
func TestForGroupShadow(t *testing.T) {
	cfg := loadGroups(t)
	s, _ := lab.LoadScenario("tenants")
	w, err := FromLab(s)
	if err != nil {
		t.Fatal(err)
	}
	enforced, err := ForGroup(w, cfg, &cfg.Groups[1], 0)
	if err != nil {
		t.Fatal(err)
	}
	group, rate := cfg.Groups[1], cfg.Groups[1]
	group.Mode = spec.ModeShadow
	rr := *rate.Rate
	rr.Mode = spec.ModeShadow
	rate.Rate = &rr
	for _, c := range []struct {
		g    spec.Group
		note string
	}{{group, `mode = "shadow"`}, {rate, `rate.mode = "shadow"`}} {
		r, err := ForGroup(w, cfg, &c.g, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !hasNote(r.Notes, c.note) || hasNote(enforced.Notes, "shadow") {
			t.Errorf("notes %q (enforcing: %q), want one on %s", r.Notes, enforced.Notes, c.note)
		}
		if !reflect.DeepEqual(r.Scenario, enforced.Scenario) {
			t.Errorf("%s: scenario %+v, want the enforcing group's %+v", c.note, r.Scenario, enforced.Scenario)
		}
	}
}

func TestForGroupNeedsSLO(t *testing.T) {
	cfg := loadGroups(t)
	w := Workload{Scenario: sim.Scenario{Duration: time.Second, Load: []sim.Segment{{X: 1}}}}
	if _, err := ForGroup(w, cfg, &cfg.Groups[2], 0); err == nil || !strings.Contains(err.Error(), "no latency target") {
		t.Errorf("no SLO anywhere: %v", err)
	}
}

func hasNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// FuzzLoad checks that whatever -load says, Load either refuses it or
// returns a profile the simulator accepts, back to back from 0.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{"3x", "0.7x for 30s, 1.4x for 30s, 0.7x", "1200/s", "0.5x..3x for 1m", "2C for 1h", "1x for 1ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		segs, phases, d, err := Load(spec, 400, 10*time.Second)
		if err != nil {
			return
		}
		sc := sim.Scenario{Duration: d, SLO: time.Second, Load: segs, Phases: phases}
		if len(segs) != len(phases) || segs[0].At != 0 {
			t.Fatalf("%q: %d segments, %d phases, first at %v", spec, len(segs), len(phases), segs[0].At)
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
	})
}
