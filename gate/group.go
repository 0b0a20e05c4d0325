package gate

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/internal/topk"
	"github.com/sluicehq/sluice/limits"
	"github.com/sluicehq/sluice/probe"
)

// keyKind is where a group's key comes from.
type keyKind uint8

const (
	keyNone keyKind = iota
	keyIP
	keyPath
	keyHeader
)

// group is one configured group at run time. The fields above the control
// loop's are fixed for the group's life or atomic: the hot path reads them
// without locks.
type group struct {
	name string
	gate *Gate

	// Classification.
	keyKind    keyKind
	keyHeader  string // canonical, for keyHeader
	prioHeader string // canonical; "" for a fixed priority
	prio       adaptive.Priority

	// Admission.
	conc  *limits.Concurrency
	floor atomic.Uint32 // adaptive.Floor.Pack()
	// bound is how a request that finds no free slot may wait (see
	// waitPlan), published by the control loop, capped by queue.max_wait;
	// gapNs the interval between completions over the last control
	// interval (0: unknown). busySince is when the queue last became
	// non-empty (0: it is empty) and lastGrant when a waiter last got a
	// slot, on the gate's clock (ns): a queue non-empty for long is
	// standing, and no slot handed out for long is a stall.
	bound                       atomic.Pointer[adaptive.QueueBound]
	gapNs, busySince, lastGrant atomic.Int64
	silence                     silence    // a stalled service refuses at arrival (stall.go)
	rate                        *rateLimit // nil: none
	keys                        *keyTable  // nil: no fair share (no key)
	fair                        adaptive.FairShare
	lat                         *probe.Recorder // upstream latency, outcomes, peak in flight
	qwait                       *probe.Recorder // queue waits
	drained                     atomic.Bool     // the queue was empty at some moment this interval
	mode                        atomic.Uint32   // shadowGroup | shadowRate bits (see shadow.go)

	c *counters // shared with the group gr replaces (see newGroup)

	// Read-outs, published by the control loop.
	cfg      atomic.Pointer[spec.Group]
	info     atomic.Pointer[tickInfo]
	change   atomic.Pointer[lastChange]
	override atomic.Pointer[Override]

	// Control loop, guarded by Gate.mu.
	file         *spec.Group // as loaded, before overrides
	pol          policy
	managedMax   float64 // configured rate (req/s) the law may manage; 0: none
	prev         countSnap
	lastInflight int
	lastInGate   int              // in flight plus queued at the last tick
	recTicks     int64            // sub-windows the recorders have advanced
	recSub       time.Duration    // their sub-window length
	maxWait      time.Duration    // queue.max_wait: caps the published bounds
	lastKeyed    time.Time        // last Keyed.Sweep
	keyedEvery   time.Duration    // key_idle_timeout
	unmoved      adaptive.Unmoved // what the law ignored at the last tick
}

// counters are a group's cumulative atomic counts, read by the control loop
// (as differences between ticks) and the read-outs. A group rebuilt by a
// reload shares them with the group it replaces: the requests still in that
// one count their outcomes here.
//
// arrived counts the requests of each priority but the group's own (its fixed
// priority, or the default of a header priority): those, the bulk of most
// groups' traffic, the control loop derives each tick from what left the gate
// (completed, rejected, canceled) and the change in what is inside it, and
// adds to arrived[group's priority] itself. Sparing the hot path a counter
// that every core writes saves a quarter of its cost under contention.
type counters struct {
	arrived  [adaptive.NumPriorities]atomic.Uint64
	stage    [adaptive.NumPriorities]atomic.Uint64 // concurrency-stage rejections by priority, fair share's excepted
	rejected [adaptive.NumRejections]atomic.Uint64 // by reason
	queued   atomic.Uint64                         // requests that waited for a slot
	canceled atomic.Uint64                         // requests whose context ended while they waited
	silenced atomic.Uint64                         // of rejected[queue_full], those refused to a silent service (stall.go)
	done     [3]atomic.Uint64                      // completions by Outcome, added by the control loop

	// Shadow mode (shadow.go): would-be rejections by reason and, of the
	// concurrency stage's, by priority; requests that would have waited;
	// requests in flight without a slot now; the model of enforcement the
	// shadowed group decides and learns on (shadowmodel.go).
	shadow       [adaptive.NumRejections]atomic.Uint64
	shadowStage  [adaptive.NumPriorities]atomic.Uint64
	shadowQueued atomic.Uint64
	beyond       atomic.Int64
	model        enforcement

	// Streams (streams.go): open now, and opened since the group was built.
	streams       atomic.Int64
	streamsOpened atomic.Uint64

	// rejectedKeys are the keys rejected most, over about the last two
	// minutes (decayed by the control loop every rejectedKeysDecay, at
	// decayedAt, under Gate.mu); a group without a key adds none.
	rejectedKeys *topk.Summary
	decayedAt    time.Time
	// shadowKeys are the keys enforcement would have refused most, kept
	// apart from rejectedKeys (decayed with it).
	shadowKeys *topk.Summary
}

// Heavy hitters: the most rejected keys a group keeps (16: the 10 read-outs
// show with room for the counters Space-Saving needs to find them), and how
// often their counts halve.
const (
	rejectedKeysTracked = 16
	rejectedKeysShown   = 10
	rejectedKeysDecay   = time.Minute
)

// newCounters returns a group's counters, zero.
func newCounters() *counters {
	return &counters{rejectedKeys: topk.New(rejectedKeysTracked), shadowKeys: topk.New(rejectedKeysTracked)}
}

// newGroup builds the run-time group of c, starting its law from s. A group
// that cannot be built closes the rate limiter it built.
//
// With from (the group of the same name that gr is to replace, or nil) gr
// shares from's live parts instead of building its own: its concurrency
// limiter (slots held, waiters), per-key use, recorders and counters, so the
// requests in from count against gr and report to it (see Gate.Reload).
// newGroup only points at them: gr.adopt applies c's settings to them once
// the reload is sure to happen.
func (g *Gate) newGroup(c *spec.Group, s seed, groups int, from *group) (_ *group, err error) {
	gr := &group{name: c.Name, gate: g}
	defer func() {
		if err != nil {
			gr.closeRate()
		}
	}()
	c = ptr(c.Clone())
	gr.cfg.Store(c)
	gr.file = c

	switch c.Key {
	case spec.KeyNone:
	case spec.KeyIP:
		gr.keyKind = keyIP
	case spec.KeyPath:
		gr.keyKind = keyPath
	default:
		name, ok := c.Key.Header()
		if !ok {
			return nil, fmt.Errorf("gate: group %q: unknown key %q", c.Name, c.Key)
		}
		gr.keyKind, gr.keyHeader = keyHeader, name
	}
	if name, ok := c.Priority.Header(); ok {
		gr.prioHeader, gr.prio = name, priorityOf(c.DefaultPriority)
	} else {
		l, _ := c.Priority.Level()
		gr.prio = priorityOf(l)
	}

	if gr.rate, err = newRate(c, g.global); err != nil {
		return nil, err
	}
	gr.managedMax = manageable(c)
	if gr.managedMax > 0 {
		if a, _ := limits.LookupAlgorithm(string(c.Rate.Algorithm)); a.Knobs.Has(limits.KnobBurst) {
			gr.rate.burstSecs = float64(c.Rate.Burst) / c.Rate.PerSecond()
		}
	}
	if gr.keyKind != keyNone {
		if from != nil && from.keys != nil {
			gr.keys = from.keys
		} else {
			gr.keys = newKeyTable(maxKeys(c))
		}
		if c.Rate != nil {
			gr.keyedEvery = time.Duration(c.Rate.KeyIdleTimeout)
		}
	}

	if gr.pol, err = newPolicy(c, s, gr.managedMax); err != nil {
		return nil, fmt.Errorf("gate: group %q: %w", c.Name, err)
	}
	if gr.managedMax > 0 {
		if r := lawRate(gr.pol.law); r > 0 && r != gr.managedMax {
			if err := gr.rate.setRate(r); err != nil {
				return nil, fmt.Errorf("gate: group %q: %w", c.Name, err)
			}
		}
	}
	gr.setQueueBounds(c)
	gr.setMode(c)
	gr.recSub = recorderSub
	gr.drained.Store(true)
	if from != nil {
		gr.conc, gr.lat, gr.qwait, gr.c = from.conc, from.lat, from.qwait, from.c
		return gr, nil
	}
	gr.c = newCounters()
	if gr.conc, err = limits.NewConcurrency(limits.ConcurrencyParams{
		Limit: gr.pol.law.Limit(), MaxQueue: c.Queue.Max, MaxWait: time.Duration(c.Queue.MaxWait),
		Order: orderOf(c.Queue.Order == spec.OrderLIFO),
	}); err != nil {
		return nil, fmt.Errorf("gate: group %q: %w", c.Name, err)
	}

	// The recorders advance one sub-window per tick (see tickTime), so each
	// snapshot holds exactly the interval since the previous tick.
	stripes := runtime.GOMAXPROCS(0)
	if groups > 16 {
		stripes = min(stripes, 4) // ~16 KiB per stripe and recorder
	}
	if gr.lat, err = probe.NewRecorder(probe.RecorderParams{Window: gr.recSub, SubWindows: 1,
		MinRTTWindow: minRTTWindow, Stripes: stripes, Start: recorderEpoch}); err != nil {
		return nil, err
	}
	if gr.qwait, err = probe.NewRecorder(probe.RecorderParams{Window: gr.recSub, SubWindows: 1,
		MinRTTWindow: gr.recSub, Stripes: 1, Start: recorderEpoch}); err != nil {
		return nil, err
	}
	return gr, nil
}

// maxKeys is the bound on the keys c's fair share tracks: its rate's
// MaxKeys, or spec.DefaultMaxKeys without a rate.
func maxKeys(c *spec.Group) int {
	if c.Rate != nil && c.Rate.MaxKeys > 0 {
		return c.Rate.MaxKeys
	}
	return spec.DefaultMaxKeys
}

// setSlots applies c's concurrency and queue settings to gr's limiter, which
// may have slots held and waiters queued: the law's limit (a lower one grants
// nothing until fewer are in flight; a higher one wakes waiters into the
// room), the queue's bound and wait and, with order, its order (else CoDel
// keeps the order it chose).
func (gr *group) setSlots(c *spec.Group, order bool) {
	_ = gr.conc.SetLimit(min(gr.pol.law.Limit(), limits.MaxConcurrency)) // a law's limit is at least 1
	_ = gr.conc.SetMaxQueue(c.Queue.Max)                                 // buildable checked the queue
	_ = gr.conc.SetMaxWait(time.Duration(c.Queue.MaxWait))
	if order {
		_ = gr.conc.SetOrder(orderOf(c.Queue.Order == spec.OrderLIFO))
	}
	gr.setQueueBounds(c)
}

// setQueueBounds publishes the queue bound of c: max_wait for every
// priority, in the configured order, until QueueWait (CoDel) says otherwise.
func (gr *group) setQueueBounds(c *spec.Group) {
	gr.maxWait = time.Duration(c.Queue.MaxWait)
	qb := adaptive.QueueBound{Wait: gr.maxWait, Critical: gr.maxWait, LIFO: c.Queue.Order == spec.OrderLIFO}
	if gr.pol.qw != nil {
		qb = gr.pol.qw.Bound()
	}
	gr.publishBound(qb)
}

// publishBound publishes qb, capped by queue.max_wait.
func (gr *group) publishBound(qb adaptive.QueueBound) {
	qb.Wait, qb.Critical = min(qb.Wait, gr.maxWait), min(qb.Critical, gr.maxWait)
	qb.StandingWait = min(qb.StandingWait, gr.maxWait)
	gr.bound.Store(&qb)
}

// waitPlan is how a request of priority p that finds no free slot at now
// (ns on the gate's clock) may wait, before its deadline is considered: the
// published bound read for the queue as it is (QueueBound.Arrival: a queue
// non-empty for long is standing) and whether the queue now serves newest
// first; and how long the queue has gone without handing a slot out (since
// the last grant, or since it formed; 0 when it is empty), which with the
// interval between completions tells how far back in it the request may
// stand (adaptive.Positions).
func (gr *group) waitPlan(p adaptive.Priority, now int64) (wait time.Duration, lifo bool, idle time.Duration) {
	var busy time.Duration
	if since := gr.busySince.Load(); since != 0 {
		busy = time.Duration(now - since)
		idle = time.Duration(now - max(since, gr.lastGrant.Load()))
	}
	wait, lifo = gr.bound.Load().Arrival(p, busy)
	return wait, lifo, idle
}

// recorderSub is the recorders' sub-window: one tick (see tickTime).
const recorderSub = adaptive.DefaultInterval

// minRTTWindow is how far back the min RTT looks, in ticks of recorderSub
// (the recorders count ticks, not wall time): 120 intervals, 30 s at the
// default interval, as adaptive/sim's probe model.
const minRTTWindow = 120 * recorderSub

// recorderEpoch is the recorders' time origin: they run on tick counts.
var recorderEpoch = time.Unix(0, 0)

func ptr[T any](v T) *T { return &v }
