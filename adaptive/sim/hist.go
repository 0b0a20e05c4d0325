package sim

import (
	"math"
	"math/bits"
	"time"
)

// histogram counts latencies in log-linear buckets (64 per power of two, so a
// quantile is within about 1.6 % of the true value), in microseconds.
type histogram struct {
	counts []uint32
	n      int
	sum    float64 // nanoseconds
	min    int64   // nanoseconds
	lo, hi int     // range of touched buckets, for a cheap reset
}

const (
	histSub     = 64 // sub-buckets per power of two
	histSubBits = 6
	histBuckets = (64-histSubBits)*histSub + histSub
)

func newHistogram() *histogram {
	return &histogram{counts: make([]uint32, histBuckets), lo: histBuckets}
}

func bucketOf(us uint64) int {
	if us < histSub {
		return int(us)
	}
	e := bits.Len64(us) - histSubBits - 1 // us >> e is in [histSub, 2·histSub)
	return (e+1)*histSub + int(us>>uint(e)) - histSub
}

// bucketMid returns the middle of bucket i in microseconds.
func bucketMid(i int) float64 {
	if i < histSub {
		return float64(i)
	}
	e := i/histSub - 1
	m := i%histSub + histSub
	return (float64(m) + 0.5) * math.Ldexp(1, e)
}

func (h *histogram) add(ns int64) {
	if ns < 0 {
		ns = 0
	}
	b := bucketOf(uint64(ns / 1000))
	h.counts[b]++
	h.lo, h.hi = min(h.lo, b), max(h.hi, b)
	if h.n == 0 || ns < h.min {
		h.min = ns
	}
	h.n++
	h.sum += float64(ns)
}

// quantile returns the q-quantile (0 < q ≤ 1), 0 when empty.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(h.n)))
	seen := 0
	for i := h.lo; i <= h.hi; i++ {
		seen += int(h.counts[i])
		if seen >= rank {
			return time.Duration(bucketMid(i) * 1000)
		}
	}
	return time.Duration(bucketMid(h.hi) * 1000)
}

// mean returns the mean, 0 when empty.
func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

func (h *histogram) reset() {
	if h.n > 0 {
		clear(h.counts[h.lo : h.hi+1])
	}
	h.n, h.sum, h.min, h.lo, h.hi = 0, 0, 0, histBuckets, 0
}
