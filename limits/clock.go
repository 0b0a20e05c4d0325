package limits

import "time"

// Internal time is int64 nanoseconds since the Unix epoch, clamped to
// [0, maxNanos] so that sums of an instant and a validated span never
// overflow.
const (
	maxNanos = int64(1) << 62                   // about the year 2116
	maxSpan  = int64(10 * 365 * 24 * time.Hour) // the longest window, refill or wait
)

// nanos converts now to internal time, reading only its wall clock.
func nanos(t time.Time) int64 {
	s := t.Unix()
	if s < 0 {
		return 0
	}
	if s >= maxNanos/1e9 {
		return maxNanos
	}
	return s*1e9 + int64(t.Nanosecond())
}

// span converts a non-negative internal difference to a Duration, clamping
// negatives (time that went backwards) to zero.
func span(ns int64) time.Duration {
	if ns < 0 {
		return 0
	}
	return time.Duration(ns)
}

// units clamps a request cost: negative costs are probes, like zero.
func units(n int64) int64 {
	if n < 0 {
		return 0
	}
	return n
}
