package admin

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/internal/cowmap"
)

// Metrics are the metrics that need every event rather than the gate's
// read-outs: request durations (upstream, and end to end: the wait for a
// slot included) and queue waits as histograms (fed by the gate
// through gate.Observer), state file writes and limit changes (fed by the
// daemon from gate.Params.OnSave and OnChange). Build it before the gate, pass
// it as gate.Params.Observer, and give it to New as Params.Metrics, which
// registers it.
//
// The histograms have classic buckets and native-histogram settings, so a
// Prometheus that scrapes native histograms gets them at a higher resolution.
//
// Metrics is safe for concurrent use. ObserveDone and ObserveQueueWait take no
// lock and do not allocate once a group has been seen (its series are looked
// up in a copy-on-write map). The Observe methods of a nil *Metrics do
// nothing, so a nil one passed as gate.Params.Observer is harmless.
type Metrics struct {
	duration  *prometheus.HistogramVec
	endToEnd  *prometheus.HistogramVec
	queueWait *prometheus.HistogramVec
	saves     *prometheus.CounterVec
	changes   *prometheus.CounterVec

	groups cowmap.Map[string, *groupObservers]
}

// groupObservers are a group's histogram series, resolved once.
type groupObservers struct {
	done     [3]prometheus.Observer // upstream latency, by gate.Outcome
	endToEnd [3]prometheus.Observer // wait + upstream latency, by gate.Outcome
	wait     prometheus.Observer
}

// MetricsParams configures Metrics; the zero value of every field means its
// default.
type MetricsParams struct {
	// DurationBuckets are the classic buckets of
	// sluice_request_duration_seconds and
	// sluice_end_to_end_duration_seconds. Default: 1ms to 30s.
	DurationBuckets []float64
	// QueueWaitBuckets are the classic buckets of sluice_queue_wait_seconds.
	// Default: 0.1ms to 5s.
	QueueWaitBuckets []float64
}

// Default buckets, in seconds.
var (
	DefaultDurationBuckets  = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	DefaultQueueWaitBuckets = []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}
)

// Native histogram settings: buckets grow by at most 10 % (schema 3), at most
// 160 of them, reset no more often than hourly when that bound is hit.
const (
	nativeBucketFactor  = 1.1
	nativeMaxBuckets    = 160
	nativeMinResetEvery = time.Hour
)

// NewMetrics returns Metrics configured by p.
func NewMetrics(p MetricsParams) *Metrics {
	if len(p.DurationBuckets) == 0 {
		p.DurationBuckets = DefaultDurationBuckets
	}
	if len(p.QueueWaitBuckets) == 0 {
		p.QueueWaitBuckets = DefaultQueueWaitBuckets
	}
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            name,
			Help:                            help,
			Buckets:                         buckets,
			NativeHistogramBucketFactor:     nativeBucketFactor,
			NativeHistogramMaxBucketNumber:  nativeMaxBuckets,
			NativeHistogramMinResetDuration: nativeMinResetEvery,
		}, labels)
	}
	m := &Metrics{
		duration: hist("sluice_request_duration_seconds",
			"Upstream latency of admitted requests (queue wait excluded), by group and outcome: success, dropped, ignored.",
			p.DurationBuckets, "group", "outcome"),
		endToEnd: hist("sluice_end_to_end_duration_seconds",
			"Time admitted requests spent in sluice from arrival to done: the wait for a slot (queue, a leaky_queue's pacing) "+
				"plus the upstream latency, by group and outcome: success, dropped, ignored.",
			p.DurationBuckets, "group", "outcome"),
		queueWait: hist("sluice_queue_wait_seconds",
			"Time requests spent waiting for a concurrency slot, by group, whether they got one or not.",
			p.QueueWaitBuckets, "group"),
		saves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_state_saves_total",
			Help: "Writes of the state file (learned limits), by result: success or failure.",
		}, []string{"result"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_limit_changes_total",
			Help: "Changes of a group's concurrency limit or token rate by its control law.",
		}, []string{"group"}),
	}
	m.saves.WithLabelValues("success")
	m.saves.WithLabelValues("failure")
	return m
}

var _ gate.Observer = (*Metrics)(nil)

// ObserveDone implements gate.Observer.
func (m *Metrics) ObserveDone(group string, o gate.Outcome, latency, wait time.Duration) {
	if m != nil && int(o) < len(groupObservers{}.done) {
		g := m.group(group)
		g.done[o].Observe(latency.Seconds())
		g.endToEnd[o].Observe((wait + latency).Seconds())
	}
}

// ObserveQueueWait implements gate.Observer.
func (m *Metrics) ObserveQueueWait(group string, wait time.Duration) {
	if m == nil {
		return
	}
	m.group(group).wait.Observe(wait.Seconds())
}

// ObserveSave counts a write of the state file: call it from
// gate.Params.OnSave.
func (m *Metrics) ObserveSave(_ string, err error) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "failure"
	}
	m.saves.WithLabelValues(result).Inc()
}

// ObserveChange counts a change by a control law: call it from
// gate.Params.OnChange.
func (m *Metrics) ObserveChange(c gate.Change) {
	if m == nil {
		return
	}
	m.changes.WithLabelValues(c.Group).Inc()
}

// group returns the series of the group called name, creating them the
// first time.
func (m *Metrics) group(name string) *groupObservers {
	return m.groups.LoadOrNew(name, m.newGroup)
}

func (m *Metrics) newGroup(name string) *groupObservers {
	g := &groupObservers{wait: m.queueWait.WithLabelValues(name)}
	for o := range g.done {
		g.done[o] = m.duration.WithLabelValues(name, gate.Outcome(o).String())
		g.endToEnd[o] = m.endToEnd.WithLabelValues(name, gate.Outcome(o).String())
	}
	return g
}

// retain drops the series of every group not in names (groups a reload
// removed), so that their number stays bounded by the config.
func (m *Metrics) retain(names []string) {
	keep := make(map[string]bool, len(names))
	for _, n := range names {
		keep[n] = true
	}
	m.groups.Retain(func(k string, _ *groupObservers) bool {
		if keep[k] {
			return true
		}
		m.duration.DeletePartialMatch(prometheus.Labels{"group": k})
		m.endToEnd.DeletePartialMatch(prometheus.Labels{"group": k})
		m.queueWait.DeleteLabelValues(k)
		m.changes.DeleteLabelValues(k)
		return false
	})
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.duration.Describe(ch)
	m.endToEnd.Describe(ch)
	m.queueWait.Describe(ch)
	m.saves.Describe(ch)
	m.changes.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.duration.Collect(ch)
	m.endToEnd.Collect(ch)
	m.queueWait.Collect(ch)
	m.saves.Collect(ch)
	m.changes.Collect(ch)
}
