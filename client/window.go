package client

import (
	"sync/atomic"
	"time"
)

// window counts two figures (a and b) over a sliding window of slots: each
// slot holds what was recorded in one slot width, both figures in one word
// (a in the high 32 bits, b in the low), so that a record is one atomic
// add. The window never locks: a slot is cleared by the one goroutine whose
// compare-and-swap moved the head past it, and reading the totals sums the
// slots (which hold nothing older than the window once advanced).
//
// The window holds up to 2³¹−1 of each figure, all its slots together (a
// backend sent 17 million requests a second for the default 2 minutes). The window is approximate by
// at most the records that race a slot being cleared (such a record is
// lost). Safe for concurrent use.
type window struct {
	width int64 // of a slot, in nanoseconds
	slots []atomic.Int64
	head  atomic.Int64 // the index (unix ns / width) of the newest slot
}

// pair packs a and b into one slot word.
func pair(a, b int64) int64 { return a<<32 + b }

// newWindow returns a window of n slots spanning d.
func newWindow(d time.Duration, n int) *window {
	return &window{width: max(int64(d)/int64(n), 1), slots: make([]atomic.Int64, n)}
}

// advance moves the head to the slot of now (Unix ns), clearing the slots
// that leave the window, and returns the head. A clock that steps back
// leaves the head where it is. Within the head's slot, as nearly every call
// is, it is one load and a multiplication (no division).
func (w *window) advance(now int64) int64 {
	h := w.head.Load()
	if now < (h+1)*w.width {
		return h
	}
	cur := now / w.width
	if !w.head.CompareAndSwap(h, cur) {
		return w.head.Load()
	}
	n := int64(len(w.slots))
	for i := max(h+1, cur-n+1); i <= cur; i++ {
		w.slots[i%n].Store(0)
	}
	return cur
}

// add records v (a pair) at now (Unix ns).
func (w *window) add(now int64, v int64) {
	w.slots[w.advance(now)%int64(len(w.slots))].Add(v)
}

// totals returns the sums of the window as last advanced: it adds the slot
// words up and unpacks the sum once (b, which a negative record may have
// borrowed from a, is its low 32 bits read as signed).
func (w *window) totals() (a, b int64) {
	var sum int64
	for i := range w.slots {
		sum += w.slots[i].Load()
	}
	b = int64(int32(sum))
	return (sum - b) >> 32, b
}

// stale reports whether the window was last advanced before the slot of
// now (Unix ns).
func (w *window) stale(now int64) bool { return now >= (w.head.Load()+1)*w.width }
