package redis

import (
	"testing"
	"time"
)

// TestDeadline: the budget follows twice the 99th percentile of the
// answers over a window, within [floor, max(floor, 100ms)]; more than 1 %
// of decisions out of the budget double it; a window of too few answers
// changes nothing.
func TestDeadline(t *testing.T) {
	t0 := time.Unix(1_000_000, 0).UnixNano()
	d := newDeadline(5*time.Millisecond, t0)
	at := func(s float64) int64 { return t0 + int64(s*float64(time.Second)) }
	feed := func(from float64, n int, took time.Duration, late int) {
		for i := range n {
			d.observe(at(from)+int64(i), took, i < late)
		}
	}
	if d.budget() != 5*time.Millisecond {
		t.Fatalf("budget %v at the start, want the floor", d.budget())
	}
	feed(0.1, 1000, 8*time.Millisecond, 0)
	d.observe(at(1.1), 8*time.Millisecond, false) // the window is over
	if got, want := d.budget(), 2*8192*time.Microsecond; got != want {
		t.Errorf("answers of 8ms: budget %v, want twice their class's top, %v", got, want)
	}
	feed(1.2, 1000, time.Millisecond, 20) // 2 % late
	d.observe(at(2.2), time.Millisecond, false)
	if got, want := d.budget(), 4*8192*time.Microsecond; got != want {
		t.Errorf("2 %% late: budget %v, want it doubled, %v", got, want)
	}
	for w := 2.3; w < 4; w += 1.1 {
		feed(w, 1000, 40*time.Millisecond, 20)
		d.observe(at(w+1), time.Millisecond, false)
	}
	if got := d.budget(); got != adaptCeil {
		t.Errorf("late again, twice: budget %v, want the ceiling %v", got, adaptCeil)
	}
	feed(4.6, 50, 100*time.Microsecond, 0)
	d.observe(at(5.6), time.Millisecond, false)
	if got := d.budget(); got != adaptCeil {
		t.Errorf("51 answers: budget %v, want it unchanged", got)
	}
	feed(5.7, 1000, 100*time.Microsecond, 0)
	d.observe(at(6.7), time.Millisecond, false)
	if got := d.budget(); got != 5*time.Millisecond {
		t.Errorf("fast answers: budget %v, want the floor", got)
	}
	if fixed := newDeadline(250*time.Millisecond, t0); fixed.ceil != 250*time.Millisecond {
		t.Errorf("a timeout above 100ms adapts up to %v, want itself", fixed.ceil)
	}
}
