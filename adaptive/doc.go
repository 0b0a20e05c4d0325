// Package adaptive decides how much work a guarded service should be given.
//
// It holds two kinds of pieces, both pure and synchronous: no goroutines, no locks,
// no clock reads, no logging and no metrics. Time arrives as data (Sample.Now), so
// every piece can be driven by a test or by the deterministic simulator in
// adaptive/sim exactly as the daemon drives it.
//
// # Control laws
//
// A Law turns one Sample (what probe and the gate measured over the last control
// interval, 250 ms by default) into a Decision: the concurrency limit for the next
// interval, the token rate where one is managed, whether anything changed and a
// short Reason. The laws are Fixed, AIMD, Vegas, Gradient and Target (the default:
// it tracks the operator's latency, CPU, memory and CPU pressure targets at
// once, and ignores a resource it finds its limit cannot move: Unmoved).
//
// The registry (Laws, LookupLaw, NewLaw) lists them by name, each with what
// it reads of one LawSettings, whether it manages a token rate
// (RateManager) and how to build it: configs validates a group's law
// through it, the gate and the simulator build laws from it. A new law is
// one file (the type, its params and its LawKind) and one line in
// registry.go.
//
// Every law shares the same guard rails: a Bounds (min, max, initial limit), the
// app-limited guard (a limit that is not in use is never raised, see UseRatio) and
// a Reason for every change. A law is restarted from a saved limit by constructing
// it with Bounds.Initial set to that limit (clamp it with Bounds.Clamp first).
// Runtime changes of bounds or targets (admin PATCH) are applied the same way: build
// a new law value from the new params with Initial = old.Limit(); the law relearns
// its short-term state (latency baselines) within a few intervals.
//
// # The target law
//
// Target, the default law, keeps every target the operator set at once. Each
// interval every target proposes a limit and the most restrictive wins.
//
// Latency. By Little's law the mean in flight is N = X × mean (X the
// completion rate); adding ΔN in flight delays every request by ΔN / X, so
// the in-flight count that puts the quantile p at the aim a is N + X × (a −
// p). The aim is target × (1 − Headroom); the limit is cut only above
// target × (1 − Headroom/3), and the band between is a dead band (the rest
// of the target is left for the wait in the gate's queue). A cut goes the
// whole way (a mild one Gain of it, see Pacing), at most to maxCut of what
// is in use; a raise goes Gain of the way, at most to maxGrowth × the limit. While the limit binds and the mean latency stays
// within Tolerance of its no-load baseline (the lowest interval mean), the
// limit doubles per interval, a slow start (SignalNoQueueing), as long as
// completions keep up: after a doubling, the next waits for the throughput
// to grow by slowGrowth (a doubling that bought no completions says the
// latency does not show the queue).
//
// Latency the limit cannot fix. The no-queue quantile is p − (mean −
// baseline); when it is over the aim, only Tolerance of queueing is allowed
// (SignalQueueing). Once cuts have taken the in-flight count down to
// judgeShare of where they began, a mean latency that fell by less than
// responsiveShare of what Little's law predicts shows a stale baseline: the
// law adopts the mean and restores the limit held before the cuts
// (SignalUnresponsive). Drops over the quantile's budget (1 % for p99) are
// cut on too; if halving the in-flight count left them at dropsUnmovedShare
// of where they were or more, they are not load (an outage): they are tolerated up to dropFloorMargin
// above that floor and the limit is restored (SignalDropsUnmoved).
//
// Overload. While the gate turns away more than overloadShare of the demand,
// the law aims at the knee (the no-queue quantile plus Tolerance) instead of
// the target (SignalOverload): beyond the knee a queue adds only latency,
// and the waiting happens in the gate's queue, which sheds it. The target is
// then a ceiling, not the set point: where the backend queues beyond doubt
// (the mean at least kneeQueueing times the baseline), the knee is also the
// cut threshold, and such a cut goes no lower than the in-flight count at
// which the mean would be kneeQueueing times the baseline. Each cut toward
// the knee is on trial for kneeJudge intervals and undone if it cost more
// of the throughput than kneeCost, twice the noise of the counts (a service
// whose completions grow with concurrency past its latency knee); cuts
// toward the knee then stop at that limit (SignalKneeCost) until the
// overload ends. A cut toward the knee is undone too if the overload ends
// while it is on trial (SignalKneeBurst): its refusals were a burst at
// about capacity, which a queue absorbs, not an excess. They are not made while
// the baseline is in doubt (the service lost capacity under a binding
// limit: it may have slowed, which leaves the baseline stale and a knee
// estimated from it too low) or while the service waits for CPU (its
// pressure over kneePressure: its throughput grows with its share of the
// cores; the decision's reason then says so). The pressure is the guarded
// service's, never the host's in its stead: the host's is high whenever
// the machine is busy, whoever keeps it busy.
//
// Stalls. While completions do not keep up with what is in flight (by
// Little's law the successes account for under stallShare of the work held
// through the interval, where the latency last seen would have brought
// several: the service stopped answering), and in the interval after (whose
// latency is the stall's), the
// law holds (SignalStalled): it must not read the few requests that came
// back as a service with room, nor blame concurrency for a pause. The gate
// meanwhile refuses arrivals to the silent service (Silent), free slot or
// not; those refusals (Sample.Silenced) show the stall to the law but are
// no sign of a binding limit or of overload.
//
// Resources. CPU and CPU pressure are cut proportionally above their
// targets and aimed at target × (1 − Headroom/5); memory, which must never
// pass its target, is budgeted by a least-squares model of memory against
// the work held, so a full limit plus a full queue fits, and aimed at
// target × (1 − Headroom/2) (SignalMemoryBudget). CPU pressure is an
// average over PressureWindow, so after a pressure cut the law waits a
// quarter of the window before cutting on it again. A resource the cuts do not
// move (a neighbour's CPU, memory held by something else) is judged as
// latency is; the law then restores the limit and ignores that resource
// (Unmoved; SignalCPUUnmoved, SignalMemoryUnmoved, SignalPressureUnmoved)
// until it is back under its aim or unmovedRetry has passed.
//
// Pacing. A cut is not repeated while what the old limit admitted drains. A
// mild excess must persist for two intervals; one over severeExcess (for a
// utilisation, a quarter of the room left) cuts at once, and one over
// firmExcess cuts the whole way when it persists; a milder one goes Gain of
// the way.
//
// Token rate. With TargetParams.Rate the law also manages a token rate (a
// RateManager): it is cut with the limit, brought to what the service
// completes under sustained overload, so the excess is refused at once with
// an exact Retry-After, and given back by rateStep an interval when demand
// falls.
//
// # Shedding policy
//
// The gate composes four small policy pieces around its slots and queue. Each is
// updated once per control interval from the same Sample and yields a small value
// the gate publishes atomically and consults per request without locks:
//
//   - ResourceGuard: memory beyond its target admits only Critical, CPU beyond its
//     target sheds priorities below Default. Yields a Floor. It is given the
//     sample without the signals the law found it cannot move
//     (Unmoved.Mask): shedding priorities cannot move them either.
//   - PriorityShedder: sheds whole priority levels from the bottom up, only while a
//     higher level is being turned away. Yields a Floor.
//   - QueueWait: the CoDel-style wait bound for new waiters (short when a standing
//     queue persists, long for bursts) and whether the queue runs LIFO. Yields a
//     QueueBound.
//   - FairShare: stateless; when the group is at its limit, a key holding its fair
//     share of slots or more is turned away before it can queue.
//
// Per interval the gate does, in this order:
//
//	d := law.Update(s)                  // apply d.Limit (and d.Rate when > 0)
//	qb := queueWait.Update(s)           // wait bound and FIFO/LIFO for new waiters
//	floor := guard.Update(unmoved.Mask(s)).Max(shedder.Update(s))
//
// Per request, in this order (see the simulator's gate model for the reference):
//
//	floor.Admit(priority)               // RejectMemory, RejectCPU or RejectPriority
//	token rate, when managed            // RejectRate
//	FairShare.Allow(...)                // RejectFairShare
//	slot, else queue (qb.Wait, priority) // RejectQueueFull, RejectQueueTimeout, RejectConcurrency
//
// Nothing in this package is safe for concurrent use unless its doc says so: one
// control goroutine owns the laws and the per-interval pieces. The values they yield
// (Decision, Floor, QueueBound) are plain values, and FairShare is stateless.
package adaptive
