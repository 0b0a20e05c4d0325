package probe

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/internal/hist"
)

// Snapshot is what a Recorder saw over its window: a plain value, owned by
// the caller and safe to share once returned. Duration figures describe the
// successful requests (those passed to Record) and are zero when there were
// none.
type Snapshot struct {
	// Time is the instant passed to Snapshot.
	Time time.Time
	// Span is the stretch of time the window covers, from the start of its
	// oldest sub-window to Time: between Window − Window/SubWindows and
	// Window, or less while the recorder is younger than that.
	Span time.Duration

	// Count is every finished request: Successes + Drops + Ignored.
	Count     uint64
	Successes uint64
	Drops     uint64
	Ignored   uint64
	// Throughput is Count per second of Span, 0 when Span is 0.
	Throughput float64
	// MaxInflight is the highest value passed to ObserveInflight.
	MaxInflight int

	Min, Max, Mean time.Duration
	// Quantiles by nearest rank, each within 1/128 of a recorded value.
	P50, P90, P95, P99, P999 time.Duration

	// MinRTT is the shortest duration recorded over the longer min-RTT
	// window, 0 when none was.
	MinRTT time.Duration
}

// fixedQuantiles are the quantiles a Snapshot carries as fields, ascending.
var fixedQuantiles = [...]float64{0.5, 0.9, 0.95, 0.99, 0.999}

// snapshot sums the ring into w.last and returns it.
func (w *window) snapshot() Snapshot {
	s := Snapshot{Time: w.now}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	var sum uint64
	var inflight int64
	for i := range w.subs {
		sub := &w.subs[i]
		s.Successes += sub.count
		s.Drops += sub.drops
		s.Ignored += sub.ignored
		sum += sub.sum
		lo, hi = min(lo, sub.min), max(hi, sub.max)
		inflight = max(inflight, sub.inflight)
	}
	s.Count = s.Successes + s.Drops + s.Ignored
	s.MaxInflight = int(inflight)

	start := w.epoch.Add(time.Duration(w.seq-int64(len(w.subs))+1) * w.sub)
	if start.Before(w.epoch) {
		start = w.epoch
	}
	if s.Span = w.now.Sub(start); s.Span > 0 {
		s.Throughput = float64(s.Count) / s.Span.Seconds()
	} else {
		s.Span = 0
	}

	rtt := uint64(math.MaxUint64)
	for _, m := range w.mins {
		rtt = min(rtt, m)
	}
	if rtt != math.MaxUint64 {
		s.MinRTT = time.Duration(rtt)
	}

	if s.Successes > 0 {
		s.Min, s.Max = w.extremes(lo, hi)
		s.Mean = time.Duration(sum / s.Successes)
	}
	w.last = s
	var q [len(fixedQuantiles)]time.Duration
	w.quantiles(fixedQuantiles[:], q[:])
	s.P50, s.P90, s.P95, s.P99, s.P999 = q[0], q[1], q[2], q[3], q[4]
	w.last = s
	return s
}

// quantiles sets out[i] to the qs[i]-quantile of the window as of the last
// snapshot, by hist's nearest-rank rule (bucket midpoints clamped to the
// exact Min and Max, the first and last rank exact). qs must be ascending.
func (w *window) quantiles(qs []float64, out []time.Duration) {
	hist.Quantiles(&w.totals, 0, w.last.Successes, w.last.Min, w.last.Max, qs, out)
}

// extremes returns the window's minimum and maximum: the exact lo and hi
// tracked beside the histogram, unless a sample recorded during a drain had
// its bucket and its extreme taken by different drains, in which case the
// lowest or highest non-empty bucket stands in.
func (w *window) extremes(lo, hi uint64) (time.Duration, time.Duration) {
	first, last := 0, hist.NumBuckets-1
	for first < last && w.totals[first] == 0 {
		first++
	}
	for last > first && w.totals[last] == 0 {
		last--
	}
	if lo == math.MaxUint64 || hist.Of(lo) != first {
		lo = hist.Value(first)
	}
	if hist.Of(hi) != last {
		hi = hist.Value(last)
	}
	return time.Duration(lo), time.Duration(hi)
}
