// Package gate is sluice's admission pipeline and its control loop: the point
// where the static limits, the probes and the control laws meet.
//
// # Use
//
// Build a Gate with New from plain Go values: a Config of Groups (a match,
// a key, a priority, a concurrency law and its bounds, targets, a queue, an
// optional rate), where the zero value of each field is its documented
// default (package gate/spec defines the types; gate re-exports them). Run
// its control loop with Run, then wrap an http.Handler with Middleware, or
// call EnterClass and Pass.DoneAfter around any unit of work. A group with a
// CPU, memory or CPU pressure target needs Params.Resources (a
// *probe.Sampler). Package configs converts sluice's TOML schema into a
// Config (configs.Config.Gate); package gate/redisrate keeps global quotas
// in Redis. gate itself imports neither.
//
// # The data path
//
// Per request (ARCHITECTURE.md, "The data path"), for the first group whose Match accepts it:
//
//  1. classify: the group, the key (client IP, a header, the path or none) and
//     the priority (fixed, or read from a header);
//  2. floor: the published adaptive.Floor, the stricter of the ResourceGuard's
//     (memory beyond its target admits only critical, CPU beyond its target
//     sheds below default) and the PriorityShedder's → "memory", "cpu",
//     "priority";
//  3. rate: the group's static rate limit, per key (limits.Keyed) or for the
//     whole group → "rate"; a leaky_queue's pacing delay is waited out here;
//  4. fair share, when the group has a key: if the group is at its limit and
//     the key already holds its share of the slots (limit / active keys) →
//     "fair_share", so a greedy key gives way before a polite one;
//  5. in a group with a queue and a latency target, below critical: refused at once while the
//     service is silent (requests in flight and none completed for as long
//     as 12 of them take at the last interval's mean: a stall,
//     adaptive.Silent) → "queue_full", free slot or not (admitted, it would
//     wait for the stall); counted in the law's sample as Silenced;
//  6. a concurrency slot (limits.Concurrency, lock-free); else the bounded
//     wait queue, highest priority first, for at most the published
//     QueueBound as read on arrival (QueueBound.Arrival: a queue that has
//     stayed non-empty for codel_interval is standing, so a waiter below
//     critical gets codel_target and an adaptive queue serves newest first)
//     capped by Queue.MaxWait and the time left to the request's deadline
//     → "queue_timeout", or "concurrency" without a queue. A request that
//     would not be served within that bound is refused at once rather than
//     left to wait for its refusal → "queue_full": its position in the
//     queue (behind higher priorities and, FIFO, its own) times the
//     interval between completions of the last control interval, or the
//     time the queue has gone without handing a slot out (a stall), is
//     longer (adaptive.Positions); and so is a waiter that later arrivals
//     push back beyond that (a critical arrival's push-out of a sheddable
//     waiter, the oldest waiter under LIFO), and the newest lowest waiter
//     of a full queue a higher priority evicts.
//
// An admitted request gets a Pass; its Done(outcome) releases the slot exactly
// once and feeds the group's probe.Recorder with the upstream latency, measured
// from the moment the slot was taken (queue wait excluded, as the laws expect;
// the queue wait is recorded separately). A rejected request gets a Rejection:
// its reason, its status class (429 for a client over its quota: "rate",
// "fair_share"; 503 for overload: everything else), a Retry-After and, for
// "rate", the rate-limit figures that WriteHeaders renders as the IETF
// RateLimit-Policy and RateLimit fields.
//
// This is decision for decision the gate model of adaptive/sim (sim/gate.go),
// so what the simulator proves about the laws holds here. Where the daemon
// has more to do than the model, it differs:
//
//   - The rate stage is the group's configured algorithm (any of limits',
//     per key or for the whole group), not only the model's managed bucket.
//     The law manages a token rate only for a group-wide local bucket
//     (token_bucket, leaky_bucket, leaky_queue) under law "target"; the
//     configured rate is then its ceiling, and the burst follows the rate as
//     in the model. A rate with scope "global" is the quota of every node
//     together, kept in a shared store (Params.GlobalRate; gate/redisrate's
//     on Redis): its decision is a round trip to the store, bounded by its
//     timeout, else its fallback's (by default this node's share of the
//     quota).
//   - Queue.MaxWait caps the queue bound too. With Queue.CodelTarget = 0
//     there is no QueueWait: the bound is MaxWait and the order as configured.
//   - A waiter whose client goes away (its context cancelled) leaves the
//     queue and is counted as canceled, not as a rejection; the model's
//     clients only time out.
//   - The arrivals of a group's own priority (its fixed one, or the default
//     of a header priority) are derived each tick from what left the gate and
//     what is in it rather than counted per request (see counters); they agree
//     over an interval except for requests caught mid-decision by the tick.
//
// # Shadow mode
//
// A group with Mode spec.ModeShadow runs every stage above but refuses
// nobody: the first stage that would refuse a request counts a would-be
// rejection of its reason (GroupStatus.Shadow, Pass.Shadowed) and the
// request is admitted at once, taking nothing from the later stages (no
// rate units, no key's share), as a refused one would not. No request of a
// shadowed group holds a slot: since every request reaches the service, the
// service's own queue grows under a load enforcement would have refused,
// and neither its latency nor the slots held while it lasts are what
// enforcement would see. The concurrency stage is decided instead by a
// model of enforcement (shadowmodel.go): the limit in force and the queue
// (its bound, and the refusal at arrival of a wait that would not be served
// in time) in front of a model of the service with the capacity and latency
// measured on the real one (C, the most it completed per second lately; s,
// the mean latency of the requests that found it no more loaded than the
// model and one of its W servers free, over the last 100 of them, their
// median while there are fewer; W = C·s servers, a FIFO queue). A request
// the model admits takes a model slot
// until the model's service is done with it; one it would make wait counts
// as would-have-waited (ShadowStatus.Queued) and takes a model slot when
// one frees; the others are would-be "concurrency" (no queue) or
// "queue_full" / "queue_timeout". The law is given the interval as the
// model saw it (in flight, completions, queue, would-be rejections as
// rejections) with the latency of the requests that found the real service
// no more loaded than the model (what enforcement would have measured), or,
// while the real service holds more, the service's own latency plus the
// model's wait for one of its W (none before C is first measured: the
// model's first interval, its servers unbounded, would hand the law a
// baseline without the queue enforcement's has): so its limit is the one
// it would enforce.
// The group's read-outs show the real service (in flight, latency);
// ShadowStatus.Beyond counts the requests in flight beyond the limit. The
// fair share counts the model's slots, and a request the model gives one
// holds its key's share until it is done. The model serialises a shadowed
// group's arrivals on one mutex. A leaky_queue does not pace in shadow. A rate rule
// with Mode spec.ModeShadow shadows the rate stage alone: over its limit a
// request is counted (reason "rate") and goes on to the stages that
// enforce; AllowRate then allows and returns the would-be Rejection. The
// mode is not part of what makes a reload rebuild a group, and Override can
// change it alone: either way the law runs on with its state. Rejections
// decided outside the gate (Gate.Reject: the proxy's circuit breaker, which
// keeps requests off an upstream that is failing) are not shadowed.
//
// # Hot path cost
//
// Enter and Done of an admitted request read the clock once each (a monotonic
// read, time.Since of a base instant), take no lock, and allocate nothing:
// the group's slots are one atomic word, its counters are atomics, the latency
// recorder is striped per P. A group with a key and fair share takes one
// sharded mutex per Enter to find the key's counters (a new key allocates
// once); a rate limit costs its algorithm's own small mutex. A request that
// has to wait in the queue reads the clock once more when it leaves. An
// Observer (Params.Observer: the admin package's histograms) is called once
// per Done and once per queue wait; without one the hook costs a nil check.
//
// # The control loop
//
// Run (one goroutine, started and stopped by the caller) calls Tick every
// Config.Interval: one resource sample, then per group a probe snapshot,
// an adaptive.Sample (CPU, memory and CPU pressure of the guarded workload,
// as probe.Resources has them), the law's decision applied (limit, and the token rate where the
// law manages one), the queue bound and the floor published. The resource
// guard is given the sample without the targets the law found its limit
// does not move (adaptive.Unmoved): GroupStatus.Unmoved shows them, and
// Params.OnUnmoved hears when they change, for the log. Tick takes the
// instant as data, so tests drive it with chosen times and no goroutine. Learned limits are saved to the state file every
// Config.SaveInterval and when Run returns, and restored by New.
//
// # Priorities come from the client
//
// A group with priority = "header:NAME" believes the header: any client can
// claim "critical" and so jump the queue and escape shedding. Set such a header
// only at a trusted edge (strip or overwrite it where requests enter your
// network), or give untrusted traffic a fixed priority through its own group.
//
// # Concurrency safety
//
// Everything exported is safe for concurrent use. Enter and Done run on any
// number of goroutines; Tick, Reload, Override and SaveState serialise on one
// mutex that the hot path never takes; read-outs copy values published by the
// control loop.
package gate
