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
// Every law shares the same guard rails: a Bounds (min, max, initial limit), the
// app-limited guard (a limit that is not in use is never raised, see UseRatio) and
// a Reason for every change. A law is restarted from a saved limit by constructing
// it with Bounds.Initial set to that limit (clamp it with Bounds.Clamp first).
// Runtime changes of bounds or targets (admin PATCH) are applied the same way: build
// a new law value from the new params with Initial = old.Limit(); the law relearns
// its short-term state (latency baselines) within a few intervals.
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
