package limits

import "sync/atomic"

// Allowance is a stock of units that decisions take from and that its owner
// tops up: the local half of a quota leased from elsewhere (limits/redis
// leases blocks of a global quota to each node, which decides against them
// here). It is one word: Take is one compare-and-swap, with no lock unless
// decisions contend (they then queue for a while, as the GCRA limiters'
// do; see TokenBucket). A closed Allowance holds nothing to decide with: the
// owner has no lease. The zero value is open and holds 0 units. Safe for
// concurrent use.
type Allowance struct {
	v atomic.Int64 // units held, or closedStock
	// The queue's mutex on the same cache line as v would move the line at
	// every turn of the queue, which is there to keep it still.
	_ [56]byte
	c contention
}

const closedStock = -1

// Take takes n units if that many are held. n <= 0 is a probe: it takes
// nothing and is ok. left is what is held afterwards (when not ok, what is
// held). open is false while the allowance is closed; ok is then false.
func (a *Allowance) Take(n int64) (left int64, ok, open bool) {
	n = units(n)
	var done bool
	if !a.c.busy.Load() {
		if left, ok, open, done = a.try(n); done {
			return left, ok, open
		}
	}
	a.c.enter()
	for {
		if left, ok, open, done = a.try(n); done {
			break
		}
		a.c.again()
	}
	a.c.leave()
	return left, ok, open
}

// try makes one attempt; done is false if another decision changed the
// stock meanwhile.
func (a *Allowance) try(n int64) (left int64, ok, open, done bool) {
	v := a.v.Load()
	switch {
	case v < 0:
		return 0, false, false, true
	case v < n:
		return v, false, true, true
	case n == 0:
		return v, true, true, true
	}
	if !a.v.CompareAndSwap(v, v-n) {
		return 0, false, false, false
	}
	return v - n, true, true, true
}

// Add adds n >= 0 units, opening a closed allowance, and returns the units
// held afterwards.
func (a *Allowance) Add(n int64) int64 {
	n = units(n)
	for {
		v := a.v.Load()
		next := max(v, 0) + n
		if a.v.CompareAndSwap(v, next) {
			return next
		}
	}
}

// Withdraw takes back up to n units (fewer if fewer are held) and returns
// how many it took.
func (a *Allowance) Withdraw(n int64) int64 {
	n = units(n)
	for {
		v := a.v.Load()
		take := min(max(v, 0), n)
		if take == 0 || a.v.CompareAndSwap(v, v-take) {
			return take
		}
	}
}

// Close closes the allowance and returns the units it held (0 if it was
// closed already).
func (a *Allowance) Close() int64 { return max(a.v.Swap(closedStock), 0) }

// Held returns the units held (0 while closed) and whether it is open.
func (a *Allowance) Held() (units int64, open bool) {
	v := a.v.Load()
	return max(v, 0), v >= 0
}
