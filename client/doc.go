// Package client is the caller's half of overload handling, for programs
// that call a service sluice guards (or any service that refuses with 429
// and 503): clients that throttle themselves from what they see, retry
// within a budget, and say who they are. It links nothing of the daemon;
// its gRPC interceptors are in client/grpcclient, so that an HTTP-only
// program does not link gRPC.
//
//	c, err := client.New(client.Config{Tags: client.Tags{Tenant: "acme"}})
//	...
//	hc := &http.Client{Transport: c.Transport(nil)}
//
// # Adaptive throttling
//
// Per backend (an HTTP request's host:port, a gRPC connection's target),
// a Client counts over a sliding window (Config.Window, 2 minutes) the
// requests its program attempted and the accepts, those the backend did
// not refuse, and drops a request locally with probability
//
//	max(0, (requests − K·accepts) / (requests + 1))
//
// as Google's SRE book defines it ("Handling Overload", client-side
// throttling), K = 2 by default. A refusal (HTTP 429 or 503, which is how
// sluice refuses, with its Sluice-Reason; gRPC RESOURCE_EXHAUSTED or
// UNAVAILABLE) and an attempt that got no answer are not accepted; any other
// answer, an error status included, is. A dropped request counts as a
// request, so that while the backend refuses, what reaches it settles near
// K times what it accepts, and the drops fade as it accepts again. A drop
// is told apart: Do and Begin return a *DropError (errors.Is ErrDropped),
// the Transport a synthetic 503 with the HeaderDropped field (Dropped), the
// gRPC interceptors an UNAVAILABLE status that wraps ErrDropped.
//
// The window is long, as the book's: the drops follow a backend's refusals
// at once, but fade slowly after a spell in which it refused nearly all,
// since the requests dropped then stay in the window (each accept lets K
// more through, so the share sent grows about e-fold every 0.63 window). In
// TestThrottleRecovers, after 10 s of refusals at 100 requests a second,
// half the requests are sent again 4.5 minutes after the backend accepts
// everything, and none is dropped after 5.5; a shorter Window recovers
// sooner in proportion and forgets sooner too.
//
// # Retries
//
// Only an idempotent request is retried (Idempotent; for gRPC, the methods
// the interceptor is told are), at most Config.MaxRetries times (2: three
// attempts, the book's per-request limit), and only within the retry
// budget: the retries of the last BudgetWindow (10 s) stay within
// RetryRatio (10 %) of its requests plus RetryFloor (10). A retry waits a
// jittered exponential backoff (uniform in [0, Backoff·2^(n-1)], 50 ms
// base), and never less than what the answer asked for: Retry-After, the
// RateLimit field of a policy with nothing left, gRPC's
// grpc-retry-pushback-ms, plus up to half that again so that clients
// refused together come back apart. A request refused for its quota
// (`rate`) is therefore never retried before its Retry-After. An answer
// asking for more than MaxWait (10 s) is returned to the caller instead; so
// is one that asks not to be retried (a negative pushback).
//
// A retry is made only within the caller's deadline (the context's): an
// answer whose wait would end at or past it is returned at once, counted
// as EventDeadline, rather than held until a moment the caller no longer
// waits for. A retry that is made starts no later than halfway from the
// answer's wait to the deadline (the backoff and the jitter are cut to
// that), so that at least half the time left after the wait is the
// attempt's own. Waits are counted on Config.Clock: tests pass a
// hand-moved one and never sleep.
//
// # Tags
//
// Config.Tags, and WithTags for one request's context, set a priority
// (critical, default, sheddable), a tenant and a cost on every request,
// under the header names of Config.Headers (X-Priority, X-Tenant, X-Cost
// by default: the names of sluice's example configs, `priority =
// "header:X-Priority"`, `key = "header:X-Tenant"`). A request that
// carries one of those headers keeps its own value.
//
// # Metrics
//
// Config.Observe is called with an Event for every attempt (its Outcome and
// Sluice-Reason), every drop, every retry and every retry the budget
// refused; Stats reads a backend's windows. The package has no metrics
// dependency: the package's examples adapt Observe to Prometheus counters.
//
// # Units and concurrency
//
// Durations are time.Duration; K and RetryRatio are plain ratios; counts
// are requests. A Client, its Transport and its interceptors are safe for
// concurrent use; share one Client per process. The per-request path takes
// no lock: each backend's windows are atomic counters in slots. A request
// that is not dropped reads the clock once and, with its tags already on
// it, allocates nothing of the Client's (BenchmarkTransport).
package client
