package limits

import (
	"testing"
	"time"
)

func TestFixedWindowSteps(t *testing.T) {
	l := must(NewFixedWindow(WindowParams{Limit: 3, Window: time.Second}))
	runSteps(t, l, []step{
		{at: 0, n: 1, allowed: true, remaining: 2, retry: 0, reset: time.Second},
		{at: 500 * ms, n: 2, allowed: true, remaining: 0, retry: 0, reset: 500 * ms},
		{at: 999 * ms, n: 1, allowed: false, remaining: 0, retry: ms, reset: ms},
		{at: 1000 * ms, n: 3, allowed: true, remaining: 0, retry: 0, reset: time.Second},
		{at: 1500 * ms, n: 1, allowed: false, remaining: 0, retry: 500 * ms, reset: 500 * ms},
		{at: 1500 * ms, n: 4, allowed: false, remaining: 0, retry: InfDuration, reset: 500 * ms},
		{at: 5000 * ms, n: 0, allowed: true, remaining: 3, retry: 0, reset: 0},
	})
}

// Windows are aligned to the Unix epoch, not to the first request.
func TestFixedWindowAlignment(t *testing.T) {
	l := must(NewFixedWindow(WindowParams{Limit: 1, Window: time.Minute}))
	at := t0.Add(59 * time.Second) // t0 is a whole minute
	if r := l.AllowAt(at, 1); !r.Allowed || r.ResetAfter != time.Second {
		t.Fatalf("first request at :59: %+v, want reset after 1s (window end at the minute)", r)
	}
}

func TestFixedWindowSetters(t *testing.T) {
	l := must(NewFixedWindow(WindowParams{Limit: 5, Window: time.Second}))
	runSteps(t, l, []step{{at: 0, n: 4, allowed: true, remaining: 1, retry: 0, reset: time.Second}})
	if err := l.SetLimit(0); err == nil || err.Error() != "limits: window limit must be positive, got 0" {
		t.Fatalf("SetLimit(0) = %v", err)
	}
	if l.Params().Limit != 5 {
		t.Fatal("a refused SetLimit changed the limit")
	}
	must(0, l.SetLimit(3))
	// The count (4) carries over: over the new limit, refused to the window end.
	runSteps(t, l, []step{{at: 100 * ms, n: 1, allowed: false, remaining: 0, retry: 900 * ms, reset: 900 * ms}})
	must(0, l.SetWindow(10*time.Second))
	runSteps(t, l, []step{
		{at: 1100 * ms, n: 1, allowed: false, remaining: 0, retry: 8900 * ms, reset: 8900 * ms},
		{at: 10 * time.Second, n: 3, allowed: true, remaining: 0, retry: 0, reset: 10 * time.Second},
	})
	if p := l.Policy(); p != (Policy{Quota: 3, Window: 10 * time.Second}) {
		t.Fatalf("policy %+v", p)
	}
}
