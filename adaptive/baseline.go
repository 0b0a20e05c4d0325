package adaptive

import "time"

// baselineDrift is how fast, per second, a baseline may rise while the limit is
// not in use: 10 %/s, so a genuinely slower backend is learned within seconds of
// the pressure going away, while a transient queue cannot inflate it much.
const baselineDrift = 0.1

// baseline estimates the no-load mean latency of the backend, in seconds: the
// lowest interval mean seen. It falls at once to any lower mean and rises only
// while the limit is not in use (no pressure from the gate), at most by
// baselineDrift per second. It is the latency floor of Vegas, Gradient and
// Target; it is never reset by dropping the limit to "probe" (the limit floor and
// the latency floor are independent).
type baseline struct{ v float64 }

// observe folds in one interval's mean latency.
func (b *baseline) observe(mean float64, inUse bool, interval time.Duration) {
	if !(mean > 0) || !finite(mean) {
		return
	}
	if b.v == 0 || mean < b.v {
		b.v = mean
		return
	}
	if !inUse {
		b.v = min(mean, b.v*(1+baselineDrift*interval.Seconds()))
	}
}
