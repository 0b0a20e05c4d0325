package proxy

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// retryAfterSeconds returns the Retry-After value, in whole seconds, for a
// rejection whose limiter expects a retry to succeed after d; u is a uniformly
// random word.
//
// The base is d rounded up to whole seconds, at least 1 (RFC 9110 §10.2.3 allows
// only whole seconds). The jitter only ever adds: the result is uniform over
// [base, base+spread] with spread = ceil(base/2), so clients rejected together
// spread their retries over up to half the wait again (base 1 → 1 or 2 s, base 10 →
// 10…15 s) and none comes back before the limiter said it could succeed. This is
// the "equal jitter" of AWS's "Exponential Backoff and Jitter" (2015) turned around
// so the delay never shrinks. Capped at one day.
func retryAfterSeconds(d time.Duration, u uint64) int64 {
	const day = 24 * 60 * 60
	base := int64(1)
	if d > time.Second {
		base = int64((d + time.Second - 1) / time.Second)
	}
	if base > day {
		base = day
	}
	spread := (base + 1) / 2
	return base + int64(u%uint64(spread+1))
}

// jitteredRetryAfter is retryAfterSeconds with a random word from math/rand/v2's
// global source, which is per-thread in the runtime: lock-free and allocation-free.
func jitteredRetryAfter(d time.Duration) int64 { return retryAfterSeconds(d, rand.Uint64()) }

// smallInts holds the decimal strings of 0…maxSmallInt so the common header
// values cost no allocation.
const maxSmallInt = 300

var smallInts = func() (s [maxSmallInt + 1]string) {
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()
