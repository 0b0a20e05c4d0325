package limits

import (
	"testing"
	"time"
)

func TestSlidingWindowSteps(t *testing.T) {
	l := must(NewSlidingWindow(WindowParams{Limit: 10, Window: time.Second}))
	runSteps(t, l, []step{
		{at: 100 * ms, n: 8, allowed: true, remaining: 2, retry: 0, reset: 1900 * ms},
		// Next window, 250 ms in: estimate 8·0.75 + 0 = 6.
		{at: 1250 * ms, n: 0, allowed: true, remaining: 4, retry: 0, reset: 750 * ms},
		{at: 1250 * ms, n: 4, allowed: true, remaining: 0, retry: 0, reset: 1750 * ms},
		// 8·(1-e/1s) + 4 + 1 <= 10 once e >= 375 ms.
		{at: 1250 * ms, n: 1, allowed: false, remaining: 0, retry: 125 * ms, reset: 1750 * ms},
		{at: 1375 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: 1625 * ms},
		// Estimate 8·0.5 + 5 = 9. n=6 cannot fit this window (5+6 > 10): next
		// window, once 5·(1-e/1s) + 6 <= 10, e >= 200 ms.
		{at: 1500 * ms, n: 6, allowed: false, remaining: 1, retry: 700 * ms, reset: 1500 * ms},
		{at: 2199 * ms, n: 6, allowed: false, remaining: -1, retry: ms, reset: -1},
		{at: 2200 * ms, n: 6, allowed: true, remaining: 0, retry: 0, reset: 1800 * ms},
		{at: 2200 * ms, n: 11, allowed: false, remaining: 0, retry: InfDuration, reset: 1800 * ms},
		// Two windows later only the current window counts: 6·0 + 0.
		{at: 4000 * ms, n: 0, allowed: true, remaining: 10, retry: 0, reset: 0},
	})
}

func TestSlidingWindowSetters(t *testing.T) {
	l := must(NewSlidingWindow(WindowParams{Limit: 10, Window: time.Second}))
	l.AllowAt(t0, 6)
	must(0, l.SetLimit(5))
	runSteps(t, l, []step{{at: 500 * ms, n: 1, allowed: false, remaining: 0, retry: -1, reset: -1}})
	must(0, l.SetLimit(20))
	runSteps(t, l, []step{{at: 500 * ms, n: 14, allowed: true, remaining: 0, retry: 0, reset: 1500 * ms}})
	if err := l.SetWindow(0); err == nil {
		t.Fatal("SetWindow(0) accepted")
	}
}
