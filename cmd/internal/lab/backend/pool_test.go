package backend

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func mustGrant(t *testing.T, w *waiter) time.Time {
	t.Helper()
	select {
	case g := <-w.grant:
		if g.err != nil {
			t.Fatalf("grant error %v", g.err)
		}
		return g.freeAt
	default:
		t.Fatal("waiter not granted")
		return time.Time{}
	}
}

func notGranted(t *testing.T, w *waiter) {
	t.Helper()
	select {
	case g := <-w.grant:
		t.Fatalf("waiter granted early: %+v", g)
	default:
	}
}

// TestPoolChainsIntendedEnds: a slot handed over late still carries the
// instant its last request was meant to end, so the next start is
// backdated to it and timer slack does not pile up.
func TestPoolChainsIntendedEnds(t *testing.T) {
	p := newPool(1, 0, at(0))
	free, w, err := p.enter()
	if err != nil || w != nil || !free.Equal(at(0)) {
		t.Fatalf("first enter: %v %v %v", free, w, err)
	}
	_, w1, _ := p.enter()
	_, w2, _ := p.enter()
	if _, busy, queued := p.counts(); busy != 1 || queued != 2 {
		t.Fatalf("busy %d queued %d, want 1 2", busy, queued)
	}
	notGranted(t, w1)
	p.leave(at(40)) // meant to end at 40 ms, whenever it actually wakes
	if got := mustGrant(t, w1); !got.Equal(at(40)) {
		t.Fatalf("w1 freeAt %v, want +40ms", got)
	}
	notGranted(t, w2) // FIFO: w2 still waits
	p.leave(at(80))
	if got := mustGrant(t, w2); !got.Equal(at(80)) {
		t.Fatalf("w2 freeAt %v, want +80ms", got)
	}
	p.leave(at(120))
	if slots, busy, queued := p.counts(); slots != 1 || busy != 0 || queued != 0 {
		t.Fatalf("after all left: slots %d busy %d queued %d", slots, busy, queued)
	}
	if free, w, _ := p.enter(); w != nil || !free.Equal(at(120)) {
		t.Fatalf("idle slot freeAt %v, want +120ms", free)
	}
}

func TestPoolQueueBound(t *testing.T) {
	p := newPool(1, 2, at(0))
	p.enter()
	_, w1, e1 := p.enter()
	_, w2, e2 := p.enter()
	_, w3, e3 := p.enter()
	if e1 != nil || e2 != nil || w1 == nil || w2 == nil {
		t.Fatalf("queued enters failed: %v %v", e1, e2)
	}
	if e3 != errQueueFull || w3 != nil {
		t.Fatalf("third waiter: %v %v, want errQueueFull", w3, e3)
	}
	if !p.abandon(w1) {
		t.Fatal("abandon of a queued waiter failed")
	}
	if _, w4, err := p.enter(); err != nil || w4 == nil {
		t.Fatalf("after abandon, enter: %v", err)
	}
	p.leave(at(10)) // skips the abandoned w1
	if got := mustGrant(t, w2); !got.Equal(at(10)) {
		t.Fatalf("w2 freeAt %v", got)
	}
	if p.abandon(w2) {
		t.Fatal("abandon of a granted waiter succeeded")
	}
}

func TestPoolResize(t *testing.T) {
	p := newPool(1, 0, at(0))
	p.enter()
	_, w1, _ := p.enter()
	_, w2, _ := p.enter()
	p.resize(2, at(5)) // a new worker takes w1 at once
	if got := mustGrant(t, w1); !got.Equal(at(5)) {
		t.Fatalf("w1 freeAt %v, want +5ms", got)
	}
	notGranted(t, w2)
	p.resize(1, at(6)) // both busy: the first to leave retires
	p.leave(at(10))
	notGranted(t, w2)
	p.leave(at(12))
	if got := mustGrant(t, w2); !got.Equal(at(12)) {
		t.Fatalf("w2 freeAt %v", got)
	}
	if slots, busy, _ := p.counts(); slots != 1 || busy != 1 {
		t.Fatalf("slots %d busy %d, want 1 1", slots, busy)
	}
}

func TestPoolFailAll(t *testing.T) {
	p := newPool(1, 0, at(0))
	p.enter()
	_, w1, _ := p.enter()
	_, w2, _ := p.enter()
	p.failAll()
	for _, w := range []*waiter{w1, w2} {
		if g := <-w.grant; g.err != errCrashed {
			t.Fatalf("grant %+v, want errCrashed", g)
		}
	}
	if _, _, queued := p.counts(); queued != 0 {
		t.Fatalf("queued %d after failAll", queued)
	}
	p.leave(at(3))
	if free, w, _ := p.enter(); w != nil || !free.Equal(at(3)) {
		t.Fatalf("slot after crash: %v %v", free, w)
	}
}
