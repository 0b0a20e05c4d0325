package redis

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// The decision budget adapts to the Redis of the deployment: a fixed 5 ms
// is missed by a busy host (its Redis answers in 5 ms most of the time, and
// the rest falls back), while a budget far above what Redis takes only
// delays the answer when Redis is gone (the link goes down after a few
// failures anyway).
const (
	// adaptCeil is the highest budget the adaptation reaches (a configured
	// Timeout above it is kept as it is).
	adaptCeil = 100 * time.Millisecond
	// adaptEvery is the least time between two adaptations, and adaptMin
	// the least answers one needs.
	adaptEvery = time.Second
	adaptMin   = 100
	// latencyBuckets are the answers' latency classes: class i holds
	// [2^(i-1), 2^i) µs (class 0: under 1 µs), the last one the decisions
	// that ran out of the budget.
	latencyBuckets = 22
)

// deadline is a store's decision budget: at least the configured Timeout
// (floor), at most max(floor, adaptCeil) (ceil), and in between twice the
// 99th percentile of Redis's answers over the last second (at least 100 of
// them); when more than 1 % of the decisions ran out of the budget, the
// budget doubles. Safe for concurrent use; observe is two atomic adds.
type deadline struct {
	floor, ceil time.Duration
	cur         atomic.Int64 // ns
	since       atomic.Int64 // the window's start, Unix ns
	hist        [latencyBuckets]atomic.Uint64
}

func newDeadline(floor time.Duration, now int64) *deadline {
	d := &deadline{floor: floor, ceil: max(floor, adaptCeil)}
	d.cur.Store(int64(floor))
	d.since.Store(now)
	return d
}

// budget is the time a decision may wait for Redis now.
func (d *deadline) budget() time.Duration { return time.Duration(d.cur.Load()) }

// observe records a decision that Redis answered after took, or (timedOut)
// did not answer within its budget, at now; once a window is over, the
// first caller after it adapts the budget.
func (d *deadline) observe(now int64, took time.Duration, timedOut bool) {
	i := latencyBuckets - 1
	if !timedOut {
		i = min(bits.Len64(uint64(took/time.Microsecond)), latencyBuckets-2)
	}
	d.hist[i].Add(1)
	if since := d.since.Load(); now-since >= int64(adaptEvery) && d.since.CompareAndSwap(since, now) {
		d.adapt()
	}
}

// adapt sets the budget from the window's answers and opens the next.
func (d *deadline) adapt() {
	var counts [latencyBuckets]uint64
	total := uint64(0)
	for i := range d.hist {
		counts[i] = d.hist[i].Swap(0)
		total += counts[i]
	}
	if total < adaptMin {
		return // too few to tell: the budget stays
	}
	cur := time.Duration(d.cur.Load())
	next := cur
	if counts[latencyBuckets-1]*100 > total {
		next = 2 * cur // more than 1 % ran out of it
	} else {
		seen, want := uint64(0), (total*99+99)/100
		for i, c := range counts {
			if seen += c; seen >= want {
				// The class's upper end: 2^i µs.
				next = 2 * time.Duration(uint64(1)<<i) * time.Microsecond
				break
			}
		}
	}
	d.cur.Store(int64(min(max(next, d.floor), d.ceil)))
}
