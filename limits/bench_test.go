package limits

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// Benchmarks. Run with:
//
//	go test -run '^$' -bench . -benchmem -count 3 ./limits/
//
// Rate limiters are configured for a million units per second and time
// advances 1 µs per request, so every request does the full work (refill,
// admit, Result).

func benchCases() []algoCase {
	w := WindowParams{Limit: 1000, Window: time.Millisecond}
	return []algoCase{
		{name: "FixedWindow", new: func(testing.TB) Limiter { return must(NewFixedWindow(w)) }},
		{name: "SlidingLog", new: func(testing.TB) Limiter { return must(NewSlidingLog(w)) }},
		{name: "SlidingWindow", new: func(testing.TB) Limiter { return must(NewSlidingWindow(w)) }},
		{name: "SlidingBuckets", new: func(testing.TB) Limiter {
			return must(NewSlidingBuckets(SlidingBucketsParams{Limit: 1000, Window: time.Millisecond}))
		}},
		{name: "TokenBucket", new: func(testing.TB) Limiter {
			return must(NewTokenBucket(TokenBucketParams{Rate: 1e6, Burst: 1000}))
		}},
		{name: "TokenBucketWarmup", new: func(testing.TB) Limiter {
			return must(NewTokenBucket(TokenBucketParams{Rate: 1e6, Burst: 1000, Warmup: time.Second}))
		}},
		{name: "LeakyBucket", new: func(testing.TB) Limiter {
			return must(NewLeakyBucket(LeakyBucketParams{Rate: 1e6, Capacity: 1000}))
		}},
		{name: "LeakyQueue", new: func(testing.TB) Limiter {
			return must(NewLeakyQueue(LeakyQueueParams{Rate: 1e6, MaxWait: time.Millisecond}))
		}},
	}
}

func BenchmarkAllowAt(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			l := c.new(b)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				l.AllowAt(t0.Add(time.Duration(i)*time.Microsecond), 1)
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			l := c.new(b)
			b.ReportAllocs()
			runParallelAt(b, func(now time.Time) { l.AllowAt(now, 1) })
		})
	}
}

// BenchmarkTokenBucketVsXRate does the same work with sluice's TokenBucket
// and golang.org/x/time/rate at the same instants: rate 1e6/s, burst 1000,
// one request per µs (each request refills and admits).
func BenchmarkTokenBucketVsXRate(b *testing.B) {
	const r, burst = 1e6, 1000
	b.Run("sluice", func(b *testing.B) {
		l := must(NewTokenBucket(TokenBucketParams{Rate: r, Burst: burst}))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			l.AllowAt(t0.Add(time.Duration(i)*time.Microsecond), 1)
		}
	})
	b.Run("xrate", func(b *testing.B) {
		l := rate.NewLimiter(r, burst)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			l.AllowN(t0.Add(time.Duration(i)*time.Microsecond), 1)
		}
	})
	b.Run("sluice/parallel", func(b *testing.B) {
		l := must(NewTokenBucket(TokenBucketParams{Rate: r, Burst: burst}))
		b.ReportAllocs()
		runParallelAt(b, func(now time.Time) { l.AllowAt(now, 1) })
	})
	b.Run("xrate/parallel", func(b *testing.B) {
		l := rate.NewLimiter(r, burst)
		b.ReportAllocs()
		runParallelAt(b, func(now time.Time) { l.AllowN(now, 1) })
	})
}

// runParallelAt calls allow from RunParallel's goroutines, each on a clock
// of its own: goroutine g of P makes its i-th request at t0 + (i·P + g) µs,
// so together they advance about 1 µs per request, as the single-threaded
// arms do, without sharing a counter. (A shared atomic clock is a contended
// cache line of its own, timed in every arm alike, and it hid the
// difference between the limiters' own synchronisation.)
func runParallelAt(b *testing.B, allow func(now time.Time)) {
	p := int64(runtime.GOMAXPROCS(0))
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		g := next.Add(1) - 1
		for i := int64(0); pb.Next(); i++ {
			allow(t0.Add(time.Duration(i*p+g) * time.Microsecond))
		}
	})
}

func BenchmarkConcurrency(b *testing.B) {
	b.Run("TryAcquireRelease", func(b *testing.B) {
		c := must(NewConcurrency(ConcurrencyParams{Limit: 100}))
		b.ReportAllocs()
		for b.Loop() {
			if c.TryAcquire() {
				c.Release()
			}
		}
	})
	b.Run("TryAcquireRelease/parallel", func(b *testing.B) {
		c := must(NewConcurrency(ConcurrencyParams{Limit: 100}))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if c.TryAcquire() {
					c.Release()
				}
			}
		})
	})
	b.Run("AcquireRelease", func(b *testing.B) {
		c := must(NewConcurrency(ConcurrencyParams{Limit: 100, MaxQueue: 100}))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if c.Acquire(ctx, AcquireOptions{}) == nil {
				c.Release()
			}
		}
	})
	// Queued: one slot, every goroutine waits its turn; measures the
	// waiting path (queue, hand-off, pooled waiter and timer).
	b.Run("Queued/parallel", func(b *testing.B) {
		c := must(NewConcurrency(ConcurrencyParams{Limit: 1, MaxQueue: 1 << 20}))
		ctx := context.Background()
		b.ReportAllocs()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := c.Acquire(ctx, AcquireOptions{MaxWait: time.Second}); err == nil {
					c.Release()
				}
			}
		})
	})
}

// keyedBenchCases are slow enough (a minute to recover) that every key
// stays held (not back to fresh) for the whole benchmark.
func keyedBenchCases() []algoCase {
	w := WindowParams{Limit: 100, Window: time.Minute}
	return []algoCase{
		{name: "FixedWindow", new: func(testing.TB) Limiter { return must(NewFixedWindow(w)) }},
		{name: "SlidingLog", new: func(testing.TB) Limiter { return must(NewSlidingLog(w)) }},
		{name: "SlidingWindow", new: func(testing.TB) Limiter { return must(NewSlidingWindow(w)) }},
		{name: "SlidingBuckets", new: func(testing.TB) Limiter {
			return must(NewSlidingBuckets(SlidingBucketsParams{Limit: 100, Window: time.Minute, Buckets: 6}))
		}},
		{name: "TokenBucket", new: func(testing.TB) Limiter {
			return must(NewTokenBucket(TokenBucketParams{Rate: 1, Burst: 100}))
		}},
		{name: "TokenBucketWarmup", new: func(testing.TB) Limiter {
			return must(NewTokenBucket(TokenBucketParams{Rate: 1, Burst: 100, Warmup: time.Minute}))
		}},
		{name: "LeakyBucket", new: func(testing.TB) Limiter {
			return must(NewLeakyBucket(LeakyBucketParams{Rate: 1, Capacity: 100}))
		}},
		{name: "LeakyQueue", new: func(testing.TB) Limiter {
			return must(NewLeakyQueue(LeakyQueueParams{Rate: 1, MaxWait: time.Minute}))
		}},
	}
}

// BenchmarkKeyedIdleKeys holds a million keys (IPv4-like strings, 8–11
// bytes) that made one request each and are now idle (not back to fresh, so
// they must be kept), reports the heap they cost per key (map index, key
// bytes and state included), then times requests for existing keys.
func BenchmarkKeyedIdleKeys(b *testing.B) {
	const n = 1_000_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	}
	for _, c := range keyedBenchCases() {
		if testing.Short() && c.name != "TokenBucket" {
			continue
		}
		var k *Keyed
		before := heapInUse()
		k = must(NewKeyed(c.new(b), KeyedParams{}))
		for i, key := range keys {
			k.AllowAt(key, t0.Add(time.Duration(i)*time.Nanosecond), 1)
		}
		if k.Len() != n {
			b.Fatalf("%s: holds %d keys, want %d", c.name, k.Len(), n)
		}
		perKey := float64(heapInUse()-before) / float64(k.Len())
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				k.AllowAt(keys[i*7919%n], t0.Add(time.Duration(n+i)*time.Nanosecond), 1)
			}
			b.ReportMetric(perKey, "bytes/key")
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			var clock atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(clock.Add(1))
					k.AllowAt(keys[i*7919%n], t0.Add(time.Duration(n+i)*time.Nanosecond), 1)
				}
			})
			b.ReportMetric(perKey, "bytes/key")
		})
		runtime.KeepAlive(k)
		k = nil
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
