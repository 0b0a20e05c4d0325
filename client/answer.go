package client

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Response fields the Client reads; canonical forms, for direct map reads.
const (
	headerReason     = "Sluice-Reason"
	headerRetryAfter = "Retry-After"
	headerRateLimit  = "Ratelimit"
)

// ResultOf returns what an HTTP response tells of the backend's answer: a
// 429 or 503 is a refusal (429 for the client's quota, as is a 503 whose
// Sluice-Reason is "rate"), with the wait its Retry-After asks for (whole
// seconds or an HTTP date, RFC 9110 §10.2.3) or, when longer, the
// RateLimit field's (draft-ietf-httpapi-ratelimit-headers: a policy with
// no units left, r=0, is whole again after t seconds). now is when the
// answer came, for a date. It does not allocate.
func ResultOf(resp *http.Response, now time.Time) Result {
	if !refusal(resp.StatusCode) {
		return Result{}
	}
	r := Result{Refused: true, Quota: resp.StatusCode == http.StatusTooManyRequests}
	if v := resp.Header[headerReason]; len(v) > 0 {
		r.Reason = v[0]
		r.Quota = r.Quota || r.Reason == "rate"
	}
	if v := resp.Header[headerRetryAfter]; len(v) > 0 {
		r.RetryAfter, _ = ParseRetryAfter(v[0], now)
	}
	for _, v := range resp.Header[headerRateLimit] {
		r.RetryAfter = max(r.RetryAfter, rateLimitWait(v))
	}
	return r
}

// refusal reports whether an HTTP status is a refusal (ResultOf).
func refusal(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// ParseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date
// (its distance from now, zero if past). ok is false for anything else.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// rateLimitWait reads a RateLimit field value (a structured-field list of
// policies, `"api";r=0;t=1, "burst";r=5;t=0`) and returns the longest t of
// a policy with nothing remaining (r=0): until then no request of that
// policy can pass. Items it cannot read are skipped.
func rateLimitWait(v string) time.Duration {
	var longest time.Duration
	for v != "" {
		item, rest := cutItem(v)
		v = rest
		r, rok := param(item, "r")
		t, tok := param(item, "t")
		if rok && tok && r == 0 {
			longest = max(longest, time.Duration(t)*time.Second)
		}
	}
	return longest
}

// cutItem returns the first item of a structured-field list and the rest
// after its comma, skipping commas inside sf-strings.
func cutItem(v string) (item, rest string) {
	quoted := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return v[:i], v[i+1:]
		}
	}
	return v, ""
}

// param returns the integer parameter name of an item (`;name=12`), outside
// its sf-string.
func param(item, name string) (int64, bool) {
	if i := strings.LastIndexByte(item, '"'); i >= 0 {
		item = item[i+1:]
	}
	for item != "" {
		i := strings.IndexByte(item, ';')
		if i < 0 {
			return 0, false
		}
		item = item[i+1:]
		p := item
		if j := strings.IndexByte(p, ';'); j >= 0 {
			p = p[:j]
		}
		k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && k == name {
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n < 0 || n > 1<<31 {
				return 0, false
			}
			return n, true
		}
	}
	return 0, false
}

// Idempotent reports whether a request may be sent again without changing
// what it did: its method is idempotent (GET, HEAD, OPTIONS, TRACE, PUT,
// DELETE: RFC 9110 §9.2.2) or it carries an Idempotency-Key (or
// X-Idempotency-Key) header, as net/http's own retries judge, and its body,
// if any, can be read again (GetBody).
func Idempotent(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	if !key {
		_, key = req.Header["X-Idempotency-Key"]
	}
	return key
}
