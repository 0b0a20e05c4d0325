package limits

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// FuzzRateParams feeds arbitrary parameters (as a configuration file or the
// admin API would) to every rate algorithm's constructor and setters, then
// arbitrary instants and costs. Nothing may panic; an invalid parameter is a
// "limits: " error that changes nothing; every Result keeps its invariants.
func FuzzRateParams(f *testing.F) {
	f.Add(uint8(0), 10.0, int64(10), int64(time.Second), 10, int64(0), 0.0, []byte{1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(uint8(4), 1e9, int64(1), int64(1), 0, int64(time.Second), 3.0, []byte{255, 255, 255, 255, 255, 255, 255, 127, 5})
	f.Add(uint8(4), 0.001, int64(1<<40), int64(-1), -3, int64(-1), 0.5, []byte{})
	f.Add(uint8(7), 3.3, int64(0), int64(time.Hour), 4097, int64(time.Minute), 1e7, []byte{0, 0, 0, 0, 0, 0, 0, 128, 9, 9})
	f.Add(uint8(3), 1e-12, int64(-5), int64(1<<62), 1, int64(1<<62), 1.0, []byte{7, 7, 7, 7, 7, 7, 7, 7, 200})
	f.Fuzz(func(t *testing.T, kind uint8, rate float64, burst, window int64, buckets int, dur int64, cold float64, steps []byte) {
		var l Limiter
		var err error
		var set func() error
		var params func() any
		switch kind % 8 {
		case 0:
			var w *FixedWindow
			w, err = NewFixedWindow(WindowParams{burst, time.Duration(window)})
			if err == nil {
				l, set, params = w, func() error { return w.SetWindow(time.Duration(dur)) }, func() any { return w.Params() }
			}
		case 1:
			var w *SlidingLog
			w, err = NewSlidingLog(WindowParams{burst, time.Duration(window)})
			if err == nil {
				l, set, params = w, func() error { return w.SetLimit(int64(buckets)) }, func() any { return w.Params() }
			}
		case 2:
			var w *SlidingWindow
			w, err = NewSlidingWindow(WindowParams{burst, time.Duration(window)})
			if err == nil {
				l, set, params = w, func() error { return w.SetLimit(dur) }, func() any { return w.Params() }
			}
		case 3:
			var w *SlidingBuckets
			w, err = NewSlidingBuckets(SlidingBucketsParams{burst, time.Duration(window), buckets})
			if err == nil {
				l, set, params = w, func() error { return w.SetBuckets(int(dur)) }, func() any { return w.Params() }
			}
		case 4, 5:
			var b *TokenBucket
			p := TokenBucketParams{Rate: rate, Burst: burst, ColdFactor: cold}
			if kind%8 == 5 {
				p.Warmup = time.Duration(dur)
			}
			b, err = NewTokenBucket(p)
			if err == nil {
				l, set, params = b, func() error { return b.SetRate(cold) }, func() any { return b.Params() }
			}
		case 6:
			var b *LeakyBucket
			b, err = NewLeakyBucket(LeakyBucketParams{rate, burst})
			if err == nil {
				l, set, params = b, func() error { return b.SetCapacity(dur) }, func() any { return b.Params() }
			}
		case 7:
			var q *LeakyQueue
			q, err = NewLeakyQueue(LeakyQueueParams{rate, time.Duration(dur)})
			if err == nil {
				l, set, params = q, func() error { return q.SetRate(cold) }, func() any { return q.Params() }
			}
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "limits: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		now := t0
		for i := 0; i+9 <= len(steps); i += 9 {
			now = now.Add(time.Duration(int64(binary.LittleEndian.Uint64(steps[i:]))))
			n := int64(int8(steps[i+8]))
			r := l.AllowAt(now, n)
			checkFuzzResult(t, r, n)
			if i == 9 {
				before := params()
				if err := set(); err != nil {
					if !strings.HasPrefix(err.Error(), "limits: ") {
						t.Fatalf("setter error without the package prefix: %v", err)
					}
					if params() != before {
						t.Fatalf("a refused setter changed the parameters: %+v -> %+v", before, params())
					}
				}
			}
		}
		k, err := NewKeyed(l, KeyedParams{MaxKeys: 4})
		if err != nil {
			t.Fatal(err)
		}
		for i, key := range []string{"a", "b", "", "a"} {
			checkFuzzResult(t, k.AllowAt(key, now.Add(time.Duration(i)), int64(i)), int64(i))
		}
	})
}

func checkFuzzResult(t *testing.T, r Result, n int64) {
	t.Helper()
	switch {
	case r.Remaining < 0 || r.Remaining > r.Limit || r.Limit < 1:
		t.Fatalf("Remaining %d outside [0, Limit %d]", r.Remaining, r.Limit)
	case r.Allowed && r.RetryAfter != 0, !r.Allowed && r.RetryAfter <= 0:
		t.Fatalf("Allowed %v with RetryAfter %v", r.Allowed, r.RetryAfter)
	case r.ResetAfter < 0 || r.Delay < 0:
		t.Fatalf("negative durations: %+v", r)
	case n <= 0 && !r.Allowed:
		t.Fatalf("probe refused: %+v", r)
	}
}

// FuzzConcurrencyParams: arbitrary concurrency settings never panic and are
// either refused with a "limits: " error or applied.
func FuzzConcurrencyParams(f *testing.F) {
	f.Add(1, 0, int64(0), int32(0), 5)
	f.Add(0, -1, int64(-1), int32(9), -2)
	f.Add(MaxConcurrency, MaxConcurrency, int64(time.Hour), int32(1), MaxConcurrency+1)
	f.Fuzz(func(t *testing.T, limit, maxQueue int, maxWait int64, order int32, newLimit int) {
		c, err := NewConcurrency(ConcurrencyParams{limit, maxQueue, time.Duration(maxWait), Order(order)})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "limits: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		if err := c.SetLimit(newLimit); err != nil {
			if c.Limit() != limit {
				t.Fatalf("refused SetLimit changed the limit to %d", c.Limit())
			}
		} else if c.Limit() != newLimit {
			t.Fatalf("SetLimit(%d) left %d", newLimit, c.Limit())
		}
		if c.TryAcquire() {
			if c.InFlight() != 1 {
				t.Fatalf("in flight %d", c.InFlight())
			}
			c.Release()
		}
	})
}
