package permit

import (
	"net/http"

	"github.com/sluicehq/sluice/gate"
)

// Refusal is a refused permit as the service's answers carry it: the
// figures of the proxy's 429/503 response to the same gate.Rejection,
// decided by the gate itself (gate.Rejection.Answer), so that both
// front-ends say the same.
type Refusal struct {
	// Group is the group that refused.
	Group string `json:"group"`
	// Reason is the rejection's wire name (rate, fair_share, concurrency,
	// queue_full, queue_timeout, cpu, memory, priority).
	Reason string `json:"reason"`
	// Status is the proxy's HTTP status for it: 429 over quota, 503 overload.
	Status int `json:"status"`
	// RetryAfter is the Retry-After field: whole seconds, jittered.
	RetryAfter int64 `json:"retry_after_s"`
	// RateLimitPolicy and RateLimit are the IETF fields (draft -10) for
	// reason rate, "" otherwise.
	RateLimitPolicy string `json:"ratelimit_policy,omitempty"`
	RateLimit       string `json:"ratelimit,omitempty"`
}

// refusalOf is what rej tells the client (its gate.Answer), with its
// fields also set on h when h is not nil (the HTTP answer's header).
func refusalOf(rej gate.Rejection, h http.Header) Refusal {
	a := rej.Answer()
	if h != nil {
		a.SetFields(h)
	}
	return Refusal{
		Group:           rej.Group,
		Reason:          rej.Reason.String(),
		Status:          a.Status,
		RetryAfter:      a.RetryAfter,
		RateLimitPolicy: a.Policy(),
		RateLimit:       a.Limit(),
	}
}
