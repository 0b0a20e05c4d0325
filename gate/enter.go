package gate

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/internal/outcome"
	"github.com/sluicehq/sluice/limits"
)

// Outcome is how an admitted request ended, as the control loop reads it
// (see package internal/outcome, which the permit service's client names too).
type Outcome = outcome.Outcome

// The outcomes.
const (
	// Success: the upstream answered (1xx, 2xx, 3xx); its latency is a sample.
	Success = outcome.Success
	// Dropped: the upstream failed in a way that signals overload (a 5xx, a
	// timeout, a connection error). No latency sample.
	Dropped = outcome.Dropped
	// Ignored: no signal (the client cancelled, a 4xx, a panic).
	Ignored = outcome.Ignored
)

// Pass is an admitted request's claim on a slot of its group. Call Done
// exactly once when the request is finished; a second call on the same Pass
// is a no-op, but a copy of a Pass is a second claim on the same slot: pass a
// *Pass around, not copies. The zero Pass holds nothing and Done is a no-op.
type Pass struct {
	g  *group
	ks *keyState
	t0 int64 // slot taken, ns on the gate's clock
	// how is how the request was admitted: its wait and what shadow mode
	// made of it.
	how admission
}

// admission is how a Pass's request was admitted. It keeps a Pass at four
// fields and 32 bytes, which the compiler holds in registers on the hot
// path: a larger Pass lives in memory, and EnterDone took 1.15-1.17× as
// long with wait a time.Duration beside the shadowMark (BenchmarkEnterDone,
// ten interleaved pairs).
type admission struct {
	// waitUS is the time from arrival to t0 in whole microseconds (at most
	// 2^32-1, 71 minutes): a leaky_queue's pacing and the queue; 0 for a
	// request a shadowed group admitted without a slot.
	waitUS uint32
	// shadow is what shadow mode made of the request (see shadowMark):
	// zero for one enforcement admitted as it was.
	shadow shadowMark
}

// waitedUS is wait in whole microseconds, as an admission keeps it.
func waitedUS(wait int64) uint32 { return uint32(min(max(wait, 0)/1e3, math.MaxUint32)) }

// waited returns how long p's request waited to be admitted, to the
// microsecond.
func (p *Pass) waited() time.Duration { return time.Duration(p.how.waitUS) * time.Microsecond }

// Shadowed returns the reason enforcement would have refused the request
// for, when a shadowed group or rate rule admitted it anyway; RejectNone
// otherwise. A request enforcement would only have made wait in the queue
// reports RejectNone (see ShadowStatus.Queued).
func (p *Pass) Shadowed() adaptive.RejectReason { return p.how.shadow.why }

// Group returns the name of the pass's group, "" for the zero Pass.
func (p *Pass) Group() string {
	if p.g == nil {
		return ""
	}
	return p.g.name
}

// Done releases the slot, handing it to the next waiter if any, and records
// the outcome with the upstream latency measured since the slot was taken
// (queue wait excluded).
func (p *Pass) Done(o Outcome) {
	gr := p.g
	if gr == nil {
		return
	}
	p.DoneAfter(o, time.Duration(gr.gate.nanos()-p.t0))
}

// DoneAfter is Done with a latency the caller measured itself (a proxy that
// times the upstream exchange): it reads no clock.
func (p *Pass) DoneAfter(o Outcome, latency time.Duration) {
	gr := p.g
	if gr == nil {
		return
	}
	gr.silence.heard(p.t0 + int64(latency))
	if p.how.shadow.slotless {
		gr.shadowDone(p.how.shadow, latency, o)
	}
	p.release()
	switch o {
	case Success:
		gr.lat.Record(latency)
	case Dropped:
		gr.lat.Drop()
	default:
		gr.lat.Ignore()
	}
	if ob := gr.gate.observer; ob != nil {
		ob.ObserveDone(gr.name, o, latency, p.waited())
	}
}

// release gives p's slot (or its place beyond the limit) and its key's
// hold back, and finishes p, recording nothing. p must hold them.
func (p *Pass) release() {
	gr := p.g
	p.g = nil
	if p.how.shadow.slotless {
		gr.leaveBeyond()
	} else {
		gr.conc.Release()
	}
	if ks := p.ks; ks != nil {
		ks.held.Add(-1)
		gr.keys.leave(ks)
	}
}

// Enter classifies r and runs it through its group's admission pipeline,
// waiting in the queue if it must (bounded by r's context). It returns a Pass
// and ok = true, or the Rejection and ok = false. See EnterClass.
func (g *Gate) Enter(r *http.Request) (Pass, Rejection, bool) {
	return g.EnterClass(r.Context(), g.Classify(r))
}

// EnterClass runs a classified request through its group's admission
// pipeline (see the package doc): floor, rate, fair share, slot or queue.
// ctx bounds the wait in the queue (its deadline caps the wait; when it is
// cancelled the request leaves the queue) and a leaky_queue's pacing delay.
//
// An admitted request reads the clock once, takes no lock (but the key's
// shard with a key, and the rate limiter's own) and does not allocate.
// c must come from Classify or ClassOf: a zero Class panics.
func (g *Gate) EnterClass(ctx context.Context, c Class) (Pass, Rejection, bool) {
	return g.EnterClassCost(ctx, c, 0)
}

// EnterClassCost is EnterClass with a request's own cost: the rate stage
// spends cost units (0: the group's rate.cost) while the concurrency stage
// takes one slot, whatever the cost. The permit service passes the cost a
// caller asks for. A negative cost panics.
func (g *Gate) EnterClassCost(ctx context.Context, c Class, cost int64) (Pass, Rejection, bool) {
	gr := c.g
	if gr == nil {
		panic("gate: EnterClass with a zero Class")
	}
	if cost < 0 {
		panic("gate: EnterClassCost with a negative cost")
	}
	p := min(c.Priority, adaptive.Critical)
	t0 := g.nanos()
	arrived := t0
	if p != gr.prio {
		gr.c.arrived[p].Add(1) // the group's own level is derived: see counters
	}

	if ok, why := adaptive.UnpackFloor(gr.floor.Load()).Admit(p); !ok {
		if gr.mode.Load()&shadowGroup == 0 {
			return Pass{}, gr.reject(why, p, c.Key), false
		}
		return gr.shadowPass(why, p, c.Key, t0), Rejection{}, true
	}

	var would adaptive.RejectReason // RejectRate when a shadowed rate rule refused
	if rl := gr.rate; rl != nil {
		if cost == 0 {
			cost = rl.cost
		}
		res := rl.lim.AllowAt(c.Key, g.at(t0), cost)
		if !res.Allowed {
			switch m := gr.mode.Load(); {
			case m&shadowGroup != 0:
				return gr.shadowPass(adaptive.RejectRate, p, c.Key, t0), Rejection{}, true
			case m&shadowRate == 0:
				r := gr.reject(adaptive.RejectRate, p, c.Key)
				r.RetryAfter, r.Rate, r.Policy = res.RetryAfter, res, rl.lim.Policy()
				return Pass{}, r, false
			}
			gr.shadowReject(adaptive.RejectRate, p, c.Key) // on to the stages that enforce
			would = adaptive.RejectRate
		}
		if res.Delay > 0 && rl.paced && gr.mode.Load()&shadowRate == 0 { // shadow does not pace
			if end := pace(ctx, res.Delay); end != (waitEnd{}) {
				if end.gone {
					return Pass{}, gr.abandoned(), false
				}
				r := gr.reject(end.why, p, c.Key)
				r.RetryAfter, r.Rate, r.Policy = res.Delay, res, rl.lim.Policy()
				return Pass{}, r, false
			}
			t0 = g.nanos() // the pacing delay is not upstream latency
		}
	}

	var ks *keyState
	if gr.keys != nil {
		var active int
		ks, active = gr.keys.enter(c.Key)
		if !gr.fair.Allow(int(ks.held.Load()), gr.slotsHeld(t0), gr.conc.Limit(), active) {
			gr.keys.leave(ks)
			if gr.mode.Load()&shadowGroup != 0 {
				return gr.shadowPass(adaptive.RejectFairShare, p, c.Key, t0), Rejection{}, true
			}
			return Pass{}, gr.reject(adaptive.RejectFairShare, p, c.Key), false
		}
	}

	if gr.mode.Load()&shadowGroup != 0 { // the model of enforcement decides (shadowmodel.go)
		return gr.shadowSlot(ks, p, c.Key, t0), Rejection{}, true
	}
	fast := gr.conc.TryAcquire()
	if !fast {
		if gr.refusesSilence(p, gr.conc.InFlight(), t0) {
			if ks != nil {
				gr.keys.leave(ks)
			}
			return Pass{}, gr.silenced(c.Key), false
		}
		var end waitEnd
		if t0, end = g.queue(ctx, gr, p, t0); end != (waitEnd{}) {
			if ks != nil {
				gr.keys.leave(ks)
			}
			if end.gone {
				return Pass{}, gr.abandoned(), false
			}
			return Pass{}, gr.reject(end.why, p, c.Key), false
		}
	}
	n := gr.conc.InFlight()
	switch {
	case n == 1:
		gr.silence.busy(t0)
	case fast && gr.refusesSilence(p, n-1, t0):
		// An arrival that found a free slot is judged once it holds it
		// (the in-flight count is read here anyway), as if before: the
		// slot goes back at once. A waiter given a slot was served.
		gr.conc.Release()
		if ks != nil {
			gr.keys.leave(ks)
		}
		return Pass{}, gr.silenced(c.Key), false
	}
	if ks != nil {
		ks.held.Add(1)
	}
	gr.lat.ObserveInflight(n) // in shadow, shadowPass adds those beyond
	return Pass{g: gr, ks: ks, t0: t0, how: admission{waitUS: waitedUS(t0 - arrived), shadow: shadowMark{why: would}}}, Rejection{}, true
}

// shadowPass admits, without a slot, a request of key in a shadowed group
// that enforcement would have refused for why at a stage (RejectNone: it
// found no free slot; see admitBeyond), at t0 (a shadowed group neither
// paces nor queues: its wait is 0). Like a request enforcement would have
// refused, it takes nothing from the later stages (no rate units, no key's
// share, no slot).
func (gr *group) shadowPass(why adaptive.RejectReason, p adaptive.Priority, key string, t0 int64) Pass {
	mark := gr.admitBeyond(why, p, key, t0)
	gr.lat.ObserveInflight(gr.inFlight())
	return Pass{g: gr, t0: t0, how: admission{shadow: mark}}
}

// AllowRate decides c against its group's rate stage alone, spending cost
// units (0: the group's rate.cost): no priority floor, no fair share, no
// concurrency slot, no pass to finish. It serves callers whose protocol
// asks before a request and never reports how it ended (Envoy's rate limit
// service). It returns the limiter's decision and policy whether allowed
// or not (zero values for a group without a rate limit, which allows
// everything); when not allowed, the Rejection (reason rate), counted in
// the group as EnterClass counts its own. A leaky_queue's pacing delay is
// returned in the Result, not waited. c must come from Classify or ClassOf:
// a zero Class panics; so does a negative cost. Safe for concurrent use;
// it does not allocate for a key the limiter holds.
//
// In shadow mode (the group's, or its rate rule's) a request over the
// limit is allowed (ok = true, res.Allowed false) and the Rejection returned
// is the one enforcement would have given (Rejected() true), counted as a
// would-be rejection.
func (g *Gate) AllowRate(c Class, cost int64) (limits.Result, limits.Policy, Rejection, bool) {
	gr := c.g
	if gr == nil {
		panic("gate: AllowRate with a zero Class")
	}
	if cost < 0 {
		panic("gate: AllowRate with a negative cost")
	}
	rl := gr.rate
	if rl == nil {
		return limits.Result{Allowed: true}, limits.Policy{}, Rejection{}, true
	}
	if cost == 0 {
		cost = rl.cost
	}
	res, pol := rl.lim.AllowAt(c.Key, g.now(), cost), rl.lim.Policy()
	if res.Allowed {
		return res, pol, Rejection{}, true
	}
	p := min(c.Priority, adaptive.Critical)
	if p != gr.prio {
		gr.c.arrived[p].Add(1)
	}
	if gr.mode.Load()&shadowRate != 0 {
		gr.shadowReject(adaptive.RejectRate, p, c.Key) // then allowed, as an allowed one
		return res, pol, Rejection{Reason: adaptive.RejectRate, Group: gr.name, RetryAfter: res.RetryAfter,
			Rate: res, Policy: pol}, true
	}
	r := gr.reject(adaptive.RejectRate, p, c.Key)
	r.RetryAfter, r.Rate, r.Policy = res.RetryAfter, res, pol
	return res, pol, r, false
}

// waitEnd is how a wait for a slot or a leaky_queue's pacing ended: its zero
// value, with the request free to go on; a rejection the gate decided (why);
// or the request's context ended (gone: the client went away), which is not
// a rejection and is counted apart (canceled).
type waitEnd struct {
	why  adaptive.RejectReason
	gone bool
}

// refused is the end of a wait the gate refused for why.
func refused(why adaptive.RejectReason) waitEnd { return waitEnd{why: why} }

// clientGone is the end of a wait whose context ended.
var clientGone = waitEnd{gone: true}

// abandoned counts a request whose client went away while it waited and returns
// the Rejection its caller gets (a queue timeout: the client will not read it).
func (gr *group) abandoned() Rejection {
	gr.c.canceled.Add(1)
	return Rejection{Reason: adaptive.RejectQueueTimeout, Group: gr.name, RetryAfter: overloadRetry}
}

// queue waits for a slot of gr for a request of priority p that arrived at t0.
// It returns the instant the slot was taken, or how the wait ended without one.
//
// The wait is bounded by min(the published bound as waitPlan reads it for
// p, queue.max_wait, the time left to ctx's deadline), as adaptive/sim's
// gate model bounds it; a request whose deadline leaves no time is refused
// at once (queue_timeout), and so is one that would not be served within its
// bound (queue_full: its position in the queue times the interval between
// completions, or the time the queue has gone without handing a slot out, is
// longer). A waiter pushed back beyond what it may wait for by later
// arrivals is refused at once too (queue_full), as one evicted from a full
// queue.
func (g *Gate) queue(ctx context.Context, gr *group, p adaptive.Priority, t0 int64) (int64, waitEnd) {
	if gr.conc.MaxQueue() == 0 {
		return 0, refused(adaptive.RejectConcurrency)
	}
	switch ctx.Err() {
	case nil:
	case context.Canceled:
		return 0, clientGone
	default:
		return 0, refused(adaptive.RejectQueueTimeout)
	}
	wait, lifo, idle := gr.waitPlan(p, t0)
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	if wait <= 0 {
		return 0, refused(adaptive.RejectQueueTimeout)
	}
	pos := adaptive.Positions(wait, time.Duration(gr.gapNs.Load()), idle)
	if pos < 0 {
		return 0, refused(adaptive.RejectQueueFull)
	}
	if gr.conc.Order() != orderOf(lifo) {
		_ = gr.conc.SetOrder(orderOf(lifo))
	}
	gr.busySince.CompareAndSwap(0, t0)
	err := gr.conc.Acquire(ctx, limits.AcquireOptions{Priority: int(p), MaxWait: wait, Positions: pos})
	if errors.Is(err, limits.ErrLimit) || errors.Is(err, limits.ErrQueueFull) {
		gr.leftQueue()
		if errors.Is(err, limits.ErrLimit) {
			return 0, refused(adaptive.RejectConcurrency)
		}
		return 0, refused(adaptive.RejectQueueFull)
	}
	// The request was queued (or found a slot freed meanwhile).
	t1 := g.nanos()
	gr.c.queued.Add(1)
	gr.qwait.Record(time.Duration(t1 - t0))
	if ob := g.observer; ob != nil {
		ob.ObserveQueueWait(gr.name, time.Duration(t1-t0))
	}
	if err == nil {
		gr.lastGrant.Store(t1)
	}
	gr.leftQueue()
	switch {
	case err == nil:
		return t1, waitEnd{}
	case errors.Is(err, limits.ErrEvicted):
		return 0, refused(adaptive.RejectQueueFull)
	case errors.Is(err, context.Canceled):
		return 0, clientGone
	}
	return 0, refused(adaptive.RejectQueueTimeout) // ErrWaitTimeout, or the deadline passed
}

// leftQueue notes that a request left gr's queue (or never joined it):
// an empty queue has drained, and stands no more.
func (gr *group) leftQueue() {
	if gr.conc.Queued() == 0 {
		gr.drained.Store(true)
		gr.busySince.Store(0)
	}
}

// timers are reused for leaky_queue pacing, so a paced request does not
// allocate one.
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// pace waits out a leaky_queue's delay d. It refuses at once (RejectRate)
// when ctx's deadline comes before the delay ends (the request would be
// late), and ends with clientGone when ctx ends during the wait.
func pace(ctx context.Context, d time.Duration) waitEnd {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return refused(adaptive.RejectRate)
	}
	t := timers.Get().(*time.Timer)
	t.Reset(d)
	defer timers.Put(t)
	select {
	case <-t.C:
		return waitEnd{}
	case <-ctx.Done():
		t.Stop()
		return clientGone
	}
}
