package adaptive

import (
	"math"
	"time"
)

// Sample is what the gate measured over one control interval, filled from probe's
// snapshot and the gate's own counters. It is the only input of a control law.
//
// The zero value is a valid, empty sample: no completions, no resources known. All
// durations are wall-clock latencies; all counts cover the interval (Now-Interval,
// Now] unless a field says otherwise.
type Sample struct {
	// Now is the end of the interval. Laws use it as their clock: it must not go
	// backwards between calls.
	Now time.Time
	// Interval is the length of the interval; zero means 250 ms.
	Interval time.Duration

	// Limit is the concurrency limit in force at the end of the interval, for
	// logs and tests; laws go by the limit they decided last (Law.Limit).
	Limit int
	// InFlight is the number of admitted requests not yet done at Now.
	InFlight int
	// InFlightStart is the number in flight at the start of the interval
	// (the previous sample's InFlight); with InFlight it tells whether
	// completions kept up with what was in flight (Stalled). Zero: unknown.
	InFlightStart int
	// MaxInFlight is the peak number of admitted requests in flight during the
	// interval. It drives the app-limited guard.
	MaxInFlight int

	// Successes counts admitted requests that completed with a usable outcome.
	Successes int
	// Drops counts admitted requests that timed out or failed in a way that signals
	// overload (upstream 5xx, connection error).
	Drops int
	// Rejected counts requests turned away at the concurrency stage: no slot and no
	// room or time in the queue (RejectConcurrency, RejectQueueFull,
	// RejectQueueTimeout) or over their key's fair share (RejectFairShare). Any
	// Rejected means the limit was in use.
	Rejected int
	// RateRejected counts requests turned away by the managed token rate.
	RateRejected int
	// Shed counts requests turned away before the concurrency stage by the policy
	// (RejectPriority, RejectCPU, RejectMemory). Informational.
	Shed int
	// Silenced counts requests refused on arrival because the service was
	// silent (Silent: a stall), counted in no other field: they say nothing
	// of the limit (a stall is no overload, and a silence found by chance
	// does not bind it), only that completions stopped.
	Silenced int

	// Queued counts requests that had to wait for a slot during the interval.
	Queued int
	// QueueLength is the number of waiters at Now.
	QueueLength int
	// QueueCapacity is the most waiters the queue holds (its configured
	// maximum); zero when there is no queue. Target budgets memory for a full
	// queue with it.
	QueueCapacity int
	// QueueWaitMin is the shortest time a request spent waiting among those that
	// left the queue during the interval (admitted, timed out or evicted); zero when
	// none left. QueueWait (CoDel) uses it to tell a standing queue from a burst.
	QueueWaitMin time.Duration
	// QueueWaitMax is the longest such wait.
	QueueWaitMax time.Duration
	// QueueDrained reports that the queue was empty at some moment of the
	// interval (at Now included). QueueWait needs it: under LIFO the newest waiter
	// is served at once, so a short minimum wait does not prove the queue drains.
	QueueDrained bool

	// Latency summarises the upstream latency of the successes of the interval (or
	// of probe's window ending at Now), from slot acquired to response; queue wait
	// is not included.
	Latency Latency
	// MinRTT is the lowest latency probe saw over its long window (tens of seconds);
	// zero when unknown.
	MinRTT time.Duration

	// Throughput is the completion rate of admitted requests (successes and drops)
	// in requests per second. Zero means "derive it from the counts and Interval".
	Throughput float64

	// CPU and Memory are utilisations of what the gate guards, in [0, 1]. They are
	// used only when the matching Known flag is set; a NaN value is treated as
	// unknown even when the flag is set. The zero value is therefore "unknown".
	CPU         float64
	CPUKnown    bool
	Memory      float64
	MemoryKnown bool
	// CPUPressure is the share of time in which some runnable task of what the
	// gate guards waited for a CPU, in [0, 1]: Linux's pressure stall
	// information (cpu.pressure "some"), as an average over a window ending
	// at Now (PSI's avg10: 10 s, updated every 2 s). Used only when
	// CPUPressureKnown is set, as CPU is.
	CPUPressure      float64
	CPUPressureKnown bool

	// ByPriority breaks arrivals and concurrency-stage rejections down by priority.
	// The priority shedder reads it; laws do not.
	ByPriority [NumPriorities]PriorityCount
}

// PriorityCount is the traffic of one priority level in one interval.
type PriorityCount struct {
	// Arrived counts requests of this priority that reached the gate, including
	// those shed.
	Arrived int
	// Rejected counts those turned away at the concurrency stage for want
	// of capacity (RejectConcurrency, RejectQueueFull, RejectQueueTimeout),
	// what PriorityShedder reads as the level suffering. A key held to its
	// fair share (RejectFairShare) is not counted here: it is turned away
	// for its own excess, which shedding other levels would not relieve.
	Rejected int
}

// Latency is a latency distribution summary. Zero fields mean "unknown".
type Latency struct {
	Min, Mean, P50, P90, P95, P99, P999 time.Duration
}

// Quantile names a latency figure of a Latency.
type Quantile uint8

// Quantiles a target can be set on. The zero value means "the default", P99.
const (
	QuantileDefault Quantile = iota
	P50
	P90
	P95
	P99
	P999
	Mean
)

// QuantileAtLeast is the figure a target set on the quantile q (0.5 to
// 0.9999, as a configuration writes it) is read from: the nearest one at or
// above q, so the target is never looser than the operator's (p99.9 for
// anything above 0.99, the finest the probe reports).
func QuantileAtLeast(q float64) Quantile {
	switch {
	case q <= 0.5:
		return P50
	case q <= 0.9:
		return P90
	case q <= 0.95:
		return P95
	case q <= 0.99:
		return P99
	}
	return P999
}

// String returns the quantile's short name ("p99", "p99.9", "mean").
func (q Quantile) String() string {
	switch q {
	case P50:
		return "p50"
	case P90:
		return "p90"
	case P95:
		return "p95"
	case P99, QuantileDefault:
		return "p99"
	case P999:
		return "p99.9"
	case Mean:
		return "mean"
	}
	return "p?"
}

// ParseQuantile parses "p50", "p90", "p95", "p99", "p99.9" (or "p999") and "mean".
func ParseQuantile(s string) (Quantile, bool) {
	switch s {
	case "p50":
		return P50, true
	case "p90":
		return P90, true
	case "p95":
		return P95, true
	case "p99":
		return P99, true
	case "p99.9", "p999":
		return P999, true
	case "mean":
		return Mean, true
	}
	return QuantileDefault, false
}

// budget is the share of requests a quantile allows above it (0.01 for p99).
func (q Quantile) budget() float64 {
	switch q {
	case P50, Mean:
		return 0.5
	case P90:
		return 0.1
	case P95:
		return 0.05
	case P999:
		return 0.001
	}
	return 0.01
}

// Quantile returns the figure q of l (P99 for QuantileDefault).
func (l Latency) Quantile(q Quantile) time.Duration {
	switch q {
	case P50:
		return l.P50
	case P90:
		return l.P90
	case P95:
		return l.P95
	case P999:
		return l.P999
	case Mean:
		return l.Mean
	}
	return l.P99
}

// DefaultInterval is the control interval assumed when Sample.Interval is zero.
const DefaultInterval = 250 * time.Millisecond

func (s *Sample) interval() time.Duration {
	if s.Interval <= 0 {
		return DefaultInterval
	}
	return s.Interval
}

// answered returns the share of the work held in flight through the
// interval that came back: the successes times their mean latency (Little's
// law), with each drop counted as in flight for the whole interval (a fast
// failure is an answer), against min(InFlightStart, InFlight) requests held
// for the interval; and how many were held (0: none, and the share is
// meaningless).
func (s *Sample) answered() (share float64, held int) {
	held = min(max(s.InFlightStart, 0), max(s.InFlight, 0))
	if held == 0 {
		return 0, 0
	}
	iv := s.interval().Seconds()
	work := float64(max(0, s.Successes))*seconds(s.Latency.Mean) + float64(max(0, s.Drops))*iv
	return work / (float64(held) * iv), held
}

// stallShare is the share of the work held in flight that must come back
// within an interval for completions to count as keeping up (Target's
// stalled): in a steady state all of it does (Little's law), and a service
// that stops for half the interval or more falls under it. stallExpected
// is how many completions the interval must have been expected to bring (by
// the latency last seen) for their absence to say anything: a request
// slower than the interval is in flight through it as a matter of course.
const (
	stallShare    = 0.5
	stallExpected = 4
)

// completed is the number of admitted requests that finished with a signal.
func (s *Sample) completed() int { return max(0, s.Successes) + max(0, s.Drops) }

// throughput returns completions per second (Throughput, or derived from counts).
func (s *Sample) throughput() float64 {
	if s.Throughput > 0 && !math.IsInf(s.Throughput, 0) {
		return s.Throughput
	}
	return float64(s.completed()) / s.interval().Seconds()
}

// dropRatio is drops over completions, 0 when nothing completed.
func (s *Sample) dropRatio() float64 {
	c := s.completed()
	if c == 0 {
		return 0
	}
	return float64(max(0, s.Drops)) / float64(c)
}

// cpu returns the CPU utilisation and whether it is known.
func (s *Sample) cpu() (float64, bool) { return utilisation(s.CPU, s.CPUKnown) }

// memory returns the memory utilisation and whether it is known.
func (s *Sample) memory() (float64, bool) { return utilisation(s.Memory, s.MemoryKnown) }

// cpuPressure returns the CPU pressure and whether it is known.
func (s *Sample) cpuPressure() (float64, bool) {
	return utilisation(s.CPUPressure, s.CPUPressureKnown)
}

func utilisation(v float64, known bool) (float64, bool) {
	if !known || math.IsNaN(v) || v < 0 {
		return 0, false
	}
	return math.Min(v, 1), true
}

// seconds converts a non-negative duration to seconds, 0 for negatives.
func seconds(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return d.Seconds()
}
