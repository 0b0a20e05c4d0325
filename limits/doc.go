// Package limits holds sluice's static admission algorithms: the rate limiters
// (fixed window, sliding log, sliding window, sliding buckets, token bucket with
// optional warm-up, leaky bucket as a meter, leaky bucket as a queue), a per-key
// wrapper with bounded memory (Keyed), the concurrency counter with its
// bounded wait queue (Concurrency), a lock-free stock of units for
// quotas leased from elsewhere (Allowance, used by limits/redis), and the
// words and figures of a quota kept in a shared store (Fallback, Sync, and
// StoreStatus, which limits/redis's Status and gate.GlobalStatus embed).
//
// # Time
//
// Every rate algorithm takes the current instant as data: AllowAt(now, n). The
// Allow(n) wrappers call time.Now(). An algorithm reads only the wall-clock part
// of now (now.UnixNano()); instants before 1970 are treated as 1970 and instants
// after the year 2116 as 2116. A now earlier than one already seen is never an
// error and never panics: it is treated as no time having passed (windows stay
// where they are, nothing is refilled or expired); for the buckets, whose whole
// state is the instant at which they are full again, the request is judged at
// the earlier instant, which is never more permissive than judging it at the
// later one.
//
// # Units and n
//
// n is the cost of a request in the limiter's units (requests, bytes, ...).
// n = 0 is a probe: it is always allowed, consumes nothing, and reports the
// state. A negative n is treated as 0. An n larger than a limiter's capacity
// (Result.Limit) can never be allowed: the Result is not allowed and its
// RetryAfter is InfDuration. (LeakyQueue is the exception: it paces any n.)
//
// # Results
//
// Every rate algorithm answers with a Result (see its doc for the meaning of
// each field) and describes its quota as a Policy, the shape of the IETF
// RateLimit-Policy and RateLimit header fields. The interface they share is
// Limiter.
//
// # Runtime changes
//
// Setters (SetRate, SetBurst, SetLimit, SetWindow, ...) are safe to call while
// the limiter is in use. They validate, then publish new parameters atomically.
// The state carried over is documented per algorithm (for the buckets: the
// tokens available are kept, as in golang.org/x/time/rate); the carry-over is
// applied at the next decision, at that decision's instant. A Keyed limiter
// shares its template's parameters, so a setter on the template changes every
// key.
//
// # Concurrency safety
//
// All exported types are safe for concurrent use, with no allocation and
// no global lock on a decision. The GCRA limiters (TokenBucket without
// warm-up, LeakyBucket, LeakyQueue) keep their state in one word updated by
// compare-and-swap, and queue on a mutex only while decisions contend; the
// other rate limiters (the warm-up bucket included) have their own small
// mutex around a few arithmetic operations; Keyed shards its keys
// over many mutexes; Concurrency's admission and release are lock-free (one
// CAS on a word holding both the limit and the in-flight count) and take a
// mutex only to queue or wake a waiter.
package limits
