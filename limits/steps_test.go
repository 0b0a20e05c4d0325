package limits

import (
	"testing"
	"time"
)

// step is one request at a fixed instant, t0 + at, and what it must return
// (in the manner of x/time/rate's tests). A -1 skips a check.
type step struct {
	at        time.Duration
	n         int64
	allowed   bool
	remaining int64
	retry     time.Duration
	reset     time.Duration
	delay     time.Duration
}

const ms = time.Millisecond

func runSteps(t *testing.T, l Limiter, steps []step) {
	t.Helper()
	for i, s := range steps {
		r := l.AllowAt(t0.Add(s.at), s.n)
		checkResult(t, "step", r)
		bad := r.Allowed != s.allowed ||
			(s.remaining >= 0 && r.Remaining != s.remaining) ||
			(s.retry >= 0 && r.RetryAfter != s.retry) ||
			(s.reset >= 0 && r.ResetAfter != s.reset) ||
			r.Delay != s.delay
		if bad {
			t.Fatalf("step %d: AllowAt(t0+%v, %d) = %+v, want allowed=%v remaining=%d retry=%v reset=%v delay=%v",
				i, s.at, s.n, r, s.allowed, s.remaining, s.retry, s.reset, s.delay)
		}
	}
}
