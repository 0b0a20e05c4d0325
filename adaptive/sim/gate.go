package sim

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/internal/defaults"
	"github.com/sluicehq/sluice/limits"
)

// The gate model: what the real gate does with limits.Concurrency, its
// token bucket and the adaptive policy pieces, in virtual time, so that what
// the simulator proves about a law holds for the daemon. The traces of
// testdata/conformance hold both to the same decisions (this package's
// TestConformance and gate's); the ones marked "sim: skip" say what the
// model leaves out (per-key quotas, request costs, several groups, outcomes
// with no signal).
//
// Per interval the ResourceGuard sees the sample without the resource signals
// the law found its limit does not move (adaptive.Unmoved.Mask), as the
// gate's control loop does.
//
// Per request, in this order:
//  0. with Gate.Breaker, the proxy's circuit breaker (see breaker): open →
//     RejectCircuitOpen;
//  1. the published Floor (ResourceGuard.Max(PriorityShedder)): below it →
//     RejectMemory / RejectCPU / RejectPriority;
//  2. the managed token rate, when the law manages one: no token → RejectRate;
//  3. FairShare, when enabled: group at its limit and the key holding its share →
//     RejectFairShare (active keys are those holding a slot or queued, the asking
//     key included);
//  4. with a queue and a latency target, below Critical, a silent service (adaptive.Silent:
//     nothing completed for as long as 12 of those in flight take) →
//     RejectQueueFull, free slot or not (counted in Sample.Silenced);
//  5. a slot if in flight < limit (a counting semaphore; the limit is never
//     overshot, and lowering it preempts nothing: slots drain);
//  6. else the bounded wait queue: if full, the lowest-priority newest waiter is
//     evicted (RejectQueueFull) when it is of strictly lower priority than the
//     newcomer, else the newcomer is refused (RejectQueueFull); each waiter waits
//     at most min(QueueBound.For(priority) capped by Gate.MaxWait, time left
//     to its deadline) →
//     RejectQueueTimeout;
//     with no queue configured → RejectConcurrency.
//
// When a slot frees or the limit rises, waiters are served highest priority
// first, and within a priority oldest first (FIFO) or newest first (LIFO, as
// QueueBound.LIFO says at that moment).

// gateState is the gate's slots, queue and published policy values.
type gateState struct {
	limit    int
	inflight int
	maxQueue int
	waiting  int // live waiters
	levels   [adaptive.NumPriorities]deque
	live     [adaptive.NumPriorities]int
	lifo     bool
	// bound is the published queue bound, capped by Gate.MaxWait; gap the
	// interval between completions over the last control interval (0:
	// unknown); busy whether the queue is non-empty, since when, and when a
	// waiter last got a slot (the gate's waitPlan).
	bound     adaptive.QueueBound
	gap       int64
	busy      bool
	busySince int64
	lastGrant int64
	// heard is when the service was last heard from (a completion, at
	// adaptive.SilenceGrain, or an admission with nothing else in flight),
	// and meanNs the last interval's mean upstream latency: the gate's
	// silence, for adaptive.Silent.
	heard, meanNs int64
	floor         adaptive.Floor

	fair   bool
	share  adaptive.FairShare
	held   []int // slots held per tenant
	use    []int // slots held + waiters per tenant
	active int   // tenants with use > 0

	rateOn bool
	bucket tokenBucket

	breaker breaker
}

// breaker is the proxy's circuit breaker with its defaults (proxy/breaker, breaker.Default):
// closed, it opens after breakerFailures upstream failures in a row; open, it
// refuses everything for breakerOpen; then it is half-open: breakerProbes
// requests pass, and it closes when they all succeed or opens again at the
// first failure.
type breaker struct {
	on     bool
	open   bool
	until  int64 // end of the open spell
	fails  int   // consecutive failures while closed
	probes int   // probes let through while half-open
	good   int   // probes that succeeded
}

const (
	breakerFailures = defaults.BreakerConsecutiveFailures
	breakerOpen     = int64(defaults.BreakerOpenDuration)
	breakerProbes   = defaults.BreakerProbes
)

// allow reports whether a request may pass at now.
func (b *breaker) allow(now int64) bool {
	switch {
	case !b.on:
		return true
	case b.open && now < b.until:
		return false
	case b.open:
		b.open, b.probes, b.good = false, 0, 0
		b.fails = -1 // half-open
	}
	if b.fails >= 0 {
		return true
	}
	if b.probes >= breakerProbes {
		return false
	}
	b.probes++
	return true
}

// result records an upstream success or failure at now.
func (b *breaker) result(now int64, ok bool) {
	if !b.on || b.open {
		return
	}
	halfOpen := b.fails < 0
	switch {
	case ok && halfOpen:
		if b.good++; b.good >= breakerProbes {
			b.fails = 0
		}
	case ok:
		b.fails = 0
	case halfOpen:
		b.open, b.until = true, now+breakerOpen
	default:
		if b.fails++; b.fails >= breakerFailures {
			b.open, b.until = true, now+breakerOpen
		}
	}
}

// tokenBucket is the managed token rate: the gate's own limits.TokenBucket
// (exact to the nanosecond), one for the whole group, spending one token per
// request, its burst kept at burstSeconds of the rate as the gate keeps a
// managed bucket's (rounded, at least one token). A change takes effect at the
// next decision, as in the gate.
type tokenBucket struct {
	b            *limits.TokenBucket
	rate         float64 // tokens per second
	burstSeconds float64
}

func newTokenBucket(rate, burst float64) (tokenBucket, error) {
	n := max(1, int64(math.Round(burst)))
	b, err := limits.NewTokenBucket(limits.TokenBucketParams{Rate: rate, Burst: n})
	return tokenBucket{b: b, rate: rate, burstSeconds: float64(n) / rate}, err
}

func (b *tokenBucket) take(now int64) bool {
	return b.b.AllowAt(epoch.Add(time.Duration(now)), 1).Allowed
}

// setRate applies a rate the law set (positive and finite).
func (b *tokenBucket) setRate(rate float64) {
	b.rate = rate
	_ = b.b.SetRate(rate)
	_ = b.b.SetBurst(max(1, int64(math.Round(rate*b.burstSeconds))))
}

// enter runs the gate for request id arriving now.
func (e *engine) enter(id int32) {
	r := &e.reqs[id]
	g := &e.g
	if !g.breaker.allow(e.now) {
		e.reject(id, adaptive.RejectCircuitOpen)
		return
	}
	e.iv.byPrio[r.prio].Arrived++
	if ok, why := g.floor.Admit(r.prio); !ok {
		e.reject(id, why)
		return
	}
	if g.rateOn && !g.bucket.take(e.now) {
		e.reject(id, adaptive.RejectRate)
		return
	}
	if g.fair {
		active := g.active
		if g.use[r.tenant] == 0 {
			active++
		}
		if !g.share.Allow(g.held[r.tenant], g.inflight, g.limit, active) {
			e.reject(id, adaptive.RejectFairShare)
			return
		}
	}
	if g.maxQueue > 0 && e.sc.Targets.Latency > 0 && adaptive.Silent(r.prio, g.inflight, time.Duration(e.now-g.heard), time.Duration(g.meanNs)) {
		e.iv.silenced++
		e.refuse(id, adaptive.RejectQueueFull)
		return
	}
	if g.inflight < g.limit {
		e.admit(id)
		return
	}
	e.enqueue(id)
}

// enqueue puts request id in the wait queue (or refuses it), in the order
// the gate checks: no queue; no time to wait; not even the front expected
// within the wait, or standing further back than that; a full queue (a
// lower priority's newest waiter evicted, else the newcomer refused).
func (e *engine) enqueue(id int32) {
	r := &e.reqs[id]
	g := &e.g
	if g.maxQueue <= 0 {
		e.reject(id, adaptive.RejectConcurrency)
		return
	}
	wait, pos, lifo := e.waitPlan(r)
	switch {
	case wait <= 0:
		e.reject(id, adaptive.RejectQueueTimeout)
		return
	case pos < 0:
		e.reject(id, adaptive.RejectQueueFull)
		return
	}
	g.lifo = lifo
	e.pushOut(r.prio, pos, -1)
	r = &e.reqs[id] // the pushed out may have grown the request slice
	if pos > 0 && e.position(r.prio) > pos {
		e.reject(id, adaptive.RejectQueueFull)
		return
	}
	if g.waiting >= g.maxQueue {
		low := -1
		for l := 0; l < adaptive.NumPriorities; l++ {
			if g.live[l] > 0 {
				low = l
				break
			}
		}
		if low < 0 || adaptive.Priority(low) >= r.prio {
			e.reject(id, adaptive.RejectQueueFull)
			return
		}
		victim := e.popLive(low, true)
		e.leaveQueue(victim)
		e.reject(victim, adaptive.RejectQueueFull)
		r = &e.reqs[id] // reject may have grown the request slice
	}
	r.state = stWaiting
	r.pos = pos
	r.enq = e.now
	g.levels[r.prio].pushBack(ref{id, r.gen})
	g.live[r.prio]++
	if g.waiting == 0 {
		g.busy, g.busySince = true, e.now
	}
	g.waiting++
	e.use(r.tenant, +1)
	e.iv.queued++
	e.ev.push(e.now+wait, evQueueTimeout, id, r.gen)
	e.pushOut(r.prio, pos, id)
}

// waitPlan is how request r, finding no free slot now, may wait, as the
// gate's waitPlan and queue read the published bound: the wait (capped by
// its deadline), how far back in the queue it may stand (0: any; −1: not
// even at the front, refuse it), and whether the queue now serves newest
// first.
func (e *engine) waitPlan(r *request) (wait int64, pos int32, lifo bool) {
	g := &e.g
	var busy, idle int64
	if g.busy {
		busy, idle = e.now-g.busySince, e.now-max(g.busySince, g.lastGrant)
	}
	w, lifo := g.bound.Arrival(r.prio, time.Duration(busy))
	wait = min(int64(w), r.deadline-e.now)
	if wait <= 0 {
		return wait, 0, lifo
	}
	return wait, int32(adaptive.Positions(time.Duration(wait), time.Duration(g.gap), time.Duration(idle))), lifo
}

// position is where a new waiter of priority p stands (1: served next):
// behind every higher priority, and under FIFO behind its own.
func (e *engine) position(p adaptive.Priority) int32 {
	g := &e.g
	n := int32(0)
	for l := adaptive.NumPriorities - 1; l > int(p); l-- {
		n += int32(g.live[l])
	}
	if !g.lifo {
		n += int32(g.live[p])
	}
	return n + 1
}

// pushOut refuses (RejectQueueFull), from the end of the queue served last,
// the waiters that stand further back than they may wait for, as the gate's
// limiter pushes them out: beyond their own positions, or, for those of
// priority p, beyond pos (a newcomer's bound for the queue as it is now);
// but not except (−1: none), the newcomer itself.
func (e *engine) pushOut(p adaptive.Priority, pos, except int32) {
	g := &e.g
	for g.waiting > 0 {
		low := 0
		for g.live[low] == 0 {
			low++
		}
		last := e.peekLive(low, !g.lifo)
		lr := &e.reqs[last]
		bound := lr.pos
		if pos > 0 && lr.prio == p && (bound <= 0 || pos < bound) {
			bound = pos
		}
		if last == except || bound <= 0 || int32(g.waiting) <= bound {
			return
		}
		e.popLive(low, !g.lifo)
		e.leaveQueue(last)
		e.reject(last, adaptive.RejectQueueFull)
	}
}

// peekLive returns, without removing it, the newest (back) or oldest live
// waiter of level l; it drops dead entries on the way (popLive's, put back).
func (e *engine) peekLive(l int, back bool) int32 {
	id := e.popLive(l, back)
	x, q := ref{id: id, gen: e.reqs[id].gen}, &e.g.levels[l]
	if back {
		q.pushBack(x)
	} else {
		q.pushFront(x)
	}
	return id
}

// popLive removes and returns the newest (back) or oldest live waiter of level l.
func (e *engine) popLive(l int, back bool) int32 {
	q := &e.g.levels[l]
	for {
		var x ref
		if back {
			x = q.popBack()
		} else {
			x = q.popFront()
		}
		if r := &e.reqs[x.id]; r.gen == x.gen && r.state == stWaiting {
			return x.id
		}
	}
}

// leaveQueue takes waiter id out of the queue's accounting.
func (e *engine) leaveQueue(id int32) {
	r := &e.reqs[id]
	g := &e.g
	g.live[r.prio]--
	g.waiting--
	if g.waiting == 0 {
		e.iv.drained = true
		g.busy = false
	}
	e.use(r.tenant, -1)
	r.state = stPending
	w := e.now - r.enq
	if !e.iv.waitSeen || w < e.iv.waitMin {
		e.iv.waitMin = w
	}
	e.iv.waitMax = max(e.iv.waitMax, w)
	e.iv.waitSeen = true
}

// queueTimeout fires when waiter id's wait bound passes.
func (e *engine) queueTimeout(id int32, gen uint32) {
	r := &e.reqs[id]
	if r.gen != gen || r.state != stWaiting {
		return
	}
	l := r.prio
	e.leaveQueue(id)
	e.reject(id, adaptive.RejectQueueTimeout)
	if q := &e.g.levels[l]; q.len() > 2*e.g.live[l]+32 {
		q.compact(func(x ref) bool { rr := &e.reqs[x.id]; return rr.gen == x.gen && rr.state == stWaiting })
	}
}

// dispatch hands free slots to waiters: highest priority first, FIFO or LIFO
// within a priority.
func (e *engine) dispatch() {
	g := &e.g
	for g.inflight < g.limit && g.waiting > 0 {
		l := adaptive.NumPriorities - 1
		for g.live[l] == 0 {
			l--
		}
		id := e.popLive(l, g.lifo)
		e.leaveQueue(id)
		g.lastGrant = e.now
		e.admit(id)
	}
}

// admit gives request id a slot and sends it to the backend.
func (e *engine) admit(id int32) {
	r := &e.reqs[id]
	g := &e.g
	if g.inflight >= g.limit {
		e.overshoots++ // never expected: tests assert it stays 0
	}
	g.inflight++
	if g.inflight == 1 {
		g.heard = e.now
	}
	g.held[r.tenant]++
	e.use(r.tenant, +1)
	e.iv.maxInflight = max(e.iv.maxInflight, g.inflight)
	r.admit = e.now
	if e.sc.Host.On() {
		e.hostCharge(e.sc.Host.Forward + e.sc.Host.Handle)
	}
	e.backendEnter(id)
}

// release frees request id's slot.
func (e *engine) release(id int32) {
	r := &e.reqs[id]
	g := &e.g
	g.inflight--
	if e.now-g.heard >= int64(adaptive.SilenceGrain) {
		g.heard = e.now
	}
	g.held[r.tenant]--
	e.use(r.tenant, -1)
	e.dispatch()
}

// use adjusts a tenant's held+queued count and the active-key count.
func (e *engine) use(t uint8, d int) {
	g := &e.g
	before := g.use[t]
	g.use[t] += d
	switch {
	case before == 0 && g.use[t] > 0:
		g.active++
	case before > 0 && g.use[t] == 0:
		g.active--
	}
}

// setLimit applies a new limit; a higher limit serves waiters at once.
func (e *engine) setLimit(n int) {
	e.g.limit = max(n, 0)
	e.dispatch()
}
