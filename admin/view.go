package admin

import (
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/probe"
)

// The JSON read-outs of the API. Durations are seconds (float), ratios 0–1,
// instants RFC 3339; a figure that is not known (no sample yet, a target
// that is off) is null rather than 0.

// groupView is one group: GET /v1/groups/{name}, an element of GET /v1/groups.
type groupView struct {
	Name string      `json:"name"`
	Law  configs.Law `json:"law"`
	// Limit is the concurrency limit now, within [Min, Max].
	Limit    int `json:"limit"`
	Min      int `json:"min"`
	Max      int `json:"max"`
	InFlight int `json:"in_flight"`

	Queue   queueView   `json:"queue"`
	Rate    *rateView   `json:"rate"` // null: no rate limit
	Targets targetsView `json:"targets"`
	// Latency is the upstream latency over the last control interval.
	Latency latencyView `json:"latency"`
	// Throughput is completions (successes and drops) per second over the
	// last control interval.
	Throughput float64   `json:"throughput"`
	Requests   countView `json:"requests"`
	// Floor is the lowest priority admitted now, null when all are.
	Floor *floorView `json:"floor"`
	Keys  int        `json:"keys"`

	// Decision is the law's answer at the last tick, and why.
	Decision   decisionView  `json:"decision"`
	LastChange *changeView   `json:"last_change"`
	Override   *overrideView `json:"override"`
	// Config is the group's settings in force, overrides included, in the
	// shape PATCH takes.
	Config *configs.Group `json:"config,omitempty"`
	// Notes say what a PATCH adjusted on its own (only in its answer).
	Notes []string `json:"notes,omitempty"`
}

type queueView struct {
	Length int `json:"length"`
	Max    int `json:"max"`
	// Order is the order in force: "fifo" or "lifo" (an adaptive queue
	// switches).
	Order string `json:"order"`
	// WaitBound is the longest a request below critical may wait now (the
	// CoDel bound), WaitBoundCritical a critical one's.
	WaitBound         float64 `json:"wait_bound_seconds"`
	WaitBoundCritical float64 `json:"wait_bound_critical_seconds"`
	// Wait is the waits of requests that left the queue in the last interval.
	Wait latencyView `json:"wait"`
}

type rateView struct {
	// PerSecond is the token rate in cost units per second.
	PerSecond float64 `json:"per_second"`
	// Managed reports whether the law moves it.
	Managed bool `json:"managed"`
	Keys    int  `json:"keys"`
	// Global is the quota's state in Redis, for scope "global" only.
	Global *globalView `json:"global,omitempty"`
}

type targetsView struct {
	Latency  *float64 `json:"latency_seconds"`
	Quantile float64  `json:"quantile"`
	CPU      *float64 `json:"cpu"`
	Memory   *float64 `json:"memory"`
	// CPUPressure is the cpu_pressure target, a share of time 0–1.
	CPUPressure *float64 `json:"cpu_pressure"`
}

type latencyView struct {
	Samples uint64   `json:"samples"`
	P50     *float64 `json:"p50"`
	P90     *float64 `json:"p90"`
	P95     *float64 `json:"p95"`
	P99     *float64 `json:"p99"`
	P999    *float64 `json:"p999"`
	Mean    *float64 `json:"mean"`
	Max     *float64 `json:"max"`
	MinRTT  *float64 `json:"min_rtt,omitempty"`
}

type countView struct {
	Arrived  uint64            `json:"arrived"`
	Success  uint64            `json:"success"`
	Dropped  uint64            `json:"dropped"`
	Ignored  uint64            `json:"ignored"`
	Canceled uint64            `json:"canceled"`
	Rejected uint64            `json:"rejected"`
	ByReason map[string]uint64 `json:"rejected_by_reason"`
}

type floorView struct {
	Priority string `json:"priority"`
	Reason   string `json:"reason"`
}

type decisionView struct {
	At      *time.Time `json:"at"`
	Limit   int        `json:"limit"`
	Rate    float64    `json:"rate,omitempty"`
	Changed bool       `json:"changed"`
	Reason  string     `json:"reason"`
	// CPU, Memory and CPUPressure are the figures the law was given at
	// that tick (null when not known): those its reason quotes, which the
	// dashboard's cards show.
	CPU         *float64 `json:"cpu"`
	Memory      *float64 `json:"memory"`
	CPUPressure *float64 `json:"cpu_pressure"`
}

type changeView struct {
	At       time.Time `json:"at"`
	From     int       `json:"from"`
	To       int       `json:"to"`
	RateFrom float64   `json:"rate_from,omitempty"`
	Rate     float64   `json:"rate,omitempty"`
	Reason   string    `json:"reason"`
}

type overrideView struct {
	At           time.Time     `json:"at"`
	KeepOnReload bool          `json:"keep_on_reload"`
	Changes      []fieldChange `json:"changes"`
}

type fieldChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// newGroupView renders st; c is the group's config in force (nil if the
// group was just removed) and keep whether its override survives reloads.
func newGroupView(st gate.GroupStatus, c *configs.Group, keep bool) groupView {
	v := groupView{
		Name:     st.Name,
		Law:      configs.Law(st.Law),
		Limit:    st.Limit,
		Min:      st.Min,
		Max:      st.Max,
		InFlight: st.InFlight,
		Queue: queueView{
			Length:            st.Queued,
			Max:               st.QueueMax,
			Order:             "fifo",
			WaitBound:         st.QueueWait.Seconds(),
			WaitBoundCritical: st.QueueWaitCritical.Seconds(),
			Wait:              newLatencyView(st.QueueWaits),
		},
		Latency:    newLatencyView(st.Latency),
		Throughput: st.Throughput,
		Keys:       st.Keys,
		Requests: countView{
			Arrived:  st.Arrived,
			Success:  st.Completed[gate.Success],
			Dropped:  st.Completed[gate.Dropped],
			Ignored:  st.Completed[gate.Ignored],
			Canceled: st.Canceled,
			ByReason: make(map[string]uint64, adaptive.NumRejections-1),
		},
		Decision: decisionView{
			At:          when(st.Tick),
			Limit:       st.Decision.Limit,
			Rate:        st.Decision.Rate,
			Changed:     st.Decision.Changed,
			Reason:      st.Decision.Reason.String(),
			CPU:         knownValue(st.Sample.CPU, st.Sample.CPUKnown),
			Memory:      knownValue(st.Sample.Memory, st.Sample.MemoryKnown),
			CPUPressure: knownValue(st.Sample.CPUPressure, st.Sample.CPUPressureKnown),
		},
		Config: c,
	}
	if st.QueueLIFO {
		v.Queue.Order = "lifo"
	}
	if st.TokenRate > 0 {
		v.Rate = &rateView{PerSecond: st.TokenRate, Managed: st.RateManaged, Keys: st.RateKeys, Global: newGlobalView(st)}
	}
	if c != nil {
		t := c.Targets
		v.Targets = targetsView{Latency: positive(time.Duration(t.Latency).Seconds()), Quantile: t.Quantile,
			CPU: positive(t.CPU), Memory: positive(t.Memory), CPUPressure: positive(t.CPUPressure)}
	}
	for r := 1; r < adaptive.NumRejections; r++ {
		n := st.Rejected[r]
		v.Requests.ByReason[adaptive.Rejection(r).String()] = n
		v.Requests.Rejected += n
	}
	if st.Floor != (adaptive.Floor{}) {
		v.Floor = &floorView{Priority: st.Floor.Priority.String(), Reason: st.Floor.Reason.String()}
	}
	if ch := st.LastChange; ch != nil {
		v.LastChange = &changeView{At: ch.At, From: ch.From, To: ch.To, RateFrom: ch.RateFrom, Rate: ch.Rate, Reason: ch.Reason}
	}
	if ov := st.Override; ov != nil {
		o := &overrideView{At: ov.At, KeepOnReload: keep, Changes: make([]fieldChange, len(ov.Changes))}
		for i, ch := range ov.Changes {
			o.Changes[i] = fieldChange{Field: ch.Path, From: ch.From, To: ch.To}
		}
		v.Override = o
	}
	return v
}

func newLatencyView(s probe.Snapshot) latencyView {
	v := latencyView{Samples: s.Successes}
	if s.Successes == 0 {
		return v
	}
	sec := func(d time.Duration) *float64 { x := d.Seconds(); return &x }
	v.P50, v.P90, v.P95, v.P99, v.P999 = sec(s.P50), sec(s.P90), sec(s.P95), sec(s.P99), sec(s.P999)
	v.Mean, v.Max = sec(s.Mean), sec(s.Max)
	if s.MinRTT > 0 {
		v.MinRTT = sec(s.MinRTT)
	}
	return v
}

// statusView is GET /v1/status.
type statusView struct {
	Version       string    `json:"version"`
	GoVersion     string    `json:"go_version"`
	Started       time.Time `json:"started"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	Ready         bool      `json:"ready"`
	NotReady      string    `json:"not_ready,omitempty"`

	Config    configView    `json:"config"`
	Control   controlView   `json:"control"`
	State     stateView     `json:"state"`
	Resources resourcesView `json:"resources"`
	Admin     adminView     `json:"admin"`
	// Redis is the link to Redis of the global quotas; null without one.
	Redis *redisView `json:"redis"`
	// Circuit is the upstream's circuit breaker; null when it is off.
	Circuit *circuitView `json:"circuit"`
	// Fronts are the front-ends beside the proxy (the permit service,
	// Envoy's rate limit service); empty when none is configured.
	Fronts []frontView `json:"fronts"`
}

// frontView is a FrontStatus.
type frontView struct {
	Name   string            `json:"name"`
	Listen string            `json:"listen"`
	Token  bool              `json:"token"`
	Counts map[string]uint64 `json:"counts"`
}

// circuitView is the upstream's circuit breaker: its state ("closed", "open",
// "half_open"), since when, and why it came to be in it ("" while it never
// changed).
type circuitView struct {
	State  string    `json:"state"`
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
}

type configView struct {
	Source string     `json:"source"`
	Hash   string     `json:"hash"`
	Loaded *time.Time `json:"loaded"`
	Groups []string   `json:"groups"`
	// Overrides names the groups with a runtime override in force.
	Overrides []string `json:"overrides"`
}

type controlView struct {
	Interval float64    `json:"interval_seconds"`
	Ticks    uint64     `json:"ticks"`
	LastTick *time.Time `json:"last_tick"`
}

type stateView struct {
	File      string      `json:"file"`
	LastSave  *time.Time  `json:"last_save"`
	SaveError string      `json:"save_error,omitempty"`
	Restore   restoreView `json:"restore"`
}

type restoreView struct {
	SavedAt *time.Time `json:"saved_at"`
	Groups  int        `json:"groups"`
	Error   string     `json:"error,omitempty"`
}

type adminView struct {
	Listen string `json:"listen"`
	// Writable reports whether a token is set, so mutations are possible.
	Writable bool `json:"writable"`
	// ReadsNeedToken reports whether reads need the token (off loopback).
	ReadsNeedToken bool `json:"reads_need_token"`
}

// signalView is a probe.Signal: value null and a reason when not known.
type signalView struct {
	Value  *float64 `json:"value"`
	Known  bool     `json:"known"`
	Reason string   `json:"reason,omitempty"`
}

func newSignal(s probe.Signal) signalView {
	if !s.Known {
		return signalView{Reason: s.Reason}
	}
	v := s.Value
	return signalView{Value: &v, Known: true}
}

type resourcesView struct {
	SampledAt *time.Time `json:"sampled_at"`
	// CPU, Memory and CPUPressure are what the targets steer by. From says
	// whose they are ("cgroup", "process" or "host"; empty when a signal
	// has no source), Source says it for people, or why there is none.
	CPU               signalView  `json:"cpu"`
	CPUFrom           string      `json:"cpu_from"`
	CPUSource         string      `json:"cpu_source"`
	Memory            signalView  `json:"memory"`
	MemoryFrom        string      `json:"memory_from"`
	MemorySource      string      `json:"memory_source"`
	CPUPressure       signalView  `json:"cpu_pressure"`
	CPUPressureFrom   string      `json:"cpu_pressure_from"`
	CPUPressureSource string      `json:"cpu_pressure_source"`
	Host              hostView    `json:"host"`
	Cgroup            cgroupView  `json:"cgroup"`
	Process           processView `json:"process"`
	Runtime           runtimeView `json:"runtime"`
}

type pressureView struct {
	CPUSome    signalView `json:"cpu_some"`
	CPUFull    signalView `json:"cpu_full"`
	MemorySome signalView `json:"memory_some"`
	MemoryFull signalView `json:"memory_full"`
}

type hostView struct {
	CPUs        int          `json:"cpus"`
	CPU         signalView   `json:"cpu"`
	Memory      signalView   `json:"memory"`
	MemoryTotal signalView   `json:"memory_total_bytes"`
	Pressure    pressureView `json:"pressure"`
}

// cgroupView is the cgroups the guarded signals are read from: CPU and
// memory may be read from different ones, pressure only from cgroup v2.
type cgroupView struct {
	CPUDir           string       `json:"cpu_dir"`
	CPU              signalView   `json:"cpu"`
	CPULimit         signalView   `json:"cpu_limit_cores"`
	Throttled        signalView   `json:"throttled"`
	MemoryDir        string       `json:"memory_dir"`
	Memory           signalView   `json:"memory"`
	MemoryWorkingSet signalView   `json:"memory_working_set_bytes"`
	MemoryLimit      signalView   `json:"memory_limit_bytes"`
	PressureDir      string       `json:"pressure_dir"`
	Pressure         pressureView `json:"pressure"`
}

type processView struct {
	PID int `json:"pid"`
	// CPUs is how many CPUs it may run on; CPU is its share of them.
	CPUs int        `json:"cpus"`
	CPU  signalView `json:"cpu"`
	RSS  signalView `json:"rss_bytes"`
}

type runtimeView struct {
	HeapBytes  uint64  `json:"heap_bytes"`
	HeapGoal   uint64  `json:"heap_goal_bytes"`
	Goroutines int     `json:"goroutines"`
	GCCycles   uint64  `json:"gc_cycles"`
	GCPauseMax float64 `json:"gc_pause_max_seconds"`
}

func newPressure(p probe.Pressure) pressureView {
	return pressureView{newSignal(p.CPUSome), newSignal(p.CPUFull), newSignal(p.MemorySome), newSignal(p.MemoryFull)}
}

func newResourcesView(r probe.Resources) resourcesView {
	return resourcesView{
		SampledAt:         when(r.Time),
		CPU:               newSignal(r.CPU),
		CPUFrom:           r.CPUFrom,
		CPUSource:         r.CPUSource,
		Memory:            newSignal(r.Memory),
		MemoryFrom:        r.MemoryFrom,
		MemorySource:      r.MemorySource,
		CPUPressure:       newSignal(r.CPUPressure),
		CPUPressureFrom:   r.CPUPressureFrom,
		CPUPressureSource: r.CPUPressureSource,
		Host: hostView{CPUs: r.Host.CPUs, CPU: newSignal(r.Host.CPU), Memory: newSignal(r.Host.Memory),
			MemoryTotal: newSignal(r.Host.MemoryTotal), Pressure: newPressure(r.Host.Pressure)},
		Cgroup: cgroupView{CPUDir: r.Cgroup.CPUDir, CPU: newSignal(r.Cgroup.CPU), CPULimit: newSignal(r.Cgroup.CPULimit),
			Throttled: newSignal(r.Cgroup.Throttled), MemoryDir: r.Cgroup.MemoryDir, Memory: newSignal(r.Cgroup.Memory),
			MemoryWorkingSet: newSignal(r.Cgroup.MemoryWorkingSet), MemoryLimit: newSignal(r.Cgroup.MemoryLimit),
			PressureDir: r.Cgroup.PressureDir, Pressure: newPressure(r.Cgroup.Pressure)},
		Process: processView{PID: r.Process.PID, CPUs: r.Process.CPUs, CPU: newSignal(r.Process.CPU), RSS: newSignal(r.Process.RSS)},
		Runtime: runtimeView{HeapBytes: r.Runtime.HeapBytes, HeapGoal: r.Runtime.HeapGoal, Goroutines: r.Runtime.Goroutines,
			GCCycles: r.Runtime.GCCycles, GCPauseMax: r.Runtime.GCPauseMax.Seconds()},
	}
}

// knownValue is x, or nil when it is not known.
func knownValue(x float64, known bool) *float64 {
	if !known {
		return nil
	}
	return &x
}

// when is t, or nil for the zero instant.
func when(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// positive is x, or nil when x is not positive (a target that is off).
func positive(x float64) *float64 {
	if x <= 0 {
		return nil
	}
	return &x
}
