package limits

import (
	"testing"
	"time"
)

func TestLeakyQueueSteps(t *testing.T) {
	// A slot per 100 ms; waits up to 250 ms: capacity 3.
	l := must(NewLeakyQueue(LeakyQueueParams{Rate: 10, MaxWait: 250 * ms}))
	runSteps(t, l, []step{
		{at: 0, n: 1, allowed: true, remaining: 2, retry: 0, reset: 100 * ms, delay: 0},
		{at: 0, n: 1, allowed: true, remaining: 1, retry: 0, reset: 200 * ms, delay: 100 * ms},
		{at: 0, n: 1, allowed: true, remaining: 0, retry: 0, reset: 300 * ms, delay: 200 * ms},
		{at: 0, n: 1, allowed: false, remaining: 0, retry: 50 * ms, reset: 300 * ms},
		{at: 50 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: 350 * ms, delay: 250 * ms},
		// A large request occupies the pace for longer.
		{at: 400 * ms, n: 5, allowed: true, remaining: 0, retry: 0, reset: 500 * ms, delay: 0},
		{at: 400 * ms, n: 1, allowed: false, remaining: 0, retry: 250 * ms, reset: 500 * ms},
		{at: 2 * time.Second, n: 0, allowed: true, remaining: 3, retry: 0, reset: 0},
	})
}

// Admitted requests leave at the pace: their departure instants (now +
// Delay) are at least 1/Rate apart.
func TestLeakyQueuePaces(t *testing.T) {
	l := must(NewLeakyQueue(LeakyQueueParams{Rate: 100, MaxWait: time.Second}))
	var last time.Time
	for i := range 1000 {
		now := t0.Add(time.Duration(i) * 3 * ms) // 333/s offered, 100/s paced
		r := l.AllowAt(now, 1)
		if !r.Allowed {
			continue
		}
		dep := now.Add(r.Delay)
		if !last.IsZero() && dep.Sub(last) < 10*ms {
			t.Fatalf("departures %v apart, want at least 10ms", dep.Sub(last))
		}
		if r.Delay > time.Second {
			t.Fatalf("delay %v beyond MaxWait", r.Delay)
		}
		last = dep
	}
}

func TestLeakyQueueSetters(t *testing.T) {
	l := must(NewLeakyQueue(LeakyQueueParams{Rate: 10}))
	runSteps(t, l, []step{
		{at: 0, n: 1, allowed: true, remaining: 0, retry: 0, reset: 100 * ms},
		{at: 0, n: 1, allowed: false, remaining: 0, retry: 100 * ms, reset: 100 * ms},
	})
	must(0, l.SetMaxWait(time.Second))
	must(0, l.SetRate(100)) // the backlog of one unit is re-timed: 10 ms
	runSteps(t, l, []step{{at: 0, n: 1, allowed: true, remaining: 99, retry: 0, reset: 20 * ms, delay: 10 * ms}})
	if err := l.SetMaxWait(-1); err == nil {
		t.Fatal("SetMaxWait(-1) accepted")
	}
	if p := l.Policy(); p.Quota != 101 || p.Window != 1010*ms {
		t.Fatalf("policy %+v", p)
	}
}
