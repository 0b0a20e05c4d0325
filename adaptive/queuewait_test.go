package adaptive

import (
	"testing"
	"time"
)

// Positions: a wait of 5 ms with slots every 0.5 ms allows 10 places; a
// silence of a few gaps is chance and changes nothing, a longer one is the
// gap now (a stall); with not even the next slot expected in time, refuse.
func TestPositions(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		wait, gap, idle time.Duration
		want            int
	}{
		{5 * ms, ms / 2, 0, 10},
		{5 * ms, ms / 2, 2 * ms, 10},          // 4 gaps: chance
		{5 * ms, ms / 2, 2500 * ms / 1000, 2}, // 5 gaps: the gap is 2.5 ms now
		{5 * ms, ms / 2, 6 * ms, -1},          // silent longer than the wait
		{5 * ms, 10 * ms, 0, -1},              // one slot every 10 ms
		{5 * ms, 0, 0, 0},                     // nothing to go by
		{5 * ms, 0, ms, 5},                    // no gap known, a silence of 1 ms
	} {
		if got := Positions(tc.wait, tc.gap, tc.idle); got != tc.want {
			t.Errorf("Positions(%v, %v, %v) = %d, want %d", tc.wait, tc.gap, tc.idle, got, tc.want)
		}
	}
}

// Arrival: a queue non-empty for Busy is standing for the arrival: the
// standing bound below critical and, adaptive, LIFO; critical keeps its own.
func TestQueueBoundArrival(t *testing.T) {
	qw, err := NewQueueWait(QueueWaitParams{Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b := qw.Bound()
	for _, tc := range []struct {
		p    Priority
		busy time.Duration
		wait time.Duration
		lifo bool
	}{
		{Default, 0, 100 * time.Millisecond, false},
		{Default, 99 * time.Millisecond, 100 * time.Millisecond, false},
		{Default, 100 * time.Millisecond, 5 * time.Millisecond, true},
		{Critical, 100 * time.Millisecond, 100 * time.Millisecond, true},
	} {
		if w, l := b.Arrival(tc.p, tc.busy); w != tc.wait || l != tc.lifo {
			t.Errorf("Arrival(%v, %v) = %v, %v; want %v, %v", tc.p, tc.busy, w, l, tc.wait, tc.lifo)
		}
	}
	fifo, _ := NewQueueWait(QueueWaitParams{Order: OrderFIFO})
	if _, l := fifo.Bound().Arrival(Default, time.Second); l {
		t.Error("a FIFO queue turned LIFO")
	}
}
