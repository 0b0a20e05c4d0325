package rls

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/limits"
)

// Headers selects the rate-limit header fields the service asks Envoy to
// add to its response (response_headers_to_add).
type Headers uint8

const (
	// HeadersIETF: RateLimit-Policy and RateLimit (draft -10), one item per
	// descriptor that has a limit, as sluice's proxy sends them; on
	// OVER_LIMIT also Retry-After and Sluice-Reason.
	HeadersIETF Headers = iota
	// HeadersXRateLimit: the older X-RateLimit-Limit, X-RateLimit-Remaining
	// and X-RateLimit-Reset (draft-polli-ratelimit-headers-03) of the
	// descriptor with the least remaining; on OVER_LIMIT also Retry-After
	// and Sluice-Reason.
	HeadersXRateLimit
	// HeadersNone: no header fields (Envoy's ratelimit filter can render
	// X-RateLimit-* itself from the statuses: enable_x_ratelimit_headers).
	HeadersNone
)

var headerNames = [...]string{"ietf", "x-ratelimit", "none"}

// String returns "ietf", "x-ratelimit" or "none".
func (h Headers) String() string {
	if int(h) < len(headerNames) {
		return headerNames[h]
	}
	return "invalid"
}

// ParseHeaders reads a Headers name: "ietf", "x-ratelimit" or "none".
func ParseHeaders(s string) (Headers, error) {
	for i, n := range headerNames {
		if s == n {
			return Headers(i), nil
		}
	}
	return 0, fmt.Errorf("rls: headers %q: want ietf, x-ratelimit or none", s)
}

// figures are one descriptor's rate-limit figures as the gate renders
// them.
type figures struct {
	group         string
	policy, limit string // the IETF field values, "" without a policy
	quota, window int64  // the policy's q and w (whole seconds)
	resetSecs     int64  // the limit's t
	remaining     int64  // the limiter's figures, exact
	reset         time.Duration
	retryAfter    int64  // seconds, jittered; OVER_LIMIT only
	reason        string // Sluice-Reason; OVER_LIMIT only
}

// render has the gate decide what a decision tells the client: rej for a
// refusal (its gate.Answer), else an allowed decision of the rate limiter
// (res, pol), with the RateLimit fields the gate would give a rate refusal
// (gate.RateFields) but no Retry-After or Sluice-Reason.
func render(group string, res limits.Result, pol limits.Policy, rej *gate.Rejection) figures {
	f := figures{group: group, remaining: res.Remaining, reset: res.ResetAfter}
	var a gate.Answer
	switch {
	case rej != nil:
		a = rej.Answer()
		f.retryAfter, f.reason = a.RetryAfter, a.Reason.String()
		f.remaining, f.reset = rej.Rate.Remaining, rej.Rate.ResetAfter
	case pol.Quota > 0:
		a = gate.RateFields(group, res, pol)
	}
	if a.RateLimit && a.Window > 0 {
		f.policy, f.limit = a.Policy(), a.Limit()
		f.quota, f.window, f.resetSecs = a.Quota, a.Window, a.Reset
	}
	return f
}

// currentLimit expresses f's policy, q units per w seconds, in Envoy's
// terms: the largest unit (day, hour, minute, second) that divides w, with
// w / unit as unit_multiplier (omitted when 1). A quota beyond 2^32-1 is
// cut to it. nil without a policy.
func currentLimit(f *figures) *rlsv3.RateLimitResponse_RateLimit {
	if f.window <= 0 {
		return nil
	}
	l := &rlsv3.RateLimitResponse_RateLimit{Name: f.group, RequestsPerUnit: uint32(min(f.quota, math.MaxUint32))}
	unit, secs := rlsv3.RateLimitResponse_RateLimit_SECOND, int64(1)
	for _, u := range [...]struct {
		unit rlsv3.RateLimitResponse_RateLimit_Unit
		secs int64
	}{{rlsv3.RateLimitResponse_RateLimit_DAY, 86400}, {rlsv3.RateLimitResponse_RateLimit_HOUR, 3600}, {rlsv3.RateLimitResponse_RateLimit_MINUTE, 60}} {
		if f.window%u.secs == 0 {
			unit, secs = u.unit, u.secs
			break
		}
	}
	l.Unit = unit
	if m := f.window / secs; m != 1 {
		l.UnitMultiplier = wrapperspb.UInt32(uint32(min(m, math.MaxUint32)))
	}
	return l
}

// Header names of HeadersXRateLimit.
const (
	headerXLimit     = "X-RateLimit-Limit"
	headerXRemaining = "X-RateLimit-Remaining"
	headerXReset     = "X-RateLimit-Reset"
)

// responseHeaders returns the header fields for Envoy's response to a
// request whose descriptors had the figures fs (those with a policy or a
// refusal), in style h.
func responseHeaders(h Headers, fs []figures) []*corev3.HeaderValue {
	if h == HeadersNone || len(fs) == 0 {
		return nil
	}
	var out []*corev3.HeaderValue
	add := func(k, v string) { out = append(out, &corev3.HeaderValue{Key: k, Value: v}) }
	var retry int64
	reason := ""
	least := -1
	for i := range fs {
		f := &fs[i]
		if f.reason != "" {
			retry = max(retry, f.retryAfter)
			if reason == "" {
				reason = f.reason
			}
		}
		if f.policy == "" {
			continue
		}
		switch h {
		case HeadersIETF:
			add("RateLimit-Policy", f.policy)
			add("RateLimit", f.limit)
		case HeadersXRateLimit:
			if least < 0 || f.remaining < fs[least].remaining {
				least = i
			}
		}
	}
	if least >= 0 {
		f := &fs[least]
		add(headerXLimit, fmt.Sprintf("%d, %d;w=%d", f.quota, f.quota, f.window))
		add(headerXRemaining, strconv.FormatInt(max(f.remaining, 0), 10))
		add(headerXReset, strconv.FormatInt(f.resetSecs, 10))
	}
	if reason != "" {
		add(gate.HeaderRetryAfter, strconv.FormatInt(retry, 10))
		add(gate.HeaderReason, reason)
	}
	return out
}
