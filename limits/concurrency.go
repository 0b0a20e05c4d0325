package limits

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Order is the order in which Concurrency serves waiters of equal priority.
type Order int32

const (
	// FIFO serves the longest-waiting first (fair; the default).
	FIFO Order = iota
	// LIFO serves the most recent first: under overload the newest requests,
	// whose clients are still waiting, get through, and the old ones time
	// out (Facebook's adaptive LIFO).
	LIFO
)

func (o Order) String() string {
	switch o {
	case FIFO:
		return "fifo"
	case LIFO:
		return "lifo"
	}
	return fmt.Sprintf("Order(%d)", int32(o))
}

// MaxConcurrency is the largest concurrency limit.
const MaxConcurrency = 1<<31 - 1

// Errors returned by Concurrency.Acquire. A cancelled or expired context
// returns the context's own error (ctx.Err()).
var (
	// ErrLimit: no slot was free and the call could not wait (no queue, or
	// a negative per-call MaxWait).
	ErrLimit = errors.New("limits: concurrency limit reached")
	// ErrQueueFull: no slot was free and the wait queue was full of waiters
	// of equal or higher priority.
	ErrQueueFull = errors.New("limits: concurrency queue full")
	// ErrWaitTimeout: the waiter's maximum wait elapsed before a slot freed.
	ErrWaitTimeout = errors.New("limits: concurrency queue wait timed out")
	// ErrEvicted: a higher-priority arrival took the waiter's place in a
	// full queue.
	ErrEvicted = errors.New("limits: evicted from the concurrency queue by a higher priority")
)

// ConcurrencyParams configures a Concurrency limiter. Limit is required;
// the zero value of the other fields means no queue.
type ConcurrencyParams struct {
	// Limit is the number of slots, in [1, MaxConcurrency].
	Limit int
	// MaxQueue bounds the waiters; 0 means callers never wait.
	MaxQueue int
	// MaxWait is the default longest wait in the queue; 0 means no bound
	// other than the caller's context.
	MaxWait time.Duration
	// Order is FIFO (default) or LIFO among waiters of equal priority.
	Order Order
}

// Validate reports every problem with p.
func (p ConcurrencyParams) Validate() error {
	var ps problems
	if p.Limit < 1 || p.Limit > MaxConcurrency {
		ps.add("concurrency limit must be between 1 and %d, got %d", MaxConcurrency, p.Limit)
	}
	if p.MaxQueue < 0 || p.MaxQueue > MaxConcurrency {
		ps.add("concurrency max queue must be between 0 and %d, got %d", MaxConcurrency, p.MaxQueue)
	}
	if p.MaxWait < 0 {
		ps.add("concurrency max wait must not be negative, got %v", p.MaxWait)
	}
	if p.Order != FIFO && p.Order != LIFO {
		ps.add("concurrency order must be fifo or lifo, got %v", p.Order)
	}
	return ps.err()
}

// AcquireOptions are per-call options of Concurrency.Acquire.
type AcquireOptions struct {
	// Priority orders waiters: higher is served first, and a full queue
	// makes room for a higher priority by evicting its lowest-priority, most
	// recently queued waiter. Default 0.
	Priority int
	// MaxWait overrides the limiter's MaxWait for this call when positive
	// (e.g. a CoDel-style bound the caller computes); negative means do not
	// wait at all.
	MaxWait time.Duration
	// Positions, when positive, is how far back in the queue the caller
	// may wait (1: served next): as many waiters as can be served within
	// its wait. A caller that would stand further back (counting those
	// served before it: higher priorities, and its own priority's under
	// FIFO) is refused with ErrQueueFull at once, and a waiter pushed back
	// further by later arrivals (a higher priority, or its own under LIFO)
	// leaves with ErrEvicted at once, rather than waiting only to time out.
	// Waiters of the caller's priority that already stand beyond it leave
	// at once too (the bound is worked out for the queue as it is now: when
	// the interval between slots has grown, they will not be served within
	// their wait either). Zero: no bound but MaxQueue.
	Positions int
}

// The state word: the limit in the high 32 bits, a "waiters queued" flag in
// bit 31 and the in-flight count in bits 0–30. One CAS therefore checks the
// limit, the queue and the count together: a slot is never granted above the
// limit current at that instant, and never to a newcomer ahead of waiters.
const (
	inflightMask = 1<<31 - 1
	queuedBit    = 1 << 31
)

func limitOf(w uint64) int64    { return int64(w >> 32) }
func inflightOf(w uint64) int64 { return int64(w & inflightMask) }

// Concurrency is a counting semaphore for in-flight requests whose limit can
// change at any time, with an optional bounded wait queue.
//
// Admission (TryAcquire, and Acquire when a slot is free) and Release are
// lock-free: one CAS on a word holding the limit, the in-flight count and a
// queued flag; no allocation. A slot is granted only while in-flight <
// limit at that instant, so the limit is never overshot, also while SetLimit
// lowers it concurrently. Lowering the limit does not revoke slots already
// held: in-flight then exceeds the new limit until enough are released, and
// nothing is granted meanwhile.
//
// Waiting: when no slot is free, Acquire queues the caller if the queue has
// room (MaxQueue), ordered by priority, then FIFO or LIFO (switchable at any
// time with SetOrder). Release hands its slot straight to the best waiter
// (the in-flight count does not drop and no newcomer can barge in between);
// raising the limit wakes as many waiters as it frees. A waiter leaves with
// ErrWaitTimeout after its maximum wait, with ctx.Err() when its context
// ends, or with ErrEvicted when a higher priority takes its place in a full
// queue or later arrivals push it back beyond the positions it may wait at
// (AcquireOptions.Positions). A waiter that gives up at the very moment a slot is handed to it
// passes the slot on (to the next waiter, or back): slots are never lost.
// Waiters and their timers are pooled, so the queued path does not
// allocate in steady state.
//
// The zero value is not usable; use NewConcurrency. Safe for concurrent use.
type Concurrency struct {
	word     atomic.Uint64
	queued   atomic.Int64 // waiters, for read-outs
	maxWait  atomic.Int64 // default MaxWait, ns
	order    atomic.Int32
	maxQueue atomic.Int64

	mu sync.Mutex // guards q and waiters' links and flags
	q  queue
}

// NewConcurrency returns a Concurrency limiter with no slot held.
func NewConcurrency(p ConcurrencyParams) (*Concurrency, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	c := &Concurrency{}
	c.word.Store(uint64(p.Limit) << 32)
	c.maxQueue.Store(int64(p.MaxQueue))
	c.maxWait.Store(int64(p.MaxWait))
	c.order.Store(int32(p.Order))
	return c, nil
}

// TryAcquire takes a slot if one is free and nobody is queued for it,
// without waiting. It reports whether it took one.
func (c *Concurrency) TryAcquire() bool {
	for {
		w := c.word.Load()
		if w&queuedBit != 0 || inflightOf(w) >= limitOf(w) {
			return false
		}
		if c.word.CompareAndSwap(w, w+1) {
			return true
		}
	}
}

// Acquire takes a slot, waiting in the queue if none is free and the call
// may wait. It returns nil when the caller holds a slot (and must Release
// it), or ErrLimit, ErrQueueFull, ErrWaitTimeout, ErrEvicted or ctx.Err().
// A free slot may be taken even if ctx is already done.
func (c *Concurrency) Acquire(ctx context.Context, o AcquireOptions) error {
	if c.TryAcquire() {
		return nil
	}
	return c.wait(ctx, o)
}

// Release returns a slot taken by TryAcquire or a successful Acquire,
// handing it to the best waiter if any. Releasing a slot not held panics,
// as sync.WaitGroup does on a negative count: it is a bug in the caller.
func (c *Concurrency) Release() {
	for {
		w := c.word.Load()
		if inflightOf(w) == 0 {
			panic("limits: Concurrency.Release without a matching Acquire")
		}
		if w&queuedBit != 0 && inflightOf(w) <= limitOf(w) && c.handOff() {
			return
		}
		if w&queuedBit == 0 || inflightOf(w) > limitOf(w) {
			if c.word.CompareAndSwap(w, w-1) {
				return
			}
		}
	}
}

// handOff gives the caller's slot to the best waiter; false if there is
// none or the limit fell below the in-flight count meanwhile.
func (c *Concurrency) handOff() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.word.Load()
	if c.q.n == 0 || inflightOf(w) > limitOf(w) {
		return false
	}
	c.finish(c.q.best(Order(c.order.Load())), nil)
	c.settle()
	return true
}

// settle keeps the queued flag equal to "the queue is not empty" and grants
// free slots to waiters. Call with mu held after every queue change.
func (c *Concurrency) settle() {
	for {
		w := c.word.Load()
		switch {
		case c.q.n == 0:
			if w&queuedBit == 0 || c.word.CompareAndSwap(w, w&^queuedBit) {
				c.queued.Store(0)
				return
			}
		case w&queuedBit == 0:
			c.word.CompareAndSwap(w, w|queuedBit)
		case inflightOf(w) < limitOf(w):
			// Room with the flag set: a slot freed (or the limit rose)
			// before the flag went up; give it to the best waiter.
			if c.word.CompareAndSwap(w, w+1) {
				c.finish(c.q.best(Order(c.order.Load())), nil)
			}
		default:
			c.queued.Store(int64(c.q.n))
			return
		}
	}
}

// finish removes a queued waiter and wakes it with err (nil: it now holds a
// slot). Call with mu held.
func (c *Concurrency) finish(wt *waiter, err error) {
	c.q.remove(wt)
	wt.done, wt.err = true, err
	wt.ch <- struct{}{}
}

func (c *Concurrency) wait(ctx context.Context, o AcquireOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	maxWait := o.MaxWait
	if maxWait == 0 {
		maxWait = time.Duration(c.maxWait.Load())
	}
	c.mu.Lock()
	if c.q.n == 0 && c.TryAcquire() { // a slot freed since the fast path
		c.mu.Unlock()
		return nil
	}
	maxQueue := c.maxQueue.Load()
	if maxWait < 0 || maxQueue == 0 {
		c.mu.Unlock()
		return ErrLimit
	}
	order := Order(c.order.Load())
	c.pushOut(order, o, nil)
	if o.Positions > 0 && c.q.position(o.Priority, order) > o.Positions {
		c.settle()
		c.mu.Unlock()
		return ErrQueueFull
	}
	if int64(c.q.n) >= maxQueue {
		victim := c.q.lowest()
		if victim == nil || victim.priority >= o.Priority {
			c.settle()
			c.mu.Unlock()
			return ErrQueueFull
		}
		c.finish(victim, ErrEvicted)
	}
	wt := getWaiter(o.Priority)
	wt.positions = o.Positions
	c.q.push(wt)
	c.pushOut(order, o, wt)
	c.settle()
	c.mu.Unlock()

	var expired <-chan time.Time
	if maxWait > 0 {
		wt.timer.Reset(maxWait)
		expired = wt.timer.C
	}
	var err error
	select {
	case <-wt.ch:
		err = wt.err
		wt.timer.Stop()
		putWaiter(wt)
		return err
	case <-ctx.Done():
		err = ctx.Err()
	case <-expired:
		err = ErrWaitTimeout
	}
	wt.timer.Stop()
	c.mu.Lock()
	if wt.done { // a slot (or an eviction) arrived as we gave up
		<-wt.ch
		granted := wt.err == nil
		c.mu.Unlock()
		if granted {
			c.Release() // pass it on
		}
	} else {
		c.q.remove(wt)
		c.settle()
		c.mu.Unlock()
	}
	putWaiter(wt)
	return err
}

// pushOut evicts (ErrEvicted), from the end of the queue served last, the
// waiters that stand further back than they may wait for: beyond their own
// Positions, or, for those of o's priority, beyond o's (a bound the caller
// worked out for the queue as it is now: those waiters will not be served
// within it either); but not except, the caller's own waiter. Call with mu
// held.
func (c *Concurrency) pushOut(order Order, o AcquireOptions, except *waiter) {
	for {
		last := c.q.last(order)
		if last == nil || last == except {
			return
		}
		bound := last.positions
		if o.Positions > 0 && last.priority == o.Priority && (bound == 0 || o.Positions < bound) {
			bound = o.Positions
		}
		if bound == 0 || c.q.n <= bound {
			return
		}
		c.finish(last, ErrEvicted)
	}
}

// SetLimit changes the number of slots. Raising it wakes waiters into the
// new room; lowering it revokes nothing but grants nothing until in-flight
// is below the new limit.
func (c *Concurrency) SetLimit(n int) error {
	if n < 1 || n > MaxConcurrency {
		return fmt.Errorf("limits: concurrency limit must be between 1 and %d, got %d", MaxConcurrency, n)
	}
	for {
		w := c.word.Load()
		if c.word.CompareAndSwap(w, w&(1<<32-1)|uint64(n)<<32) {
			if w&queuedBit != 0 && int64(n) > limitOf(w) {
				c.mu.Lock()
				c.settle()
				c.mu.Unlock()
			}
			return nil
		}
	}
}

// SetMaxQueue changes the queue bound. Waiters already queued beyond a lower
// bound stay; new ones are refused until the queue is below it.
func (c *Concurrency) SetMaxQueue(n int) error {
	if n < 0 || n > MaxConcurrency {
		return fmt.Errorf("limits: concurrency max queue must be between 0 and %d, got %d", MaxConcurrency, n)
	}
	c.maxQueue.Store(int64(n))
	return nil
}

// SetMaxWait changes the default maximum wait of later Acquire calls (0: no
// bound other than the context).
func (c *Concurrency) SetMaxWait(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("limits: concurrency max wait must not be negative, got %v", d)
	}
	c.maxWait.Store(int64(d))
	return nil
}

// SetOrder switches between FIFO and LIFO; it applies to the next waiter
// served, including those already queued.
func (c *Concurrency) SetOrder(o Order) error {
	if o != FIFO && o != LIFO {
		return fmt.Errorf("limits: concurrency order must be fifo or lifo, got %v", o)
	}
	c.order.Store(int32(o))
	return nil
}

// Limit returns the current limit.
func (c *Concurrency) Limit() int { return int(limitOf(c.word.Load())) }

// InFlight returns the slots held now.
func (c *Concurrency) InFlight() int { return int(inflightOf(c.word.Load())) }

// Queued returns the number of waiters.
func (c *Concurrency) Queued() int { return int(c.queued.Load()) }

// MaxQueue returns the queue bound.
func (c *Concurrency) MaxQueue() int { return int(c.maxQueue.Load()) }

// MaxWait returns the default maximum wait.
func (c *Concurrency) MaxWait() time.Duration { return time.Duration(c.maxWait.Load()) }

// Order returns the order among waiters of equal priority.
func (c *Concurrency) Order() Order { return Order(c.order.Load()) }
