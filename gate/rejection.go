package gate

import (
	"net/http"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/limits"
)

// overloadRetry is the Retry-After of an overload rejection before jitter:
// the next control interval or two will have moved the limit, and adaptive/sim
// models clients retrying 1 to 2 s later.
const overloadRetry = time.Second

// Rejection is why the gate turned a request away, and what to tell the
// client. The zero value is not a rejection (Reason RejectNone).
type Rejection struct {
	// Reason is the rejection's reason: its wire name (Reason.String()) goes
	// in the Sluice-Reason header, the metrics and the admin API.
	Reason adaptive.RejectReason
	// Group names the group that rejected the request; it is also the name
	// of the rate-limit policy in the RateLimit fields.
	Group string
	// RetryAfter is when a retry may succeed: the rate limiter's answer for
	// "rate", else a second. WriteHeaders rounds it up to whole seconds and
	// adds jitter.
	RetryAfter time.Duration
	// Rate is the rate limiter's decision for "rate" (zero otherwise): its
	// Remaining and ResetAfter fill the RateLimit field.
	Rate limits.Result
	// Policy is the rate limit's quota for "rate" (zero otherwise), for the
	// RateLimit-Policy field.
	Policy limits.Policy
}

// Rejected reports whether r is a rejection.
func (r Rejection) Rejected() bool { return r.Reason != adaptive.RejectNone }

// OverQuota reports whether the client went over its own quota (reasons
// "rate" and "fair_share": 429 Too Many Requests) rather than the service
// being overloaded (every other reason: 503 Service Unavailable).
func (r Rejection) OverQuota() bool {
	return r.Reason == adaptive.RejectRate || r.Reason == adaptive.RejectFairShare
}

// Status returns the HTTP status of the rejection: 429 when the client is over
// its quota, 503 when the service is overloaded.
func (r Rejection) Status() int {
	if r.OverQuota() {
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

// stageReason reports whether why is a concurrency-stage rejection, the kind
// adaptive.Sample.Rejected and ByPriority count.
func stageReason(why adaptive.RejectReason) bool {
	switch why {
	case adaptive.RejectConcurrency, adaptive.RejectQueueFull, adaptive.RejectQueueTimeout, adaptive.RejectFairShare:
		return true
	}
	return false
}

// reject counts a rejection of a request of priority p and key (the group's
// key of the request, "" without one) and returns it. The key is counted in
// the group's most rejected keys, which never waits (topk.Summary.Add).
func (gr *group) reject(why adaptive.RejectReason, p adaptive.Priority, key string) Rejection {
	gr.c.rejected[why].Add(1)
	if key != "" {
		gr.c.rejectedKeys.Add(key, uint8(why))
	}
	if stageReason(why) && why != adaptive.RejectFairShare { // see adaptive.PriorityCount
		gr.c.stage[p].Add(1)
	}
	return Rejection{Reason: why, Group: gr.name, RetryAfter: overloadRetry}
}

// Reject counts a rejection decided outside the gate (the proxy's circuit
// breaker: adaptive.RejectCircuitOpen) in c's group, so that every rejection
// shows in the same read-outs, and returns it for rendering. retryAfter zero
// means a second.
func (g *Gate) Reject(c Class, why adaptive.RejectReason, retryAfter time.Duration) Rejection {
	if c.g == nil || why == adaptive.RejectNone || int(why) >= adaptive.NumRejections {
		return Rejection{Reason: why, RetryAfter: max(retryAfter, overloadRetry)}
	}
	p := min(c.Priority, adaptive.Critical)
	if p != c.g.prio {
		c.g.c.arrived[p].Add(1)
	}
	r := c.g.reject(why, p, c.Key)
	if retryAfter > 0 {
		r.RetryAfter = retryAfter
	}
	return r
}
