package probe

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// latencies returns n lognormal durations around 5 ms (σ = 0.8), the shape
// of a real service's latency, so benchmarks spread over many buckets.
func latencies(seed uint64, n int) []time.Duration {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(5e6 * math.Exp(0.8*r.NormFloat64()))
	}
	return out
}

func newBenchRecorder(b *testing.B) *Recorder {
	r, err := NewRecorder(RecorderParams{})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkRecord is the gate's per-request cost, one goroutine.
func BenchmarkRecord(b *testing.B) {
	r := newBenchRecorder(b)
	ds := latencies(1, 1024)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Record(ds[i&1023])
		i++
	}
}

// BenchmarkRecordParallel is the same from GOMAXPROCS goroutines at once.
func BenchmarkRecordParallel(b *testing.B) {
	r := newBenchRecorder(b)
	b.ReportAllocs()
	var seed atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		ds := latencies(seed.Add(1), 1024)
		i := 0
		for pb.Next() {
			r.Record(ds[i&1023])
			i++
		}
	})
}

// fullRecorder returns a recorder whose whole window (20 sub-windows) holds
// lognormal samples spread over some hundred buckets, and the time of its
// last snapshot.
func fullRecorder(b *testing.B, ds []time.Duration) (*Recorder, time.Time) {
	r := newBenchRecorder(b)
	now := time.Unix(0, 0)
	for range 40 {
		for _, d := range ds {
			r.Record(d)
		}
		now = now.Add(250 * time.Millisecond)
		r.Snapshot(now)
	}
	return r, now
}

// BenchmarkSnapshot is the control loop's tick on a full window: rotate one
// sub-window out, drain the stripes that hold a tick's worth of fresh
// samples, and compute count, extremes, mean and the five fixed quantiles.
// Recording the fresh samples is not timed.
func BenchmarkSnapshot(b *testing.B) {
	ds := latencies(2, 2000)
	r, now := fullRecorder(b, ds)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for _, d := range ds {
			r.Record(d)
		}
		now = now.Add(250 * time.Millisecond)
		b.StartTimer()
		r.Snapshot(now)
	}
}

// BenchmarkQuantile is one extra quantile read of a full window.
func BenchmarkQuantile(b *testing.B) {
	r, _ := fullRecorder(b, latencies(2, 2000))
	b.ReportAllocs()
	for b.Loop() {
		r.Quantile(0.995)
	}
}
