package admin

import (
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/probe"
)

// The read-outs of the API render the gate's state into package api's
// types (seconds, ratios 0–1, null for what is not known).

// newGroupView renders st; c is the group's config in force (nil if the
// group was just removed), keep whether its override survives reloads and
// off the targets switched off for want of a signal.
func newGroupView(st gate.GroupStatus, c *spec.Group, keep bool, off switchedOff) api.Group {
	v := api.Group{
		Name:     st.Name,
		Law:      spec.Law(st.Law),
		Limit:    st.Limit,
		Min:      st.Min,
		Max:      st.Max,
		InFlight: st.InFlight,
		Queue: api.Queue{
			Length:            st.Queued,
			Max:               st.QueueMax,
			Order:             "fifo",
			WaitBound:         st.QueueWait.Seconds(),
			WaitBoundCritical: st.QueueWaitCritical.Seconds(),
			Wait:              newLatencyView(st.QueueWaits),
		},
		Streams:    api.Streams{Open: st.Streams.Open, Max: st.Streams.Max, Opened: st.Streams.Opened},
		Latency:    newLatencyView(st.Latency),
		Throughput: st.Throughput,
		Keys:       st.Keys,
		Requests: api.Requests{
			Arrived:  st.Arrived,
			Success:  st.Completed[gate.Success],
			Dropped:  st.Completed[gate.Dropped],
			Ignored:  st.Completed[gate.Ignored],
			Canceled: st.Canceled,
			ByReason: make(map[string]uint64, adaptive.NumRejections-1),
		},
		Decision: api.Decision{
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
	v.RejectedKeys = rejectedKeysView(st.RejectedKeys)
	if st.TokenRate > 0 {
		v.Rate = &api.Rate{PerSecond: st.TokenRate, Managed: st.RateManaged, Keys: st.RateKeys, Global: newGlobalView(st)}
	}
	if c != nil {
		t := c.Targets
		v.Targets = api.Targets{Latency: positive(time.Duration(t.Latency).Seconds()), Quantile: t.Quantile,
			CPU: positive(off.apply(t.CPU, off.cpu)), Memory: positive(off.apply(t.Memory, off.memory)),
			CPUPressure: positive(off.apply(t.CPUPressure, off.pressure))}
	}
	for r := 1; r < adaptive.NumRejections; r++ {
		n := st.Rejected[r]
		v.Requests.ByReason[adaptive.RejectReason(r).String()] = n
		v.Requests.Rejected += n
	}
	v.Mode, v.Shadow = shadowView(&st.Shadow)
	if st.Floor != (adaptive.Floor{}) {
		v.Floor = &api.Floor{Priority: st.Floor.Priority.String(), Reason: st.Floor.Reason.String()}
	}
	if ch := st.LastChange; ch != nil {
		v.LastChange = &api.Change{At: ch.At, From: ch.From, To: ch.To, RateFrom: ch.RateFrom, Rate: ch.Rate, Reason: ch.Reason}
	}
	if ov := st.Override; ov != nil {
		o := &api.Override{At: ov.At, KeepOnReload: keep, Changes: make([]api.FieldChange, len(ov.Changes))}
		for i, ch := range ov.Changes {
			o.Changes[i] = api.FieldChange{Field: ch.Path, From: ch.From, To: ch.To}
		}
		v.Override = o
	}
	return v
}

func newLatencyView(s probe.Snapshot) api.Latency {
	v := api.Latency{Samples: s.Successes}
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

func newSignal(s probe.Signal) api.Signal {
	if !s.Known {
		return api.Signal{Reason: s.Reason}
	}
	v := s.Value
	return api.Signal{Value: &v, Known: true}
}

func newPressure(p probe.Pressure) api.Pressure {
	return api.Pressure{CPUSome: newSignal(p.CPUSome), CPUFull: newSignal(p.CPUFull),
		MemorySome: newSignal(p.MemorySome), MemoryFull: newSignal(p.MemoryFull)}
}

func newResourcesView(r probe.Resources) api.Resources {
	return api.Resources{
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
		Host: api.Host{CPUs: r.Host.CPUs, CPU: newSignal(r.Host.CPU), Memory: newSignal(r.Host.Memory),
			MemoryTotal: newSignal(r.Host.MemoryTotal), Pressure: newPressure(r.Host.Pressure)},
		Cgroup: api.Cgroup{CPUDir: r.Cgroup.CPUDir, CPU: newSignal(r.Cgroup.CPU), CPULimit: newSignal(r.Cgroup.CPULimit),
			Throttled: newSignal(r.Cgroup.Throttled), MemoryDir: r.Cgroup.MemoryDir, Memory: newSignal(r.Cgroup.Memory),
			MemoryWorkingSet: newSignal(r.Cgroup.MemoryWorkingSet), MemoryLimit: newSignal(r.Cgroup.MemoryLimit),
			PressureDir: r.Cgroup.PressureDir, Pressure: newPressure(r.Cgroup.Pressure)},
		Process: api.Process{PID: r.Process.PID, CPUs: r.Process.CPUs, CPU: newSignal(r.Process.CPU), RSS: newSignal(r.Process.RSS)},
		Runtime: api.Runtime{HeapBytes: r.Runtime.HeapBytes, HeapGoal: r.Runtime.HeapGoal, Goroutines: r.Runtime.Goroutines,
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

// switchedOff says which resource targets are off for want of a signal: a
// CPU, memory or CPU pressure target whose signal has no source
// (probe.Source.Usable: no memory limit to measure against, no CPU
// allotment, ...) can be neither met nor missed, the gate leaves it idle,
// and the daemon logs at start that it is switched off; the read-outs show
// it as off, not as a line on a chart of nothing. The group's config (the
// file's values) still shows it.
type switchedOff struct{ cpu, memory, pressure bool }

// switchedOffIn reads them from the gate's status: nothing is off before the
// first resource sample, which finds the sources.
func switchedOffIn(st gate.Status) switchedOff {
	if st.Ticks == 0 {
		return switchedOff{}
	}
	src := st.Resources.Sources()
	return switchedOff{cpu: !src.CPU.Usable(), memory: !src.Memory.Usable(), pressure: !src.CPUPressure.Usable()}
}

// apply is target x, or 0 (off) when off says so.
func (switchedOff) apply(x float64, off bool) float64 {
	if off {
		return 0
	}
	return x
}

// positive is x, or nil when x is not positive (a target that is off).
func positive(x float64) *float64 {
	if x <= 0 {
		return nil
	}
	return &x
}

// rejectedKeysView is a summary of keys for the API: never null, so that
// "none" reads as [].
func rejectedKeysView(keys []gate.RejectedKey) []api.RejectedKey {
	v := make([]api.RejectedKey, len(keys))
	for i, k := range keys {
		v[i] = api.RejectedKey{Key: k.Key, Count: k.Count, Error: k.Error, Reason: k.Reason.String()}
	}
	return v
}
