package probe

import "math/bits"

// The latency histogram is log-linear, the layout HdrHistogram uses (Gil Tene,
// "HdrHistogram: A High Dynamic Range Histogram", hdrhistogram.org): values
// below 2·subCount nanoseconds have a bucket each; above that, every power of
// two [2^e, 2^(e+1)) is cut into subCount buckets of equal width 2^(e-subBits).
//
// A bucket [lo, lo+w) is reported as its midpoint lo + (w-1)/2. Since
// lo ≥ subCount·w, the distance from any value in the bucket to the midpoint is
// at most w/2 ≤ lo/(2·subCount), so the relative error of a reported value is
// at most 1/(2·subCount) = 1/128 ≈ 0.78 % with subBits = 6. Five sub-bits
// would give 1.56 %, over the 1 % the control loop is promised.
const (
	subBits  = 6
	subCount = 1 << subBits // buckets per power of two
	// exactBelow is the first value that shares its bucket with another one.
	exactBelow = 2 * subCount
	// topExp is the highest power of two tracked: [2^35, 2^36) ns is
	// [34.4 s, 68.7 s). Longer durations are counted in the last bucket; the
	// exact maximum is kept apart, and quantiles are clamped to it.
	topExp = 35
	// MaxTracked is the longest duration, in nanoseconds, that the histogram
	// resolves within 1/128; longer ones are counted as MaxTracked.
	MaxTracked = 1<<(topExp+1) - 1
	numBuckets = (topExp-subBits)*subCount + exactBelow // 1984
)

// bucketOf returns the bucket of v nanoseconds.
func bucketOf(v uint64) int {
	if v < exactBelow {
		return int(v)
	}
	if v > MaxTracked {
		v = MaxTracked
	}
	e := bits.Len64(v) - 1 // ≥ subBits+1
	shift := e - subBits
	return shift*subCount + int(v>>uint(shift)) // v>>shift is in [subCount, 2·subCount)
}

// bucketLow returns the smallest value in bucket i and the bucket's width.
func bucketLow(i int) (lo, width uint64) {
	if i < exactBelow {
		return uint64(i), 1
	}
	shift := uint(i/subCount - 1)
	sub := uint64(i%subCount + subCount)
	return sub << shift, 1 << shift
}

// bucketValue returns the value reported for bucket i: its midpoint.
func bucketValue(i int) uint64 {
	lo, w := bucketLow(i)
	return lo + (w-1)/2
}
