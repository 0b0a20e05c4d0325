// Package hist is sluice's one latency histogram: the log-linear bucket
// layout, the value a bucket reports, and the nearest-rank quantile rule.
// probe's Recorder (concurrent stripes and a sliding window over them) and
// adaptive/sim's model of the probe (one interval, one goroutine) both count
// into this layout and read quantiles through Quantiles, so the simulator's
// laws see the figures the daemon's would. It imports nothing of sluice's.
//
// The layout is the one HdrHistogram uses (Gil Tene, "HdrHistogram: A High
// Dynamic Range Histogram", hdrhistogram.org): values below 2·SubCount
// nanoseconds have a bucket each; above that, every power of two
// [2^e, 2^(e+1)) is cut into SubCount buckets of equal width 2^(e-SubBits).
//
// A bucket [lo, lo+w) is reported as its midpoint lo + (w-1)/2. Since
// lo ≥ SubCount·w, the distance from any value in the bucket to the midpoint
// is at most w/2 ≤ lo/(2·SubCount), so the relative error of a reported value
// is at most 1/(2·SubCount) = 1/128 ≈ 0.78 % with SubBits = 6. Five sub-bits
// would give 1.56 %, over the 1 % the control loop is promised.
package hist

import (
	"math"
	"math/bits"
	"time"
)

const (
	// SubBits is log2 of SubCount.
	SubBits = 6
	// SubCount is the number of buckets per power of two.
	SubCount = 1 << SubBits
	// exactBelow is the first value that shares its bucket with another one.
	exactBelow = 2 * SubCount
	// topExp is the highest power of two tracked: [2^35, 2^36) ns is
	// [34.4 s, 68.7 s). Longer durations are counted in the last bucket; the
	// exact maximum is kept apart, and quantiles are clamped to it.
	topExp = 35
	// MaxTracked is the longest duration, in nanoseconds, that the histogram
	// resolves within 1/128; longer ones are counted as MaxTracked.
	MaxTracked = 1<<(topExp+1) - 1
	// NumBuckets is the number of buckets: 1984.
	NumBuckets = (topExp-SubBits)*SubCount + exactBelow
)

// Counts is one count per bucket.
type Counts = [NumBuckets]uint64

// Of returns the bucket of v nanoseconds.
func Of(v uint64) int {
	if v < exactBelow {
		return int(v)
	}
	if v > MaxTracked {
		v = MaxTracked
	}
	e := bits.Len64(v) - 1 // ≥ SubBits+1
	shift := e - SubBits
	return shift*SubCount + int(v>>uint(shift)) // v>>shift is in [SubCount, 2·SubCount)
}

// Low returns the smallest value in bucket i, in nanoseconds, and the
// bucket's width.
func Low(i int) (lo, width uint64) {
	if i < exactBelow {
		return uint64(i), 1
	}
	shift := uint(i/SubCount - 1)
	sub := uint64(i%SubCount + SubCount)
	return sub << shift, 1 << shift
}

// Value returns the value reported for bucket i, in nanoseconds: its
// midpoint.
func Value(i int) uint64 {
	lo, w := Low(i)
	return lo + (w-1)/2
}

// Rank returns the 1-based nearest rank of the q-quantile among n > 0
// samples; q outside [0, 1] is clamped.
func Rank(q float64, n uint64) uint64 {
	r := uint64(math.Ceil(min(max(q, 0), 1) * float64(n)))
	return min(max(r, 1), n)
}

// Quantiles sets out[i] to the qs[i]-quantile of the n samples counted in c
// from bucket first on (every bucket below first is empty), whose exact
// extremes are lo and hi, by nearest rank: the bucket holding the
// ceil(q·n)-th smallest sample, reported as its Value clamped to [lo, hi];
// the first and the last rank are lo and hi themselves, so a single sample is
// reported exactly and a sample past MaxTracked keeps its value as the
// maximum. qs must be ascending; out must be as long as qs. With n = 0 every
// out[i] is 0. It does not allocate.
func Quantiles(c *Counts, first int, n uint64, lo, hi time.Duration, qs []float64, out []time.Duration) {
	if n == 0 {
		clear(out)
		return
	}
	if len(qs) == 0 {
		return
	}
	j, r := 0, Rank(qs[0], n)
	var cum uint64
	for b := max(first, 0); b < NumBuckets && j < len(qs); b++ {
		cum += c[b]
		for cum >= r {
			switch r {
			case 1:
				out[j] = lo // exact
			case n:
				out[j] = hi // exact, even past MaxTracked
			default:
				out[j] = min(max(time.Duration(Value(b)), lo), hi)
			}
			if j++; j == len(qs) {
				break
			}
			r = Rank(qs[j], n)
		}
	}
	for ; j < len(qs); j++ { // unreachable while c and n agree
		out[j] = hi
	}
}

// Histogram counts durations on one goroutine: a probe for one stretch of
// time (adaptive/sim's control interval), with exact count, sum and extremes
// beside the buckets. The zero value is empty and ready; it is 16 KiB, and
// Reset clears only the buckets touched since the last one. Not safe for
// concurrent use.
type Histogram struct {
	counts   Counts
	n, sum   uint64
	min, max uint64
	lo, hi   int // range of touched buckets when n > 0
}

// Add counts a duration; a negative one counts as 0.
func (h *Histogram) Add(d time.Duration) {
	v := uint64(max(d, 0))
	b := Of(v)
	h.counts[b]++
	if h.n == 0 {
		h.min, h.max, h.lo, h.hi = v, v, b, b
	} else {
		h.min, h.max = min(h.min, v), max(h.max, v)
		h.lo, h.hi = min(h.lo, b), max(h.hi, b)
	}
	h.n++
	h.sum += v
}

// Count returns the number of durations added.
func (h *Histogram) Count() uint64 { return h.n }

// Min returns the shortest duration added, 0 when empty.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max returns the longest duration added, 0 when empty.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the mean duration, 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Quantiles sets out[i] to the qs[i]-quantile (see the package's Quantiles).
func (h *Histogram) Quantiles(qs []float64, out []time.Duration) {
	Quantiles(&h.counts, h.lo, h.n, h.Min(), h.Max(), qs, out)
}

// Quantile returns the q-quantile, 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	var out [1]time.Duration
	h.Quantiles([]float64{q}, out[:])
	return out[0]
}

// Reset empties the histogram.
func (h *Histogram) Reset() {
	if h.n > 0 {
		clear(h.counts[h.lo : h.hi+1])
	}
	h.n, h.sum, h.min, h.max, h.lo, h.hi = 0, 0, 0, 0, 0, 0
}
