package admin

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/sluicehq/sluice/gate"
)

// metricText renders the families of reg called name in the text format.
func metricText(t testing.TB, reg prometheus.Gatherer, names ...string) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if slices.Contains(names, mf.GetName()) {
			if err := enc.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b.String()
}

// family returns the family called name, or nil.
func family(t testing.TB, reg prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// exported lists the metric names admin exports from a busy fixture:
// every series that can appear, with the suffixes of histograms.
func exported(t testing.TB) map[string]bool {
	t.Helper()
	f := busyFixture(t)
	mfs, err := f.srv.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		n := mf.GetName()
		names[n] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			names[n+"_bucket"], names[n+"_sum"], names[n+"_count"] = true, true, true
		}
	}
	return names
}

// busyFixture is a fixture whose gate has seen successes, drops,
// rejections, queue waits, a limit change, a state save and an override,
// and knows its CPU and memory, so every series is there.
func busyFixture(t testing.TB) *fixture {
	t.Helper()
	f := newFixture(t, testConfig)
	f.res.set(0.42, 0.61)
	f.serve(t, "/api/a", 30, 20*time.Millisecond, gate.Success)
	f.serve(t, "/api/a", 3, 0, gate.Dropped)
	f.serve(t, "/other", 2, 5*time.Millisecond, gate.Ignored)
	hold := make([]gate.Pass, 4)
	for i := range hold {
		r, _ := http.NewRequest(http.MethodGet, "http://sluice/batch", nil)
		p, _, ok := f.gate.Enter(r)
		if !ok {
			t.Fatal("batch rejected")
		}
		hold[i] = p
	}
	r, _ := http.NewRequest(http.MethodGet, "http://sluice/batch", nil)
	if _, rej, ok := f.gate.Enter(r); ok || rej.Reason.String() != "concurrency" {
		t.Fatalf("fifth batch request: ok %v %v", ok, rej.Reason)
	}
	f.metrics.ObserveQueueWait("api", 3*time.Millisecond)
	f.metrics.ObserveSave("/var/lib/sluice/state.json", nil)
	f.metrics.ObserveSave("/var/lib/sluice/state.json", errors.New("disk full"))
	f.metrics.ObserveChange(gate.Change{Group: "api", From: 10, To: 9})
	f.tick(250 * time.Millisecond)
	// A CPU target too (the default has none), so its gauge is there.
	if a := f.patch(t, "api", `{"targets": {"latency": "150ms", "cpu": 0.8}}`); a.status != 200 {
		t.Fatalf("PATCH: %d %s", a.status, a.body)
	}
	for i := range hold {
		hold[i].Done(gate.Success)
	}
	return f
}

func TestMetricsNames(t *testing.T) {
	names := exported(t)
	for _, n := range []string{
		// the metrics admin documents (doc.go)
		"sluice_decisions_total", "sluice_concurrency_limit", "sluice_inflight_requests", "sluice_queue_wait_seconds_bucket",
		"sluice_request_duration_seconds_bucket", "sluice_end_to_end_duration_seconds_bucket", "sluice_token_rate",
		// deprecated, kept for one release
		"sluice_requests_total", "sluice_latency_seconds",
		// what an operator needs beyond them
		"sluice_queue_length", "sluice_queue_capacity", "sluice_latency_seconds", "sluice_latency_target_seconds",
		"sluice_cpu_target_ratio", "sluice_memory_target_ratio", "sluice_concurrency_limit_max", "sluice_override_active",
		"sluice_config_reloads_total", "sluice_state_saves_total", "sluice_limit_changes_total", "sluice_build_info",
		"sluice_config_info", "sluice_control_ticks_total", "sluice_cpu_utilization_ratio", "sluice_memory_utilization_ratio",
		// Go and process collectors
		"go_goroutines", "process_start_time_seconds",
	} {
		if !names[n] {
			t.Errorf("%s is not exported", n)
		}
	}
	// Unknown CPU and memory are left out, not exported as 0.
	f := newFixture(t, testConfig)
	f.tick(250 * time.Millisecond)
	if s := metricText(t, f.srv.Registry(), "sluice_cpu_utilization_ratio", "sluice_memory_utilization_ratio"); s != "" {
		t.Errorf("unknown CPU or memory exported:\n%s", s)
	}
}

func TestMetricsValues(t *testing.T) {
	f := busyFixture(t)
	reg := f.srv.Registry()
	want := `# HELP sluice_concurrency_limit The group's concurrency limit now.
# TYPE sluice_concurrency_limit gauge
sluice_concurrency_limit{group="api"} 9
sluice_concurrency_limit{group="batch"} 4
# HELP sluice_inflight_requests Admitted requests of the group not yet done.
# TYPE sluice_inflight_requests gauge
sluice_inflight_requests{group="api"} 0
sluice_inflight_requests{group="batch"} 0
# HELP sluice_latency_target_seconds The group's latency target, at the quantile of sluice_latency_target_quantile; absent when off.
# TYPE sluice_latency_target_seconds gauge
sluice_latency_target_seconds{group="api"} 0.15
# HELP sluice_override_active 1 when a runtime override (admin PATCH) is in force on the group, else 0.
# TYPE sluice_override_active gauge
sluice_override_active{group="api"} 1
sluice_override_active{group="batch"} 0
# HELP sluice_token_rate The group's rate limit in cost units per second, as its law manages it where it does; absent without a rate limit.
# TYPE sluice_token_rate gauge
sluice_token_rate{group="api"} 1000
`
	want += `# HELP sluice_cpu_utilization_ratio CPU utilisation of what sluice guards (its cgroup against its limit, else the host), 0–1; absent when unknown.
# TYPE sluice_cpu_utilization_ratio gauge
sluice_cpu_utilization_ratio 0.42
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sluice_cpu_utilization_ratio", "sluice_concurrency_limit", "sluice_inflight_requests",
		"sluice_latency_target_seconds", "sluice_override_active", "sluice_token_rate"); err != nil {
		t.Error(err)
	}
	s := metricText(t, reg, "sluice_decisions_total")
	for _, line := range []string{
		`sluice_decisions_total{decision="admitted",group="api",outcome="success",reason=""} 30`,
		`sluice_decisions_total{decision="admitted",group="api",outcome="dropped",reason=""} 3`,
		`sluice_decisions_total{decision="admitted",group="batch",outcome="ignored",reason=""} 2`,
		`sluice_decisions_total{decision="rejected",group="batch",outcome="",reason="concurrency"} 1`,
		`sluice_decisions_total{decision="rejected",group="api",outcome="",reason="queue_full"} 0`,
		`sluice_decisions_total{decision="canceled",group="api",outcome="",reason="client_gone"} 0`,
	} {
		if !strings.Contains(s, line) {
			t.Errorf("missing %s in\n%s", line, s)
		}
	}
	// The deprecated metric keeps its series for one release.
	s = metricText(t, reg, "sluice_requests_total")
	for _, line := range []string{
		`sluice_requests_total{decision="admitted",group="api",reason="success"} 30`,
		`sluice_requests_total{decision="admitted",group="api",reason="dropped"} 3`,
		`sluice_requests_total{decision="admitted",group="batch",reason="ignored"} 2`,
		`sluice_requests_total{decision="rejected",group="batch",reason="concurrency"} 1`,
		`sluice_requests_total{decision="rejected",group="api",reason="queue_full"} 0`,
		`sluice_requests_total{decision="canceled",group="api",reason="client_gone"} 0`,
	} {
		if !strings.Contains(s, line) {
			t.Errorf("missing %s in\n%s", line, s)
		}
	}
	s = metricText(t, reg, "sluice_latency_seconds")
	if !strings.Contains(s, `sluice_latency_seconds{group="api",percentile="99"} 0.02`) || strings.Contains(s, `group="batch"`) {
		t.Errorf("latency percentiles (batch had no success in the interval):\n%s", s)
	}
	s = metricText(t, reg, "sluice_state_saves_total", "sluice_limit_changes_total")
	for _, line := range []string{`sluice_state_saves_total{result="failure"} 1`, `sluice_state_saves_total{result="success"} 1`,
		`sluice_limit_changes_total{group="api"} 1`} {
		if !strings.Contains(s, line) {
			t.Errorf("missing %s in\n%s", line, s)
		}
	}

	// The histograms: one observation per finished request, classic buckets
	// and a native schema.
	h := family(t, reg, "sluice_request_duration_seconds")
	counts := map[string]uint64{}
	for _, m := range h.GetMetric() {
		var g, o string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "group":
				g = l.GetValue()
			case "outcome":
				o = l.GetValue()
			}
		}
		counts[g+"/"+o] = m.GetHistogram().GetSampleCount()
		if m.GetHistogram().Schema == nil || len(m.GetHistogram().GetBucket()) != len(DefaultDurationBuckets) {
			t.Errorf("%s/%s: schema %v, %d classic buckets; want a native schema and %d", g, o, m.GetHistogram().Schema,
				len(m.GetHistogram().GetBucket()), len(DefaultDurationBuckets))
		}
	}
	if counts["api/success"] != 30 || counts["api/dropped"] != 3 || counts["batch/ignored"] != 2 || counts["batch/success"] != 4 {
		t.Errorf("duration counts %v", counts)
	}
	// End to end: the same requests, each at least as long as upstream.
	e := family(t, reg, "sluice_end_to_end_duration_seconds")
	for _, m := range e.GetMetric() {
		var g, o string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "group":
				g = l.GetValue()
			case "outcome":
				o = l.GetValue()
			}
		}
		if n := m.GetHistogram().GetSampleCount(); n != counts[g+"/"+o] {
			t.Errorf("%s/%s: %d end-to-end samples, %d upstream", g, o, n, counts[g+"/"+o])
		}
	}
}

func TestMetricsLint(t *testing.T) {
	f := busyFixture(t)
	for name, c := range map[string]prometheus.Collector{
		"gate":    newGateCollector(f.gate, "v1", "abc123"),
		"metrics": f.metrics,
	} {
		problems, err := testutil.CollectAndLint(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s: %s", name, p.Metric, p.Text)
		}
	}
	// The whole registry, as /metrics serves it.
	mfs, err := f.srv.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "sluice_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

func TestMetricsRetainDropsRemovedGroups(t *testing.T) {
	f := newFixture(t, testConfig)
	f.serve(t, "/api/a", 1, time.Millisecond, gate.Success)
	f.serve(t, "/b", 1, time.Millisecond, gate.Success)
	f.setNext(parseConfig(t, strings.Replace(testConfig, `name = "api"`, `name = "web"`, 1)), nil)
	if a := f.do(t, req{method: http.MethodPost, path: "/v1/reload", token: testToken, contentType: "application/json"}); a.status != 200 {
		t.Fatalf("reload: %d %s", a.status, a.body)
	}
	s := metricText(t, f.srv.Registry(), "sluice_request_duration_seconds")
	if strings.Contains(s, `group="api"`) || !strings.Contains(s, `group="batch"`) {
		t.Errorf("after api was removed:\n%s", s)
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	m := NewMetrics(MetricsParams{})
	m.ObserveDone("api", gate.Success, time.Millisecond, 0) // the first sight of a group allocates its series
	m.ObserveQueueWait("api", time.Millisecond)
	if n := testing.AllocsPerRun(1000, func() {
		m.ObserveDone("api", gate.Success, 3*time.Millisecond, 0)
		m.ObserveQueueWait("api", time.Millisecond)
	}); n != 0 {
		t.Errorf("ObserveDone + ObserveQueueWait allocate %v times", n)
	}
}

// TestNilMetricsObserveNothing: a typed nil passed as the gate's Observer must
// not panic (a panic fails the test).
func TestNilMetricsObserveNothing(t *testing.T) {
	var m *Metrics
	m.ObserveDone("api", gate.Success, time.Millisecond, 0)
	m.ObserveQueueWait("api", time.Millisecond)
	m.ObserveSave("state.json", nil)
	m.ObserveChange(gate.Change{Group: "api"})
}

// BenchmarkObserveDone is the cost the histograms add to each request: one
// goroutine, and all of them on one group's series.
func BenchmarkObserveDone(b *testing.B) {
	m := NewMetrics(MetricsParams{})
	m.ObserveDone("api", gate.Success, time.Millisecond, 0)
	b.Run("single", func(b *testing.B) {
		b.ReportAllocs()
		d := time.Millisecond
		for b.Loop() {
			m.ObserveDone("api", gate.Success, d, 0)
			d += time.Microsecond
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			d := time.Millisecond
			for pb.Next() {
				m.ObserveDone("api", gate.Success, d, 0)
				d += time.Microsecond
			}
		})
	})
}

// BenchmarkScrape is one /metrics gather of a gate with two groups.
func BenchmarkScrape(b *testing.B) {
	f := busyFixture(b)
	reg := f.srv.Registry()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnterDoneWithMetrics is the gate's admitted path with the
// histograms attached: compare with gate's BenchmarkEnterDone/plain.
func BenchmarkEnterDoneWithMetrics(b *testing.B) {
	m := NewMetrics(MetricsParams{})
	g, err := gate.New(gate.Params{Resources: gate.NoResources, Config: parseConfig(b, `
[upstream]
url = "http://127.0.0.1:9"
[[group]]
name = "api"
  [group.concurrency]
  law = "fixed"
  limit = 1000000
`).Gate(), Observer: m})
	if err != nil {
		b.Fatal(err)
	}
	cl, _ := g.ClassOf("api", "", 4)
	ctx := context.Background()
	b.Run("single", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _, ok := g.EnterClass(ctx, cl)
			if !ok {
				b.Fatal("rejected")
			}
			p.Done(gate.Success)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, _, ok := g.EnterClass(ctx, cl)
				if !ok {
					b.Fatal("rejected")
				}
				p.Done(gate.Success)
			}
		})
	})
}

// sluice_target_unmoved says which resource targets a law "target" group
// ignores because cutting the limit did not move them: 0 while the law acts
// on the target, 1 once a neighbour holding the CPU at 100 % made it give the
// CPU target up; only for the targets set.
func TestMetricsTargetUnmoved(t *testing.T) {
	f := newFixture(t, `
[upstream]
url = "http://127.0.0.1:9"

[[group]]
name = "cpu"
  [group.concurrency]
  law = "target"
  initial = 40
  [group.targets]
  latency = "200ms"
  cpu = 0.8
  memory = 0.9
  cpu_pressure = 0.5
  [group.queue]
  max = 0
`)
	reg := f.srv.Registry()
	f.res.set(0.5, 0.3)
	f.tick(250 * time.Millisecond)
	want := func(cpu string) string {
		return `# HELP sluice_target_unmoved 1 while the group's law ignores the resource target (cpu, memory, cpu_pressure) because cutting the limit did not move it, else 0; for each resource target set on a group with law "target".
# TYPE sluice_target_unmoved gauge
sluice_target_unmoved{group="cpu",target="cpu"} ` + cpu + `
sluice_target_unmoved{group="cpu",target="cpu_pressure"} 0
sluice_target_unmoved{group="cpu",target="memory"} 0
# HELP sluice_cpu_pressure_target_ratio The group's CPU pressure target (share of time runnable work waits for a CPU), 0–1; absent when off.
# TYPE sluice_cpu_pressure_target_ratio gauge
sluice_cpu_pressure_target_ratio{group="cpu"} 0.5
`
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want("0")), "sluice_target_unmoved", "sluice_cpu_pressure_target_ratio"); err != nil {
		t.Error(err)
	}
	// The neighbour: the CPU stays at 100 % while the limit is cut and the
	// throughput with it (each interval serves what the limit admits).
	f.res.set(1, 0.3)
	for range 12 {
		st, _ := f.gate.Group("cpu")
		var held []gate.Pass
		for range st.Limit + 5 {
			r, _ := http.NewRequest(http.MethodGet, "http://sluice/", nil)
			if p, _, ok := f.gate.Enter(r); ok {
				held = append(held, p)
			}
		}
		for i := range held {
			held[i].DoneAfter(gate.Success, 10*time.Millisecond)
		}
		f.tick(250 * time.Millisecond)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want("1")), "sluice_target_unmoved", "sluice_cpu_pressure_target_ratio"); err != nil {
		t.Error(err)
	}
	// Other laws ignore nothing, and say nothing about it.
	if s := metricText(t, busyFixture(t).srv.Registry(), "sluice_target_unmoved"); s != "" {
		t.Errorf("sluice_target_unmoved for groups of other laws:\n%s", s)
	}
}

// TestEndToEndAddsTheWait: the end-to-end histogram holds the wait for a slot
// plus the upstream latency; the upstream one holds the latency alone.
func TestEndToEndAddsTheWait(t *testing.T) {
	m := NewMetrics(MetricsParams{})
	m.ObserveDone("api", gate.Success, 3*time.Millisecond, 40*time.Millisecond)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	sum := func(name string) float64 {
		f := family(t, reg, name)
		if f == nil || len(f.GetMetric()) == 0 {
			t.Fatalf("no %s", name)
		}
		for _, mt := range f.GetMetric() {
			if h := mt.GetHistogram(); h.GetSampleCount() == 1 {
				return h.GetSampleSum()
			}
		}
		t.Fatalf("%s: no series with one sample", name)
		return 0
	}
	if got := sum("sluice_request_duration_seconds"); math.Abs(got-0.003) > 1e-9 {
		t.Errorf("upstream sum %v, want 0.003", got)
	}
	if got := sum("sluice_end_to_end_duration_seconds"); math.Abs(got-0.043) > 1e-9 {
		t.Errorf("end-to-end sum %v, want 0.043", got)
	}
}

func TestBuildInfoCarriesTheRevision(t *testing.T) {
	f := newFixture(t, testConfig)
	reg := prometheus.NewRegistry()
	reg.MustRegister(newGateCollector(f.gate, "v1.2.3", "0123456789ab"))
	s := metricText(t, reg, "sluice_build_info")
	want := `sluice_build_info{goversion="` + runtime.Version() + `",revision="0123456789ab",version="v1.2.3"} 1`
	if !strings.Contains(s, want) {
		t.Errorf("want %s in\n%s", want, s)
	}
	reg = prometheus.NewRegistry()
	reg.MustRegister(newGateCollector(f.gate, "", ""))
	if s := metricText(t, reg, "sluice_build_info"); !strings.Contains(s, `revision="unknown",version="unknown"`) {
		t.Errorf("unset version and revision:\n%s", s)
	}
}
