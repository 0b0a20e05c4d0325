package redis

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// failThreshold is how many consecutive failed decisions, with no success
// for the quiet period, take the link down.
const failThreshold = 3

// link is the health of a Store's connection to Redis, shared by its
// limiters: a circuit breaker with exponential backoff. While up, every
// decision goes to Redis; the link goes down after failThreshold
// consecutive failures (errors or timeouts) with no success for the quiet
// period: Redis is then dead or cannot keep up at all. (A Redis that is
// slow but alive keeps answering some decisions in time, and stays up: only
// its late decisions fall back.) While down, decisions are answered by the
// fallback without calling Redis, except one probe once the backoff has
// passed: if the probe succeeds the link is up again, else the backoff
// doubles (up to its maximum, each pause jittered by ±20 %, so the nodes of
// a cluster do not probe in step). A leased limiter's renewer probes on its
// own schedule besides (routeEvery): once a lease period, so that every
// node is back on Redis within a period or two of its return.
//
// Time is the callers' now (Unix ns), so the schedule is testable. The hot
// path (route, and success while up) reads atomics and takes no lock; the
// mutex guards transitions and the error record. Safe for concurrent use.
type link struct {
	down    atomic.Bool
	retryAt atomic.Int64 // while down: the earliest instant of the next probe
	probing atomic.Bool  // a probe is in flight
	probed  atomic.Int64 // while down: the start of the last probe
	fails   atomic.Int32 // consecutive failures while up
	lastOK  atomic.Int64 // the last success, give or take quiet/8; 0: none yet

	min, max, quiet time.Duration

	// changed receives (without blocking) at each change of mode.
	changed chan struct{}

	mu        sync.Mutex
	backoff   time.Duration // the current pause while down
	since     int64         // the last change of mode
	lastErr   string
	lastErrAt int64
}

func newLink(min, max, quiet time.Duration, now int64) *link {
	return &link{min: min, max: max, quiet: quiet, since: now, changed: make(chan struct{}, 1)}
}

// notify signals a change of mode.
func (k *link) notify() {
	select {
	case k.changed <- struct{}{}:
	default:
	}
}

// route tells whether a decision at now goes to Redis, and whether it is the
// probe of a down link (whose outcome must be reported with probe = true).
func (k *link) route(now int64) (toRedis, probe bool) { return k.routeEvery(now, 0) }

// routeEvery is route for a caller that, while the link is down, probes at
// least every `every` (0: by the backoff only): a lease renewer, once a
// period. Its probes cost Redis no more than its renewals do while the link
// is up (one call a period), a refused connection costs less, and against
// a hung Redis a probe waits for the renewal's budget on the renewer's own
// goroutine; the backoff still paces the other callers' probes. Without
// it, the last node back waited out its whole backoff (up to BackoffMax)
// after Redis returned, deciding by its share meanwhile, and then debited
// all of that from a stock the nodes already back were living on: they ran
// dry (the lab's 200ms dip, issue 29).
func (k *link) routeEvery(now int64, every time.Duration) (toRedis, probe bool) {
	if !k.down.Load() {
		return true, false
	}
	due := now >= k.retryAt.Load() || every > 0 && now-k.probed.Load() >= int64(every)
	if !due || !k.probing.CompareAndSwap(false, true) {
		return false, false
	}
	k.probed.Store(now)
	return true, true
}

// succeeded records a decision that Redis made.
func (k *link) succeeded(now int64, probe bool) {
	if probe {
		k.mu.Lock()
		k.down.Store(false)
		k.fails.Store(0)
		k.backoff, k.since = 0, now
		k.lastOK.Store(now)
		k.probing.Store(false)
		k.mu.Unlock()
		k.notify()
		return
	}
	if k.fails.Load() != 0 {
		k.fails.Store(0)
	}
	// Written at most 8 times per quiet period, to keep the hot path from
	// bouncing a shared cache line.
	if now-k.lastOK.Load() > int64(k.quiet/8) {
		k.lastOK.Store(now)
	}
}

// failed records a decision that Redis did not make in time.
func (k *link) failed(now int64, probe bool, err error) { k.fail(now, probe, false, err) }

// failedHard records a call that Redis did not answer within a budget far
// longer than a decision's (a lease renewal): the link goes down at once.
func (k *link) failedHard(now int64, probe bool, err error) { k.fail(now, probe, true, err) }

func (k *link) fail(now int64, probe, hard bool, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lastErr, k.lastErrAt = err.Error(), now
	switch {
	case probe:
		k.backoff = min(2*k.backoff, k.max)
		k.retryAt.Store(now + jitter(k.backoff))
		k.probing.Store(false)
	case k.down.Load():
		// a decision that left while the link was still up
	case hard || k.fails.Add(1) >= failThreshold && now-k.lastOK.Load() >= int64(k.quiet):
		k.backoff, k.since = k.min, now
		k.retryAt.Store(now + jitter(k.backoff))
		k.down.Store(true)
		k.notify()
	}
}

// jitter spreads d uniformly over ±20 %.
func jitter(d time.Duration) int64 {
	return int64(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// jitterSpread spreads d uniformly over [d/2, 3d/2).
func jitterSpread(d int64) int64 { return d/2 + rand.Int64N(max(d, 1)) }

// linkState is a snapshot of the link for Status.
type linkState struct {
	down                   bool
	since, lastErrAt, next int64
	lastErr                string
}

func (k *link) state() linkState {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := linkState{down: k.down.Load(), since: k.since, lastErr: k.lastErr, lastErrAt: k.lastErrAt}
	if s.down {
		s.next = k.retryAt.Load()
	}
	return s
}
