package limits

import (
	"math"
	"time"
)

// InfDuration is the RetryAfter of a request that can never be allowed (its n
// exceeds the limiter's capacity). Same value as x/time/rate's InfDuration.
const InfDuration = time.Duration(math.MaxInt64)

// Result is a rate limiter's decision on one request and the limiter's state
// right after it. The same type is returned by every algorithm in this package
// and by the Redis-backed limiters in limits/redis, so it maps directly onto
// HTTP headers (IETF RateLimit: r=Remaining, t=ResetAfter; Retry-After).
type Result struct {
	// Allowed reports whether the request was admitted and its cost consumed.
	Allowed bool

	// Limit is the capacity in units: the most that can be admitted at once
	// from the fresh state (the burst of a bucket, N of a window, the queue
	// capacity of a LeakyQueue).
	Limit int64

	// Remaining is how many more units could be admitted at the same instant,
	// right after this decision; 0 <= Remaining <= Limit.
	Remaining int64

	// RetryAfter is, when the request was not allowed, the shortest wait after
	// which the same request (same n) would be allowed if nothing else arrived
	// meanwhile; InfDuration if it never can be (n > Limit). Zero when allowed.
	RetryAfter time.Duration

	// ResetAfter is the time until the limiter is back in its fresh state
	// (Remaining == Limit) if nothing else arrives: the bucket full, the window
	// empty. Zero when it already is.
	ResetAfter time.Duration

	// Delay is, for an allowed request, how long the caller must wait before
	// acting on it. Only LeakyQueue, which paces requests, sets it; it is zero
	// for every other algorithm.
	Delay time.Duration
}

// Policy describes a limiter's quota as "Quota units per Window", the shape
// of the IETF RateLimit-Policy field (q=Quota; w=Window in seconds).
//
// For the windows it is exactly N per t. For the buckets it is the capacity
// (burst) and the time the refill rate takes to produce it, so Quota/Window is
// the sustained rate and Quota the largest burst. A header writer that needs a
// whole number of seconds should scale both (q·k per w·k).
type Policy struct {
	Quota  int64
	Window time.Duration
	// Shortfall is how many units short of Quota per Window the algorithm
	// may refuse a client that spreads its requests evenly: 1 for the
	// weighted sliding window, whose estimate weighs the previous window's
	// count in at the current one's start; 0 for the others. What a client
	// may send evenly without a refusal is Quota-Shortfall per Window.
	Shortfall int64
}

// Limiter is the behaviour every rate algorithm in this package shares. The
// gate holds a group's rate limiter through it without knowing the algorithm.
// Implementations are safe for concurrent use.
type Limiter interface {
	// AllowAt decides on a request of cost n at instant now, consuming n when
	// it is allowed.
	AllowAt(now time.Time, n int64) Result
	// Allow is AllowAt(time.Now(), n).
	Allow(n int64) Result
	// Policy reports the current quota.
	Policy() Policy
}
