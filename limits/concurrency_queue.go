package limits

import (
	"slices"
	"sync"
	"time"
)

// waiter is one queued Acquire. Waiters are pooled with their channel and
// timer; their links and flags are guarded by Concurrency.mu.
type waiter struct {
	ch         chan struct{} // buffered 1: the wake-up
	timer      *time.Timer
	prev, next *waiter
	lvl        *level
	priority   int
	positions  int   // AcquireOptions.Positions; 0: any
	done       bool  // woken: granted (err nil) or evicted
	err        error // nil or ErrEvicted
}

var waiters = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{ch: make(chan struct{}, 1), timer: t}
}}

func getWaiter(priority int) *waiter {
	wt := waiters.Get().(*waiter)
	wt.priority, wt.positions, wt.done, wt.err = priority, 0, false, nil
	return wt
}

func putWaiter(wt *waiter) { waiters.Put(wt) }

// level holds the waiters of one priority, oldest at head.
type level struct {
	priority   int
	head, tail *waiter
	n          int
}

// queue is the waiters by priority: levels sorted by descending priority,
// each an intrusive list in arrival order. Push, pop and removal are O(1)
// plus a scan of the (few) distinct priorities.
type queue struct {
	levels []*level
	n      int
}

// maxIdleLevels bounds the empty levels kept for reuse.
const maxIdleLevels = 16

func (q *queue) push(wt *waiter) {
	i, found := slices.BinarySearchFunc(q.levels, wt.priority, func(l *level, p int) int { return p - l.priority })
	if !found {
		if len(q.levels) >= maxIdleLevels {
			q.levels = slices.DeleteFunc(q.levels, func(l *level) bool { return l.n == 0 })
			i, _ = slices.BinarySearchFunc(q.levels, wt.priority, func(l *level, p int) int { return p - l.priority })
		}
		q.levels = slices.Insert(q.levels, i, &level{priority: wt.priority})
	}
	l := q.levels[i]
	wt.lvl, wt.prev, wt.next = l, l.tail, nil
	if l.tail != nil {
		l.tail.next = wt
	} else {
		l.head = wt
	}
	l.tail = wt
	l.n++
	q.n++
}

func (q *queue) remove(wt *waiter) {
	l := wt.lvl
	if wt.prev != nil {
		wt.prev.next = wt.next
	} else {
		l.head = wt.next
	}
	if wt.next != nil {
		wt.next.prev = wt.prev
	} else {
		l.tail = wt.prev
	}
	wt.prev, wt.next, wt.lvl = nil, nil, nil
	l.n--
	q.n--
}

// best is the waiter to serve next: highest priority, then by order.
func (q *queue) best(o Order) *waiter {
	for _, l := range q.levels {
		if l.n > 0 {
			if o == LIFO {
				return l.tail
			}
			return l.head
		}
	}
	return nil
}

// position is where a new waiter of priority p would stand (1: served
// next): behind every waiter of a higher priority, and under FIFO behind
// those of its own.
func (q *queue) position(p int, o Order) int {
	ahead := 0
	for _, l := range q.levels {
		if l.priority < p || (l.priority == p && o == LIFO) {
			break
		}
		ahead += l.n
	}
	return ahead + 1
}

// last is the waiter served last: the lowest priority's newest under FIFO,
// its oldest under LIFO; nil for an empty queue.
func (q *queue) last(o Order) *waiter {
	for i := len(q.levels) - 1; i >= 0; i-- {
		if l := q.levels[i]; l.n > 0 {
			if o == LIFO {
				return l.head
			}
			return l.tail
		}
	}
	return nil
}

// lowest is the eviction candidate: lowest priority, most recently queued.
func (q *queue) lowest() *waiter {
	for i := len(q.levels) - 1; i >= 0; i-- {
		if l := q.levels[i]; l.n > 0 {
			return l.tail
		}
	}
	return nil
}
