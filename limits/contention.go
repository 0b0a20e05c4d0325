package limits

import (
	"sync"
	"sync/atomic"
)

// contention is how the lock-free limiters (cell, Allowance) behave when
// their compare-and-swap fails. Retrying at once would move the word's cache
// line between the cores on every decision (measured: 75 ns a decision on
// two busy cores, twice x/time/rate's mutex, whose waiters sleep). So after
// a failure, decisions queue on a mutex until calmAfter of them in a row have
// met no contention, and meanwhile the line stays with the core that holds
// the mutex. The pattern:
//
//	if !c.busy.Load() && try() {
//		return
//	}
//	c.enter()
//	for !try() {
//		c.again()
//	}
//	c.leave()
type contention struct {
	busy  atomic.Bool // decisions queue
	queue sync.Mutex
	calm  int // decisions left before the queue ends; guarded by queue
}

// calmAfter is how many decisions in a row must meet no contention before
// the decisions leave the queue for the lock-free path again.
const calmAfter = 1024

// enter queues the caller (its lock-free attempt failed, or others queue).
func (c *contention) enter() {
	c.queue.Lock()
	if !c.busy.Load() {
		c.busy.Store(true)
		c.calm = calmAfter
	}
}

// again records another failed attempt while queued: contention goes on.
func (c *contention) again() { c.calm = calmAfter }

// leave ends the caller's turn, and the queue after calmAfter calm turns.
func (c *contention) leave() {
	if c.calm--; c.calm == 0 {
		c.busy.Store(false)
	}
	c.queue.Unlock()
}
