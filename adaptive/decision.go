package adaptive

import (
	"strconv"
	"strings"
	"time"
)

// Decision is a law's answer to one Sample.
type Decision struct {
	// Limit is the concurrency limit for the next interval, within the law's Bounds.
	Limit int
	// Rate is the token rate for the next interval in requests per second when the
	// law manages one (Target with TargetParams.Rate set), always > 0 then. Zero
	// means the law manages no rate: leave the gate's rate as configured.
	Rate float64
	// Changed reports whether Limit or Rate differs from the previous decision.
	Changed bool
	// Reason says which signal drove the decision. It is set on every change and,
	// where useful, when the law held (Changed false).
	Reason Reason
}

// Signal names what drove a decision.
type Signal uint8

// Signals a Reason can carry.
const (
	SignalNone Signal = iota
	// SignalLatency: a latency quantile (Reason.Quantile) against its target.
	// Observed and Bound are in seconds.
	SignalLatency
	// SignalQueueing: the latency target cannot be met even without queueing (the
	// backend's own latency is above it), so only queueing is being limited.
	// Observed is the quantile, Bound the tolerated level, in seconds.
	SignalQueueing
	// SignalUnresponsive: latency did not fall when concurrency was cut, so it is
	// not caused by concurrency; the law undid the cuts. Observed is the mean
	// latency now, Bound the mean latency before the cuts, in seconds.
	SignalUnresponsive
	// SignalCPU and SignalMemory: a utilisation (0..1) against its target.
	SignalCPU
	SignalMemory
	// SignalMemoryBudget: the memory a full limit plus a full queue would use,
	// by the law's memory model, against the memory target.
	SignalMemoryBudget
	// SignalDrops: the drop ratio (0..1) against the tolerated ratio.
	SignalDrops
	// SignalQueue: Vegas's estimate of requests queued at the backend against its
	// alpha or beta threshold.
	SignalQueue
	// SignalSlowStart: Vegas doubles the limit while no queueing is seen.
	// Observed is the queue estimate, Bound the threshold that ends slow start.
	SignalSlowStart
	// SignalNoQueueing: Target doubles the limit while the mean latency stays
	// within Tolerance of its no-load baseline and completions keep up with
	// the doublings (slowGrowth). Observed is the mean latency,
	// Bound the baseline plus Tolerance, in seconds.
	SignalNoQueueing
	// SignalGradient: Gradient's long/short latency ratio (Observed) against 1.
	SignalGradient
	// SignalInUse: the limit is in use and healthy, so it grows. Observed is the
	// peak in flight, Bound the limit.
	SignalInUse
	// SignalAppLimited: the limit is not in use, so it is not raised. Observed is
	// the peak in flight, Bound the limit.
	SignalAppLimited
	// SignalRate: the managed token rate is in use and the targets have headroom,
	// so the rate grows. Observed is the throughput, Bound the rate, in req/s.
	SignalRate
	// SignalNoData: the sample gave the law nothing to act on (no completions,
	// or no figure for any of its targets); it held.
	SignalNoData
	// SignalOverload: Target turns away a large share of the demand
	// (Reason.Refused, over overloadShare), so it aims the latency quantile
	// at the backend's knee, its no-queue level (Reason.NoQueue) plus
	// tolerance, rather than at the target: beyond the knee more in flight
	// only adds latency. Observed is the quantile, Bound the knee, in
	// seconds; Target the operator's target, which is not what binds here
	// (the knee is below the level the target aims at).
	SignalOverload
	// SignalCPUPressure: the CPU pressure (0..1) against its target.
	SignalCPUPressure
	// SignalCPUUnmoved, SignalMemoryUnmoved and SignalPressureUnmoved: cutting
	// the limit did not move the resource (Target ignores it, see Unmoved).
	// Observed is the reading, Bound the target.
	SignalCPUUnmoved
	SignalMemoryUnmoved
	SignalPressureUnmoved
	// SignalDropsUnmoved: halving concurrency did not reduce the drop ratio,
	// so the drops are not load; Target tolerates them and undid the cuts.
	// Observed is the drop ratio now, Bound the ratio before the cuts.
	SignalDropsUnmoved
	// SignalRateIdle: nothing was refused, so Target gives the managed token
	// rate back toward its maximum. Observed is the throughput, Bound the
	// rate, in req/s.
	SignalRateIdle
	// SignalRateOverload: under sustained overload Target brings the managed
	// token rate to what the service completes, so the excess is refused at
	// the rate stage. Observed is the throughput, Bound the rate, in req/s.
	SignalRateOverload
	// SignalStalled: completions did not keep up with what was in flight
	// (the service stopped answering), so Target holds the
	// limit, and holds it again through the interval after, whose latency
	// is the stall's. Observed is the share of the work in flight that came
	// back, Bound the share that keeps up (stallShare).
	SignalStalled
	// SignalKneeCost: a cut toward the knee cost completions (more than
	// kneeCost of the throughput over the intervals after it), so the
	// knee is not below the old limit: Target restored it and cuts toward
	// the knee no lower until the overload ends. Observed is the
	// throughput after the cut, Bound before it, in req/s.
	SignalKneeCost
	// SignalKneeBurst: the overload ended while a cut toward the knee was
	// on trial, so its refusals were a burst, which a queue absorbs, not an
	// excess: Target restored the limit from before the cut. Observed is
	// the refused share's average, Bound the share under which the
	// overload ends.
	SignalKneeBurst
)

// Reason explains a Decision with the signal that drove it, the value observed
// and the bound it was compared with. It is a plain value, so producing one costs
// no allocation; String formats it for logs and the admin API, e.g.
// "p99 310ms > target 200ms".
type Reason struct {
	Signal   Signal
	Quantile Quantile // for SignalLatency and SignalQueueing
	Observed float64
	Bound    float64
	// Target is the operator's target when the law compared with a bound
	// derived from it (Target cuts a little below the latency target); zero
	// when Bound is the target itself.
	Target float64
	// Refused and NoQueue are what SignalOverload judged by: the share of
	// the demand the gate turned away (0..1, a moving average over about a
	// second) and the quantile without queueing, in seconds, that the knee
	// (Bound) is derived from.
	Refused, NoQueue float64
	// CPUWait is, for SignalOverload, the guarded service's CPU pressure
	// (0..1) when it withheld a cut toward the knee that the quantile
	// called for (the service waits for CPU: see Target's package doc);
	// zero when none was withheld.
	CPUWait float64
}

// String formats the reason in a few words; "" for SignalNone.
func (r Reason) String() string {
	op := " = "
	switch {
	case r.Observed > r.Bound:
		op = " > "
	case r.Observed < r.Bound:
		op = " < "
	}
	switch r.Signal {
	case SignalLatency:
		if r.Target != 0 && r.Target != r.Bound {
			return r.Quantile.String() + " " + dur(r.Observed) + op + dur(r.Bound) + " (target " + dur(r.Target) + ")"
		}
		return r.Quantile.String() + " " + dur(r.Observed) + op + "target " + dur(r.Bound)
	case SignalQueueing:
		return r.Quantile.String() + " " + dur(r.Observed) + op + dur(r.Bound) +
			": target unreachable without queueing, keeping queueing low"
	case SignalUnresponsive:
		return "mean latency " + dur(r.Observed) + " did not fall from " + dur(r.Bound) +
			" when concurrency was cut: not caused by load"
	case SignalCPU:
		return "cpu " + pct(r.Observed) + op + "target " + pct(r.Bound)
	case SignalMemory:
		return "memory " + pct(r.Observed) + op + "target " + pct(r.Bound)
	case SignalMemoryBudget:
		return "memory at full limit and queue " + pct(r.Observed) + op + "target " + pct(r.Bound)
	case SignalDrops:
		return "drops " + pct(r.Observed) + op + pct(r.Bound)
	case SignalQueue:
		return "queue " + num(r.Observed) + op + num(r.Bound)
	case SignalSlowStart:
		return "slow start, queue " + num(r.Observed) + op + num(r.Bound)
	case SignalNoQueueing:
		return "no queueing, mean " + dur(r.Observed) + op + dur(r.Bound) + ": slow start"
	case SignalGradient:
		return "gradient " + num(r.Observed) + op + num(r.Bound)
	case SignalInUse:
		return "in use, " + num(r.Observed) + " of " + num(r.Bound) + " in flight"
	case SignalAppLimited:
		return "not in use, " + num(r.Observed) + " of " + num(r.Bound) + " in flight"
	case SignalRate:
		return "rate in use, " + num(r.Observed) + "/s of " + num(r.Bound) + "/s"
	case SignalNoData:
		return "no data"
	case SignalOverload:
		knee := "knee " + dur(r.Bound)
		if r.NoQueue > 0 {
			knee += " (no-queue " + r.Quantile.String() + " " + dur(r.NoQueue) + " + " + pct(r.Bound/r.NoQueue-1) + ")"
		}
		s := pct(r.Refused) + " of the demand refused, so aiming at the backend's knee, not the target: " +
			r.Quantile.String() + " " + dur(r.Observed) + op + knee + ", target " + dur(r.Target)
		if r.CPUWait > 0 {
			s += "; no cut toward the knee: the service waits for CPU (cpu pressure " + pct(r.CPUWait) + ")"
		}
		return s
	case SignalCPUPressure:
		return "cpu pressure " + pct(r.Observed) + op + "target " + pct(r.Bound)
	case SignalCPUUnmoved, SignalMemoryUnmoved, SignalPressureUnmoved:
		what := "cpu "
		switch r.Signal {
		case SignalMemoryUnmoved:
			what = "memory "
		case SignalPressureUnmoved:
			what = "cpu pressure "
		}
		return what + pct(r.Observed) + " not moved by the limit (target " + pct(r.Bound) + "): ignored"
	case SignalRateOverload:
		return "overloaded, rate toward what the service completes, " + num(r.Observed) + "/s of " + num(r.Bound) + "/s"
	case SignalRateIdle:
		return "rate not in use, " + num(r.Observed) + "/s of " + num(r.Bound) + "/s: given back"
	case SignalKneeCost:
		return "a cut toward the knee cost completions, " + num(r.Observed) + "/s from " + num(r.Bound) +
			"/s: limit restored, the knee is not below it"
	case SignalKneeBurst:
		return "the overload ended, " + pct(r.Observed) + " of the demand refused (under " + pct(r.Bound) +
			"): it was a burst, the limit before the cut toward the knee restored"
	case SignalStalled:
		if r.Bound == 0 { // the interval after a stall
			return "completions resumed after a stall: its latency is the stall's, not the limit's"
		}
		return "completions stalled: " + pct(r.Observed) + " of the work in flight came back (" + pct(r.Bound) + " keeps up)"
	case SignalDropsUnmoved:
		return "drops " + pct(r.Observed) + " did not fall from " + pct(r.Bound) +
			" when concurrency was cut: not caused by load"
	}
	return ""
}

// dur formats seconds as a duration rounded to three significant figures.
func dur(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d >= 100*time.Millisecond:
		d = d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		d = d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		d = d.Round(10 * time.Microsecond)
	default:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}

// pct formats a ratio as a percentage with at most one decimal ("92%", "85.5%").
func pct(v float64) string {
	s := strconv.FormatFloat(v*100, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + "%"
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
