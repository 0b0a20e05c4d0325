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

// The latency budget of a waiter is what the target leaves over the
// upstream latency of a full limit: at 1×C (1,500/s) a limit of 104 held a
// mean of 80 in flight (mean 53.3 ms, p99 76 ms), and a waiter is served
// into the full limit, 24 more in flight, 16 ms more latency: the budget is
// 100 − 76 − 16 = 8 ms, not 24 (issue 27: at a step to 3×C, 24 ms of
// waiting on top of the full limit's p99 put the second's p99 at 109 ms).
// A quiet group far below its limit (a mean of 0.1 in flight of 20) gets
// no such rise: its throughput says nothing of a full limit's. And an
// interval that completed nothing keeps the budget.
func TestQueueWaitBudgetOfFullLimit(t *testing.T) {
	ms := time.Millisecond
	now := time.Unix(0, 0)
	for _, tc := range []struct {
		name       string
		limit      int
		x          float64
		mean, p99  time.Duration
		wantBudget time.Duration
	}{
		{"at 1xC, limit 104, 80 in flight", 104, 1500, 53333 * time.Microsecond, 76 * ms, 8 * ms},
		{"quiet group", 20, 10, 10 * ms, 30 * ms, 70 * ms},
		{"full limit", 30, 1500, 20 * ms, 60 * ms, 40 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qw, err := NewQueueWait(QueueWaitParams{Latency: 100 * ms})
			if err != nil {
				t.Fatal(err)
			}
			s := Sample{Now: now, Interval: 250 * ms, Limit: tc.limit, Throughput: tc.x,
				Successes: int(tc.x / 4), MaxInFlight: tc.limit,
				Latency: Latency{Mean: tc.mean, P50: tc.mean, P99: tc.p99}}
			got := qw.Update(s).Wait
			if d := got - tc.wantBudget; d < -ms/2 || d > ms/2 {
				t.Errorf("budget %v, want %v", got, tc.wantBudget)
			}
			// Nothing completes in the next interval (and the queue has
			// not stood: what arrived was refused): the budget holds.
			stalled := Sample{Now: now.Add(250 * ms), Interval: 250 * ms, Limit: tc.limit,
				InFlight: tc.limit, MaxInFlight: tc.limit, QueueDrained: true}
			if w := qw.Update(stalled).Wait; w != got {
				t.Errorf("after an interval without completions the bound is %v, want the budget %v", w, got)
			}
		})
	}
}
