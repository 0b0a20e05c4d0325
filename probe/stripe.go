package probe

import (
	"math"
	"sync/atomic"

	"github.com/sluicehq/sluice/internal/hist"
)

// A stripe is one shard of a Recorder's counters. The hot path writes only the
// stripe of the P it runs on, so goroutines on different CPUs do not write the
// same cache line; the control loop drains all stripes when it rotates.
//
// Every field is only ever added to by recorders and swapped to its empty
// value by the drain, so a sample recorded during a drain is never lost: it
// lands either in this drain or in the next one.
type stripe struct {
	_        [64]byte // keep the head off the previous stripe's last line
	sum      atomic.Uint64
	min      atomic.Uint64 // math.MaxUint64 when empty
	max      atomic.Uint64
	drops    atomic.Uint64
	ignored  atomic.Uint64
	inflight atomic.Int64 // highest in-flight count observed
	// dirty has bit g set when a count in bucket group g (buckets
	// g·hist.SubCount … g·hist.SubCount+hist.SubCount-1) may be non-zero, so that a drain
	// reads the few groups a service's latencies fall in, not all of them.
	dirty  atomic.Uint32
	_      [64 - 7*8]byte
	counts [hist.NumBuckets]atomic.Uint64
}

// groups is the number of bucket groups a dirty bitmap covers.
const groups = hist.NumBuckets / hist.SubCount

var _ [32 - groups]struct{} // the bitmap is a uint32: no more than 32 groups

// count adds one to bucket b and marks its group dirty. The count is added
// before the mark is read, and a drain swaps the marks before it reads the
// counts, so a count is always seen by this drain or the next: if the mark
// read here predates the drain's swap, the drain reads this count; if it
// follows it, the mark stays set for the next drain.
func (s *stripe) count(b int) {
	s.counts[b].Add(1)
	if bit := uint32(1) << uint(b/hist.SubCount); s.dirty.Load()&bit == 0 {
		s.dirty.Or(bit)
	}
}

func (s *stripe) init() { s.min.Store(math.MaxUint64) }

// lowerMin lowers s.min to v if v is smaller.
func (s *stripe) lowerMin(v uint64) {
	for {
		old := s.min.Load()
		if v >= old || s.min.CompareAndSwap(old, v) {
			return
		}
	}
}

// raiseMax raises s.max to v if v is larger.
func (s *stripe) raiseMax(v uint64) {
	for {
		old := s.max.Load()
		if v <= old || s.max.CompareAndSwap(old, v) {
			return
		}
	}
}

// raiseInflight raises s.inflight to n if n is larger.
func (s *stripe) raiseInflight(n int64) {
	for {
		old := s.inflight.Load()
		if n <= old || s.inflight.CompareAndSwap(old, n) {
			return
		}
	}
}
