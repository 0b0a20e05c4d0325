package admin

import (
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
)

// The metrics read from the gate at scrape time. Every series is
// per group at most: no key, path or client labels, so their number is
// bounded by the config. Series whose figure is not known (a target that is
// off, a resource that cannot be read, a latency without samples) are left
// out rather than exported as 0.
var (
	descBuildInfo = prometheus.NewDesc("sluice_build_info",
		"The sluice build running: its version, VCS revision (\"unknown\" when not recorded) and Go version; always 1.",
		[]string{"version", "revision", "goversion"}, nil)
	descDecisions = prometheus.NewDesc("sluice_decisions_total",
		"Requests that left the gate, by group and decision: admitted (outcome: how they ended, success, dropped, "+
			"ignored), rejected (reason: why, rate, concurrency, queue_timeout, queue_full, cpu, memory, priority, "+
			"circuit_open, fair_share, streams), canceled (reason client_gone: the client left while queued); in shadow mode "+
			"(mode = \"shadow\"), shadow_rejected (reason: what enforcement would have refused it for) and shadow_queued "+
			"(enforcement would have made it wait), requests admitted all the same, which count as admitted too once done. "+
			"outcome is empty unless admitted, reason empty when admitted or shadow_queued.",
		[]string{"group", "decision", "outcome", "reason"}, nil)
	descRequests = prometheus.NewDesc("sluice_requests_total",
		"DEPRECATED, removed in the release after next: use sluice_decisions_total, whose outcome and reason "+
			"labels this one folds into reason. Requests that left the gate, by group, decision and reason.",
		[]string{"group", "decision", "reason"}, nil)
	descLimit = prometheus.NewDesc("sluice_concurrency_limit",
		"The group's concurrency limit now.", []string{"group"}, nil)
	descLimitMin = prometheus.NewDesc("sluice_concurrency_limit_min",
		"The lowest concurrency limit the group's law may set.", []string{"group"}, nil)
	descLimitMax = prometheus.NewDesc("sluice_concurrency_limit_max",
		"The highest concurrency limit the group's law may set.", []string{"group"}, nil)
	descInFlight = prometheus.NewDesc("sluice_inflight_requests",
		"Admitted requests of the group not yet done.", []string{"group"}, nil)
	descQueueLength = prometheus.NewDesc("sluice_queue_length",
		"Requests of the group waiting for a concurrency slot now.", []string{"group"}, nil)
	descQueueCapacity = prometheus.NewDesc("sluice_queue_capacity",
		"The most requests the group's queue holds.", []string{"group"}, nil)
	descStreams = prometheus.NewDesc("sluice_streams_open",
		"Long-lived streams of the group open now (WebSockets, gRPC calls, event streams past their first "+
			"response byte): they hold a stream slot, not a concurrency slot.", []string{"group"}, nil)
	descStreamsMax = prometheus.NewDesc("sluice_streams_max",
		"The most streams the group holds open at once ([group.streams] max); beyond it a stream is refused, "+
			"reason streams.", []string{"group"}, nil)
	descStreamsOpened = prometheus.NewDesc("sluice_streams_opened_total",
		"Streams the group opened.", []string{"group"}, nil)
	descQueueBound = prometheus.NewDesc("sluice_queue_wait_bound_seconds",
		"The longest a request below critical may wait in the group's queue now (the CoDel bound).", []string{"group"}, nil)
	descTokenRate = prometheus.NewDesc("sluice_token_rate",
		"The group's rate limit in cost units per second, as its law manages it where it does; absent without a rate limit.",
		[]string{"group"}, nil)
	descLatency = prometheus.NewDesc("sluice_latency_seconds",
		"DEPRECATED, removed in the release after next: use histogram_quantile over sluice_request_duration_seconds "+
			"(upstream) or sluice_end_to_end_duration_seconds. Upstream latency percentiles of the group over the last "+
			"control interval, as its law saw them; absent when the interval had no success.",
		[]string{"group", "percentile"}, nil)
	descLatencyTarget = prometheus.NewDesc("sluice_latency_target_seconds",
		"The group's latency target, at the quantile of sluice_latency_target_quantile; absent when off.", []string{"group"}, nil)
	descLatencyQuantile = prometheus.NewDesc("sluice_latency_target_quantile",
		"The quantile the group's latency target applies to (0.99 is p99).", []string{"group"}, nil)
	descCPUTarget = prometheus.NewDesc("sluice_cpu_target_ratio",
		"The group's CPU utilisation target, 0–1; absent when off.", []string{"group"}, nil)
	descMemoryTarget = prometheus.NewDesc("sluice_memory_target_ratio",
		"The group's memory utilisation target, 0–1; absent when off.", []string{"group"}, nil)
	descPressureTarget = prometheus.NewDesc("sluice_cpu_pressure_target_ratio",
		"The group's CPU pressure target (share of time runnable work waits for a CPU), 0–1; absent when off.",
		[]string{"group"}, nil)
	descUnmoved = prometheus.NewDesc("sluice_target_unmoved",
		"1 while the group's law ignores the resource target (cpu, memory, cpu_pressure) because cutting the limit "+
			"did not move it, else 0; for each resource target set on a group with law \"target\".",
		[]string{"group", "target"}, nil)
	descFloor = prometheus.NewDesc("sluice_priority_floor",
		"The lowest priority the group admits now (0 sheddable … 7 critical); 0 when nothing is shed.", []string{"group"}, nil)
	descKeys = prometheus.NewDesc("sluice_tracked_keys",
		"Keys the group keeps state for (fair share or per-key rate limit, whichever holds more).", []string{"group"}, nil)
	descOverride = prometheus.NewDesc("sluice_override_active",
		"1 when a runtime override (admin PATCH) is in force on the group, else 0.", []string{"group"}, nil)
	descCPU = prometheus.NewDesc("sluice_cpu_utilization_ratio",
		"CPU utilisation of what sluice guards (its cgroup against its limit, else the host), 0–1; absent when unknown.", nil, nil)
	descMemory = prometheus.NewDesc("sluice_memory_utilization_ratio",
		"Memory utilisation of what sluice guards (its cgroup's working set against its limit, else the host), 0–1; absent when unknown.", nil, nil)
	descTicks = prometheus.NewDesc("sluice_control_ticks_total",
		"Control loop intervals run.", nil, nil)
	descConfigInfo = prometheus.NewDesc("sluice_config_info",
		"The config running: where it came from and its hash; always 1.", []string{"source", "hash"}, nil)
	descConfigLoaded = prometheus.NewDesc("sluice_config_loaded_timestamp_seconds",
		"When the config running was applied, in unix seconds.", nil, nil)
	descLastSave = prometheus.NewDesc("sluice_state_last_save_timestamp_seconds",
		"When the state file was last written, in unix seconds; absent without a state file or before the first write.", nil, nil)
	descSaveOK = prometheus.NewDesc("sluice_state_last_save_success",
		"1 when the last write of the state file succeeded, 0 when it failed; absent before the first write.", nil, nil)
)

var gateDescs = []*prometheus.Desc{descBuildInfo, descDecisions, descRequests, descLimit, descLimitMin, descLimitMax,
	descInFlight, descQueueLength, descQueueCapacity, descQueueBound, descTokenRate, descLatency,
	descLatencyTarget, descLatencyQuantile, descCPUTarget, descMemoryTarget, descPressureTarget, descUnmoved, descFloor, descKeys,
	descOverride, descCPU, descMemory, descTicks, descConfigInfo, descConfigLoaded, descLastSave, descSaveOK,
	descStreams, descStreamsMax, descStreamsOpened}

// gateCollector reads the gate's state at scrape time.
type gateCollector struct {
	gate              Gate
	version, revision string
}

// newGateCollector reads g; version and revision label sluice_build_info
// ("" is "unknown").
func newGateCollector(g Gate, version, revision string) *gateCollector {
	if version == "" {
		version = "unknown"
	}
	if revision == "" {
		revision = "unknown"
	}
	return &gateCollector{gate: g, version: version, revision: revision}
}

// Describe implements prometheus.Collector.
func (c *gateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range gateDescs {
		ch <- d
	}
	for _, d := range globalDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *gateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(descBuildInfo, 1, c.version, c.revision, runtime.Version())

	st := c.gate.Status()
	if r := st.Resources.CPU; r.Known {
		gauge(descCPU, r.Value)
	}
	if r := st.Resources.Memory; r.Known {
		gauge(descMemory, r.Value)
	}
	counter(descTicks, float64(st.Ticks))
	gauge(descConfigInfo, 1, st.ConfigSource, st.ConfigHash)
	if !st.ConfigLoaded.IsZero() {
		gauge(descConfigLoaded, unixSeconds(st.ConfigLoaded))
	}
	if st.StateFile != "" && !st.LastSave.IsZero() {
		gauge(descLastSave, unixSeconds(st.LastSave))
		ok := 1.0
		if st.SaveErr != nil {
			ok = 0
		}
		gauge(descSaveOK, ok)
	}

	cfg := c.gate.Config()
	groups := c.gate.Groups()
	collectGlobal(ch, groups)
	for _, g := range groups {
		n := g.Name
		for o := range g.Completed {
			v, name := float64(g.Completed[o]), gate.Outcome(o).String()
			counter(descDecisions, v, n, "admitted", name, "")
			counter(descRequests, v, n, "admitted", name)
		}
		for r := 1; r < adaptive.NumRejections; r++ {
			v, why := float64(g.Rejected[r]), adaptive.RejectReason(r).String()
			counter(descDecisions, v, n, "rejected", "", why)
			counter(descRequests, v, n, "rejected", why)
		}
		collectShadow(counter, &g)
		counter(descDecisions, float64(g.Canceled), n, "canceled", "", "client_gone")
		counter(descRequests, float64(g.Canceled), n, "canceled", "client_gone")

		gauge(descLimit, float64(g.Limit), n)
		gauge(descLimitMin, float64(g.Min), n)
		gauge(descLimitMax, float64(g.Max), n)
		gauge(descInFlight, float64(g.InFlight), n)
		gauge(descQueueLength, float64(g.Queued), n)
		gauge(descQueueCapacity, float64(g.QueueMax), n)
		gauge(descQueueBound, g.QueueWait.Seconds(), n)
		gauge(descStreams, float64(g.Streams.Open), n)
		gauge(descStreamsMax, float64(g.Streams.Max), n)
		counter(descStreamsOpened, float64(g.Streams.Opened), n)
		if g.TokenRate > 0 {
			gauge(descTokenRate, g.TokenRate, n)
		}
		if l := g.Latency; l.Successes > 0 {
			gauge(descLatency, l.P50.Seconds(), n, "50")
			gauge(descLatency, l.P90.Seconds(), n, "90")
			gauge(descLatency, l.P95.Seconds(), n, "95")
			gauge(descLatency, l.P99.Seconds(), n, "99")
			gauge(descLatency, l.P999.Seconds(), n, "99.9")
		}
		if gc := cfg.Group(n); gc != nil {
			t := gc.Targets
			if t.Latency > 0 {
				gauge(descLatencyTarget, float64(t.Latency)/1e9, n)
				gauge(descLatencyQuantile, t.Quantile, n)
			}
			if t.CPU > 0 {
				gauge(descCPUTarget, t.CPU, n)
			}
			if t.Memory > 0 {
				gauge(descMemoryTarget, t.Memory, n)
			}
			if t.CPUPressure > 0 {
				gauge(descPressureTarget, t.CPUPressure, n)
			}
			if k, ok := adaptive.LookupLaw(string(gc.Concurrency.Law)); ok && k.JudgesUnmoved() {
				for i, set := range [...]bool{t.CPU > 0, t.Memory > 0, t.CPUPressure > 0} {
					if m := adaptive.UnmovedMembers[i]; set {
						gauge(descUnmoved, boolValue(g.Unmoved.Has(m)), n, m.String())
					}
				}
			}
		}
		gauge(descFloor, float64(g.Floor.Priority), n)
		gauge(descKeys, float64(max(g.Keys, g.RateKeys)), n)
		gauge(descOverride, boolValue(g.Override != nil), n)
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
