package limits

import (
	"testing"
	"time"
)

func TestSlidingBucketsSteps(t *testing.T) {
	// 4 units per second in 4 sub-windows of 250 ms.
	l := must(NewSlidingBuckets(SlidingBucketsParams{Limit: 4, Window: time.Second, Buckets: 4}))
	runSteps(t, l, []step{
		{at: 100 * ms, n: 1, allowed: true, remaining: 3, retry: 0, reset: 900 * ms}, // bucket [0,250)
		{at: 300 * ms, n: 2, allowed: true, remaining: 1, retry: 0, reset: 950 * ms}, // bucket [250,500)
		{at: 600 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: 900 * ms}, // bucket [500,750)
		{at: 900 * ms, n: 1, allowed: false, remaining: 0, retry: 100 * ms, reset: 600 * ms},
		{at: 900 * ms, n: 2, allowed: false, remaining: 0, retry: 350 * ms, reset: 600 * ms},
		// At 1000 ms bucket [0,250) has left the window.
		{at: 1000 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: time.Second},
		{at: 1250 * ms, n: 2, allowed: true, remaining: 0, retry: 0, reset: time.Second},
		{at: 1250 * ms, n: 5, allowed: false, remaining: 0, retry: InfDuration, reset: time.Second},
		// Earlier instant: counted in the current sub-window.
		{at: 1200 * ms, n: 1, allowed: false, remaining: 0, retry: 300 * ms, reset: 1050 * ms},
		{at: 2250 * ms, n: 0, allowed: true, remaining: 4, retry: 0, reset: 0},
	})
}

func TestSlidingBucketsSetters(t *testing.T) {
	l := must(NewSlidingBuckets(SlidingBucketsParams{Limit: 10, Window: time.Second}))
	if got := l.Params().Buckets; got != DefaultBuckets {
		t.Fatalf("default buckets %d", got)
	}
	l.AllowAt(t0.Add(50*ms), 3)
	l.AllowAt(t0.Add(550*ms), 3)
	must(0, l.SetBuckets(2)) // carried over: 6 in the current sub-window
	runSteps(t, l, []step{
		{at: 600 * ms, n: 5, allowed: false, remaining: 4, retry: 900 * ms, reset: 900 * ms},
		{at: 1500 * ms, n: 5, allowed: true, remaining: 5, retry: 0, reset: time.Second},
	})
	must(0, l.SetLimit(1))
	runSteps(t, l, []step{{at: 1600 * ms, n: 1, allowed: false, remaining: 0, retry: 900 * ms, reset: 900 * ms}})
	if err := l.SetBuckets(5000); err == nil {
		t.Fatal("SetBuckets(5000) accepted")
	}
	if err := l.SetWindow(1); err == nil { // 2 buckets of 0 ns
		t.Fatal("a window shorter than 1 ns per bucket accepted")
	}
}
