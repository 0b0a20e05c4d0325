package proxy

import (
	"net/http"
	"time"
)

// This file holds every admission-specific piece of the proxy: the hook it calls
// per request and the data that crosses it. The gate implements Admitter; once the
// gate exists, the integrator may switch these declarations to the gate's concrete
// types without touching the rest of the package.

// Admitter decides, per request, whether the proxy forwards it. The proxy calls
// Admit once per request, before it contacts the upstream; when Admit admits, the
// proxy calls Finish exactly once with the same Ticket when the response is
// finished (body copied, or the exchange failed or was abandoned).
//
// Admit classifies r (group, key from the client IP or a header, priority from a
// header) and decides. It may block (a bounded queue), honouring r.Context(). It
// returns ok == true to admit, with a Ticket; or ok == false with the Rejection the
// proxy turns into a 429/503 (or a gRPC status). The Ticket and Rejection are plain
// values so an implementation can be allocation-free: no boxing of per-request
// values into interfaces, no closures per request.
//
// Finish reports the outcome of an admitted request and its latency: the time from
// Admit's return to the end of the response (for an upgraded connection, to the
// upstream's 101). Implementations must be safe for concurrent use.
//
// A nil Admitter admits everything.
type Admitter interface {
	Admit(r *http.Request) (t Ticket, rej Rejection, ok bool)
	Finish(t Ticket, o Outcome, latency time.Duration)
}

// Ticket is an admitted request's claim: Admit hands it out and Finish gets it back,
// exactly once. The proxy never looks inside.
//
// Ref is the Admitter's handle on whatever admitted the request (its group, say).
// Store a pointer there: an interface holding a pointer does not allocate. Data is
// one word of per-request state for the Admitter (a key hash, a priority, a slot).
type Ticket struct {
	Ref  any
	Data uint64
}

// Outcome classifies a finished request for the control loop. The zero value is
// OutcomeSuccess.
//
//   - OutcomeSuccess: the upstream answered 1xx/2xx/3xx (for gRPC: grpc-status 0);
//     the latency is a sample.
//   - OutcomeDropped: the upstream failed — a 5xx, a timeout, a refused or reset
//     connection, a malformed response (for gRPC: UNAVAILABLE, DEADLINE_EXCEEDED,
//     RESOURCE_EXHAUSTED, and the server faults UNKNOWN, INTERNAL, DATA_LOSS). A
//     strong overload signal.
//   - OutcomeIgnored: no signal — the client cancelled before the response was
//     finished, or the upstream answered 4xx (for gRPC: the caller's errors such as
//     INVALID_ARGUMENT, NOT_FOUND, CANCELLED).
type Outcome uint8

// The outcomes.
const (
	OutcomeSuccess Outcome = iota
	OutcomeDropped
	OutcomeIgnored
)

var outcomeNames = [...]string{"success", "dropped", "ignored"}

// String returns "success", "dropped" or "ignored".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// RejectKind says which status a rejection gets. The zero value is RejectOverload.
type RejectKind uint8

const (
	// RejectOverload: the service is overloaded; 503, gRPC UNAVAILABLE (14).
	RejectOverload RejectKind = iota
	// RejectRate: the client exceeded its quota; 429, gRPC RESOURCE_EXHAUSTED (8),
	// with the RateLimit-Policy and RateLimit fields when the Quota is set.
	RejectRate
)

// Reason says why a request was rejected. It is sent in the Sluice-Reason header.
type Reason uint8

// The reasons; String gives their wire names.
const (
	ReasonNone         Reason = iota // "none": not set
	ReasonRate                       // "rate": a static rate limit of the key
	ReasonConcurrency                // "concurrency": the adaptive concurrency limit
	ReasonQueueTimeout               // "queue_timeout": waited too long in the queue
	ReasonQueueFull                  // "queue_full": the queue was full
	ReasonCPU                        // "cpu": CPU beyond its target
	ReasonMemory                     // "memory": memory beyond its target
	ReasonPriority                   // "priority": shed to protect higher priorities
	ReasonCircuitOpen                // "circuit_open": the upstream's circuit breaker is open
)

var reasonNames = [...]string{"none", "rate", "concurrency", "queue_timeout", "queue_full", "cpu", "memory", "priority", "circuit_open"}

// String returns the reason's wire name, e.g. "queue_timeout".
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Rejection is what the proxy turns into a rejection response.
//
// RetryAfter is when a retry may succeed. The Retry-After header carries it
// rounded up to whole seconds, at least 1 (the base), then jittered upwards:
// uniform over [base, base+ceil(base/2)], so rejected clients spread out and none
// returns before the limiter said it could succeed. gRPC clients get the same
// value in grpc-retry-pushback-ms.
// Quota, when its Limit is positive and Kind is RejectRate, fills the IETF
// RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10).
type Rejection struct {
	Kind       RejectKind
	Reason     Reason
	RetryAfter time.Duration
	Quota      Quota
}

// Quota describes the rate-limit policy a request ran into, for the RateLimit
// fields: `RateLimit-Policy: "Policy";q=Limit;w=Window` and
// `RateLimit: "Policy";r=Remaining;t=Reset`, with durations in whole seconds
// (Window rounded up, at least 1; Reset rounded up). An empty Policy is sent as
// "default"; characters outside printable ASCII are dropped.
type Quota struct {
	Policy    string
	Limit     int64
	Window    time.Duration
	Remaining int64
	Reset     time.Duration
}
