package probe

import (
	"math"
	"math/bits"
	"time"

	"github.com/sluicehq/sluice/internal/hist"
)

// pair is one non-empty histogram bucket of a sub-window.
type pair struct {
	bucket uint32
	n      uint64
}

// subWindow holds what was drained while it was the current sub-window.
type subWindow struct {
	pairs    []pair // sorted by bucket, each bucket once
	count    uint64
	sum      uint64
	min      uint64 // math.MaxUint64 when empty
	max      uint64
	drops    uint64
	ignored  uint64
	inflight int64
}

func (s *subWindow) reset() {
	*s = subWindow{pairs: s.pairs[:0], min: math.MaxUint64}
}

// window is the Recorder's control-loop side: a ring of sub-windows that
// slides with the time given to rotate, the running per-bucket totals of the
// ring, and a longer ring of per-sub-window minima for MinRTT. Not safe for
// concurrent use; the Recorder guards it with its mutex.
type window struct {
	sub     time.Duration // length of a sub-window
	subs    []subWindow   // ring indexed by seq mod len
	mins    []uint64      // ring of sub-window minima, indexed by seq mod len
	totals  hist.Counts
	scratch hist.Counts // counts of the drain in progress; zero otherwise
	fresh   []pair      // the drain's pairs, sorted
	spare   []pair      // merge buffer, swapped with a sub-window's pairs

	epoch   time.Time // start of sub-window 0
	now     time.Time // latest time given to rotate
	seq     int64     // index of the current sub-window since epoch
	started bool
	last    Snapshot
}

func (w *window) init(p RecorderParams) {
	n := p.SubWindows
	w.sub = p.Window / time.Duration(n)
	w.subs = make([]subWindow, n)
	for i := range w.subs {
		w.subs[i].reset()
	}
	slots := int((p.MinRTTWindow + w.sub - 1) / w.sub)
	w.mins = make([]uint64, max(slots, n))
	for i := range w.mins {
		w.mins[i] = math.MaxUint64
	}
	w.fresh = make([]pair, 0, 64)
	w.epoch = p.Start
}

// rotate advances the ring to the sub-window that contains now, emptying the
// sub-windows that fall out of the window on the way.
func (w *window) rotate(now time.Time) {
	if !w.started {
		w.started = true
		if w.epoch.IsZero() {
			w.epoch = now
		}
		w.now = now
	}
	if now.Before(w.now) {
		now = w.now
	}
	w.now = now
	var k int64
	if d := now.Sub(w.epoch); d > 0 {
		k = int64(d / w.sub)
	}
	steps := k - w.seq
	if steps <= 0 {
		return
	}
	if steps >= int64(len(w.subs)) {
		w.totals = hist.Counts{}
		for i := range w.subs {
			w.subs[i].reset()
		}
	} else {
		for j := w.seq + 1; j <= k; j++ {
			s := &w.subs[j%int64(len(w.subs))]
			for _, p := range s.pairs {
				w.totals[p.bucket] -= p.n
			}
			s.reset()
		}
	}
	if steps >= int64(len(w.mins)) {
		for i := range w.mins {
			w.mins[i] = math.MaxUint64
		}
	} else {
		for j := w.seq + 1; j <= k; j++ {
			w.mins[j%int64(len(w.mins))] = math.MaxUint64
		}
	}
	w.seq = k
}

// drain moves everything the stripes hold into the current sub-window. Each
// counter is swapped to empty atomically, so a sample recorded concurrently
// is taken now or by the next drain, never lost.
func (w *window) drain(stripes []stripe) {
	cur := &w.subs[w.seq%int64(len(w.subs))]
	lo, hi := hist.NumBuckets, -1
	for i := range stripes {
		s := &stripes[i]
		if s.sum.Load() != 0 {
			cur.sum += s.sum.Swap(0)
		}
		if s.drops.Load() != 0 {
			cur.drops += s.drops.Swap(0)
		}
		if s.ignored.Load() != 0 {
			cur.ignored += s.ignored.Swap(0)
		}
		if s.min.Load() != math.MaxUint64 {
			cur.min = min(cur.min, s.min.Swap(math.MaxUint64))
		}
		if s.max.Load() != 0 {
			cur.max = max(cur.max, s.max.Swap(0))
		}
		if s.inflight.Load() != 0 {
			cur.inflight = max(cur.inflight, s.inflight.Swap(0))
		}
		for dirty := s.dirty.Swap(0); dirty != 0; dirty &= dirty - 1 {
			g := bits.TrailingZeros32(dirty)
			for b := g * hist.SubCount; b < (g+1)*hist.SubCount; b++ {
				if s.counts[b].Load() != 0 {
					w.scratch[b] += s.counts[b].Swap(0)
					lo, hi = min(lo, b), max(hi, b)
				}
			}
		}
	}
	slot := &w.mins[w.seq%int64(len(w.mins))]
	*slot = min(*slot, cur.min)
	if hi < 0 {
		return
	}
	w.fresh = w.fresh[:0]
	for b := lo; b <= hi; b++ {
		if n := w.scratch[b]; n != 0 {
			w.scratch[b] = 0
			w.totals[b] += n
			cur.count += n
			w.fresh = append(w.fresh, pair{uint32(b), n})
		}
	}
	if len(cur.pairs) == 0 {
		cur.pairs, w.fresh = w.fresh, cur.pairs
		return
	}
	w.spare = mergePairs(w.spare[:0], cur.pairs, w.fresh)
	cur.pairs, w.spare = w.spare, cur.pairs
}

// mergePairs appends to dst the union of the sorted pair lists a and b,
// adding the counts of a bucket present in both.
func mergePairs(dst, a, b []pair) []pair {
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0].bucket < b[0].bucket:
			dst, a = append(dst, a[0]), a[1:]
		case a[0].bucket > b[0].bucket:
			dst, b = append(dst, b[0]), b[1:]
		default:
			dst = append(dst, pair{a[0].bucket, a[0].n + b[0].n})
			a, b = a[1:], b[1:]
		}
	}
	dst = append(dst, a...)
	return append(dst, b...)
}
