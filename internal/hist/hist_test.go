package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestBucketsTileTheRange checks that the buckets cover [0, MaxTracked]
// without gap or overlap, in order.
func TestBucketsTileTheRange(t *testing.T) {
	var next uint64
	for i := range NumBuckets {
		lo, w := Low(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, next)
		}
		if got := Of(lo); got != i {
			t.Fatalf("Of(%d) = %d, want %d (its lower bound)", lo, got, i)
		}
		if got := Of(lo + w - 1); got != i {
			t.Fatalf("Of(%d) = %d, want %d (its upper bound)", lo+w-1, got, i)
		}
		next = lo + w
	}
	if next != MaxTracked+1 {
		t.Fatalf("buckets end at %d, want %d", next, uint64(MaxTracked+1))
	}
	if got := Of(math.MaxUint64); got != NumBuckets-1 {
		t.Fatalf("Of(MaxUint64) = %d, want the last bucket %d", got, NumBuckets-1)
	}
}

// TestBucketRelativeError checks the promise the quantiles rest on: every
// value from 1 µs to 60 s is reported within 1/128 (< 1 %) of itself. It
// tries both edges of every bucket in the range and random values between.
func TestBucketRelativeError(t *testing.T) {
	const lo, hi = 1_000, 60_000_000_000 // 1 µs, 60 s in ns
	const bound = 1.0 / 128
	check := func(v uint64) {
		t.Helper()
		got := Value(Of(v))
		if e := math.Abs(float64(got)-float64(v)) / float64(v); e > bound {
			t.Fatalf("value %d reported as %d: relative error %.5f > %.5f", v, got, e, bound)
		}
	}
	for i := Of(lo); i <= Of(hi); i++ {
		l, w := Low(i)
		check(max(l, lo))
		check(l + w - 1)
	}
	r := rand.New(rand.NewPCG(7, 7))
	for range 200_000 {
		check(uint64(math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))))
	}
	// Below 128 ns every value has its own bucket.
	for v := range uint64(exactBelow) {
		if got := Value(Of(v)); got != v {
			t.Fatalf("value %d reported as %d, want exact", v, got)
		}
	}
}

// TestHistogramQuantiles checks the one-goroutine Histogram against the
// exact nearest rank of the samples it was given: within 1/128, the extremes
// exact, and Reset empties it for the next interval.
func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	r := rand.New(rand.NewPCG(3, 3))
	for round := range 3 {
		n := 1 + r.IntN(5000)
		vs := make([]time.Duration, n)
		for i := range vs {
			vs[i] = time.Duration(math.Exp(math.Log(1e3) + r.Float64()*(math.Log(1e10)-math.Log(1e3))))
			h.Add(vs[i])
		}
		slices.Sort(vs)
		qs := []float64{0, 0.5, 0.9, 0.99, 0.999, 1}
		out := make([]time.Duration, len(qs))
		h.Quantiles(qs, out)
		for i, q := range qs {
			want := vs[Rank(q, uint64(n))-1]
			if e := math.Abs(float64(out[i]-want)) / float64(want); e > 1.0/128 {
				t.Errorf("round %d: q%v = %v, exact %v: relative error %.4f", round, q, out[i], want, e)
			}
		}
		if out[0] != vs[0] || out[len(out)-1] != vs[n-1] || h.Min() != vs[0] || h.Max() != vs[n-1] {
			t.Errorf("round %d: extremes %v %v (min %v max %v), want exact %v %v", round, out[0], out[len(out)-1], h.Min(), h.Max(), vs[0], vs[n-1])
		}
		if h.Count() != uint64(n) {
			t.Errorf("round %d: count %d, want %d", round, h.Count(), n)
		}
		h.Reset()
		if h.Count() != 0 || h.Quantile(0.5) != 0 || h.Mean() != 0 || h.counts != (Counts{}) {
			t.Fatalf("round %d: Reset left count %d, p50 %v, mean %v", round, h.Count(), h.Quantile(0.5), h.Mean())
		}
	}
}
