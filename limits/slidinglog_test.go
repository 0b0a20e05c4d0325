package limits

import (
	"testing"
	"time"
)

func TestSlidingLogSteps(t *testing.T) {
	l := must(NewSlidingLog(WindowParams{Limit: 3, Window: time.Second}))
	runSteps(t, l, []step{
		{at: 0, n: 1, allowed: true, remaining: 2, retry: 0, reset: time.Second},
		{at: 400 * ms, n: 1, allowed: true, remaining: 1, retry: 0, reset: time.Second},
		{at: 800 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: time.Second},
		{at: 900 * ms, n: 1, allowed: false, remaining: 0, retry: 100 * ms, reset: 900 * ms},
		// (now-window, now]: the entry at exactly now-window has left.
		{at: 1000 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: time.Second},
		{at: 1000 * ms, n: 2, allowed: false, remaining: 0, retry: 800 * ms, reset: time.Second},
		{at: 1800 * ms, n: 2, allowed: true, remaining: 0, retry: 0, reset: time.Second},
		{at: 1800 * ms, n: 4, allowed: false, remaining: 0, retry: InfDuration, reset: time.Second},
		// Earlier than the newest entry: no time has passed.
		{at: 1700 * ms, n: 1, allowed: false, remaining: 0, retry: 200 * ms, reset: time.Second},
		{at: 2800 * ms, n: 0, allowed: true, remaining: 3, retry: 0, reset: 0},
	})
}

// Requests at one instant share one log entry; the log keeps instants, so a
// new limit applies exactly.
func TestSlidingLogSetters(t *testing.T) {
	l := must(NewSlidingLog(WindowParams{Limit: 10, Window: time.Second}))
	for range 6 {
		l.AllowAt(t0, 1)
	}
	if got := l.s.size; got != 1 {
		t.Fatalf("6 requests at one instant use %d log entries, want 1", got)
	}
	must(0, l.SetLimit(4))
	runSteps(t, l, []step{{at: 10 * ms, n: 1, allowed: false, remaining: 0, retry: 990 * ms, reset: 990 * ms}})
	must(0, l.SetWindow(100*ms))
	runSteps(t, l, []step{{at: 100 * ms, n: 4, allowed: true, remaining: 0, retry: 0, reset: 100 * ms}})
	if err := l.SetWindow(-time.Second); err == nil {
		t.Fatal("SetWindow(-1s) accepted")
	}
}
