package backend

import (
	"errors"
	"sync"
	"time"
)

var (
	errQueueFull = errors.New("backend: queue full")
	errCrashed   = errors.New("backend: crashed")
)

// pool is W worker slots with a FIFO queue in front of them: the model of a
// thread-pool server. Each slot remembers the instant its last request was
// meant to end (freeAt), and the next request's service starts at
// max(arrival, freeAt) instead of at the instant the slot was handed over.
// A worker that overslept its timer therefore does not delay the next
// request, so the long-run capacity is exactly W / mean service time
// whatever the timer slack (see Server for the tolerance).
//
// All methods are safe for concurrent use; times are passed in.
type pool struct {
	mu      sync.Mutex
	target  int         // W: slots wanted
	slots   int         // slots in existence, busy or idle
	idle    []time.Time // freeAt of each idle slot
	queue   []*waiter   // FIFO; entries with done set are skipped
	head    int         // index of the first live entry candidate in queue
	queued  int         // live waiters
	maxWait int         // queue bound; 0: unbounded
}

// waiter is one queued request. grant receives exactly one value.
type waiter struct {
	grant chan grant
	done  bool // granted, failed or abandoned; guarded by pool.mu
}

type grant struct {
	freeAt time.Time
	err    error
}

func newPool(workers, maxQueue int, now time.Time) *pool {
	p := &pool{maxWait: maxQueue}
	p.resize(workers, now)
	return p
}

// enter asks for a slot. If one is idle it returns its freeAt and a nil
// waiter; otherwise it queues and returns a waiter to wait on, or
// errQueueFull if the queue is at its bound.
func (p *pool) enter() (time.Time, *waiter, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 && p.queued == 0 {
		at := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return at, nil, nil
	}
	if p.maxWait > 0 && p.queued >= p.maxWait {
		return time.Time{}, nil, errQueueFull
	}
	w := &waiter{grant: make(chan grant, 1)}
	p.queue = append(p.queue, w)
	p.queued++
	return time.Time{}, w, nil
}

// abandon takes w out of the queue if it has not been granted yet and
// reports whether it did. If it was granted in the meantime, the caller
// owns the slot and must leave it.
func (p *pool) abandon(w *waiter) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.done {
		return false
	}
	w.done = true
	p.queued--
	return true
}

// leave returns a slot whose request was meant to end at freeAt: to the
// first waiter, or to the idle set, or it retires the slot if the pool is
// shrinking.
func (p *pool) leave(freeAt time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slots > p.target {
		p.slots--
		return
	}
	p.handOut(freeAt)
}

// handOut gives a slot free at freeAt to the first live waiter, else makes
// it idle. p.mu is held.
func (p *pool) handOut(freeAt time.Time) {
	for p.head < len(p.queue) {
		w := p.queue[p.head]
		p.queue[p.head] = nil
		p.head++
		if w.done {
			continue
		}
		w.done = true
		p.queued--
		w.grant <- grant{freeAt: freeAt}
		p.compact()
		return
	}
	p.compact()
	p.idle = append(p.idle, freeAt)
}

// compact drops the consumed prefix of the queue once it dominates.
func (p *pool) compact() {
	if p.head > 1024 && p.head*2 > len(p.queue) {
		p.queue = append(p.queue[:0], p.queue[p.head:]...)
		p.head = 0
	}
}

// resize sets the number of slots to n. New slots are free from now; when
// shrinking, idle slots retire at once and busy ones as they leave.
func (p *pool) resize(n int, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = n
	for p.slots < n {
		p.slots++
		p.handOut(now)
	}
	for p.slots > n && len(p.idle) > 0 {
		p.idle = p.idle[:len(p.idle)-1]
		p.slots--
	}
}

// failAll fails every queued waiter with errCrashed (a simulated crash).
func (p *pool) failAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ; p.head < len(p.queue); p.head++ {
		w := p.queue[p.head]
		p.queue[p.head] = nil
		if !w.done {
			w.done = true
			w.grant <- grant{err: errCrashed}
		}
	}
	p.queue, p.head, p.queued = p.queue[:0], 0, 0
}

// counts returns the slots in existence, the busy ones and the queue length.
func (p *pool) counts() (slots, busy, queued int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slots, p.slots - len(p.idle), p.queued
}
