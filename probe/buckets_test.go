package probe

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBucketsTileTheRange checks that the buckets cover [0, MaxTracked]
// without gap or overlap, in order.
func TestBucketsTileTheRange(t *testing.T) {
	var next uint64
	for i := range numBuckets {
		lo, w := bucketLow(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, next)
		}
		if got := bucketOf(lo); got != i {
			t.Fatalf("bucketOf(%d) = %d, want %d (its lower bound)", lo, got, i)
		}
		if got := bucketOf(lo + w - 1); got != i {
			t.Fatalf("bucketOf(%d) = %d, want %d (its upper bound)", lo+w-1, got, i)
		}
		next = lo + w
	}
	if next != MaxTracked+1 {
		t.Fatalf("buckets end at %d, want %d", next, uint64(MaxTracked+1))
	}
	if got := bucketOf(math.MaxUint64); got != numBuckets-1 {
		t.Fatalf("bucketOf(MaxUint64) = %d, want the last bucket %d", got, numBuckets-1)
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
		got := bucketValue(bucketOf(v))
		if e := math.Abs(float64(got)-float64(v)) / float64(v); e > bound {
			t.Fatalf("value %d reported as %d: relative error %.5f > %.5f", v, got, e, bound)
		}
	}
	for i := bucketOf(lo); i <= bucketOf(hi); i++ {
		l, w := bucketLow(i)
		check(max(l, lo))
		check(l + w - 1)
	}
	r := rand.New(rand.NewPCG(7, 7))
	for range 200_000 {
		check(uint64(math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))))
	}
	// Below 128 ns every value has its own bucket.
	for v := range uint64(exactBelow) {
		if got := bucketValue(bucketOf(v)); got != v {
			t.Fatalf("value %d reported as %d, want exact", v, got)
		}
	}
}
