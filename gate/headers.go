package gate

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/limits"
)

// Response header names, in canonical form (direct map writes).
const (
	HeaderReason          = "Sluice-Reason"
	HeaderRetryAfter      = "Retry-After"
	HeaderRateLimitPolicy = "Ratelimit-Policy" // RateLimit-Policy
	HeaderRateLimit       = "Ratelimit"        // RateLimit
)

// maxRetryAfter caps Retry-After at a day (a request that can never pass
// a rate limit, RetryAfter = limits.InfDuration, gets a day).
const maxRetryAfter = 24 * 60 * 60

// retryAfterSeconds renders a Retry-After for a retry that may succeed after
// d; u is a uniformly random word.
//
// The base is d rounded up to whole seconds (RFC 9110 §10.2.3 allows no
// fractions), at least 1 and at most a day. Jitter only ever adds: the result
// is uniform over the whole seconds of [base, base + ceil(base/2)], so clients
// turned away together spread their retries over up to half the wait again
// (base 1 → 1 or 2 s, as adaptive/sim's clients retry; base 10 → 10 to 15 s),
// and none comes back before the limiter said it could pass ("equal jitter",
// Brooker, "Exponential Backoff and Jitter", AWS Architecture Blog, 2015,
// turned so the delay never shrinks).
func retryAfterSeconds(d time.Duration, u uint64) int64 {
	base := int64(1)
	if d > time.Second {
		base = min(int64((d-1)/time.Second)+1, maxRetryAfter)
	}
	spread := (base + 1) / 2
	return base + int64(u%uint64(spread+1))
}

// one returns s as a header value that an Add cannot append into.
func one(s string) []string { return []string{s}[:1:1] }

// smallValues holds the header values "0" to "300", so common figures cost
// no allocation.
var smallValues = func() (v [301][]string) {
	for i := range v {
		v[i] = one(strconv.Itoa(i))
	}
	return v
}()

func intValue(n int64) []string {
	if n >= 0 && n < int64(len(smallValues)) {
		return smallValues[n]
	}
	return one(strconv.FormatInt(n, 10))
}

// reasonValues holds the Sluice-Reason value of every reason.
var reasonValues = func() (v [adaptive.NumRejections][]string) {
	for i := range v {
		v[i] = one(adaptive.RejectReason(i).String())
	}
	return v
}()

// Answer is what a refusal tells its client: its status, the fields and
// the body, decided here once (Rejection.Answer) and written by each door
// in its own form (SetFields on an http.Header, AppendHead on the wire,
// WriteResponse; the proxy's gRPC status, the permit service's JSON and
// Envoy's rate limit service read its figures). Retry-After's jitter is
// drawn once, so every form of one Answer says the same.
type Answer struct {
	// Status is 429 when the client is over its quota, 503 when the
	// service is overloaded (Rejection.Status).
	Status int
	// RetryAfter is the Retry-After field in whole seconds, jittered (see
	// the package's retryAfterSeconds: at least the rejection's RetryAfter
	// rounded up, plus up to half that again).
	RetryAfter int64
	// Reason is the Sluice-Reason field.
	Reason adaptive.RejectReason
	// Group names the rate-limit policy of the RateLimit fields.
	Group string
	// RateLimit reports that the answer carries the IETF RateLimit-Policy
	// and RateLimit fields (reason "rate" with a policy): Quota units per
	// Window whole seconds (the policy's q and w, see wholeSecondPolicy),
	// Remaining units, Reset seconds until the quota is whole again (the
	// limit's r and t).
	RateLimit                       bool
	Quota, Window, Remaining, Reset int64
}

// Answer decides what the refusal r tells its client (see Answer).
func (r Rejection) Answer() Answer {
	a := Answer{Status: r.Status(), RetryAfter: retryAfterSeconds(r.RetryAfter, rand.Uint64()),
		Reason: r.Reason, Group: r.Group}
	if r.Reason == adaptive.RejectRate && r.Policy.Quota > 0 {
		a.RateLimit = true
		a.Quota, a.Window = wholeSecondPolicy(r.Policy)
		a.Remaining, a.Reset = max(r.Rate.Remaining, 0), ceilSeconds(r.Rate.ResetAfter)
	}
	return a
}

// RateFields is the Answer a refusal for reason "rate" by the limiter's
// decision res under policy pol of group would give, for a door that sends
// the RateLimit fields with an allowed decision too (Envoy's rate limit
// service); its RetryAfter and Reason are a refusal's.
func RateFields(group string, res limits.Result, pol limits.Policy) Answer {
	return Rejection{Reason: adaptive.RejectRate, Group: group, Rate: res, Policy: pol}.Answer()
}

// WriteHeaders sets the rejection's fields on h (Answer.SetFields) and
// returns the Retry-After it wrote in seconds, for a caller that also
// needs it elsewhere (a gRPC retry pushback).
//
// The rate-limit fields follow draft-ietf-httpapi-ratelimit-headers-10, one
// policy named after the group: `RateLimit-Policy: "api";q=100;w=1` and
// `RateLimit: "api";r=0;t=1`. w must be whole seconds, so a policy whose
// window is not (a bucket of 20 refilled at 100/s has a 200 ms window) is
// scaled to the next whole second with its quota in proportion (q=100;w=1;
// wholeSecondPolicy gives the mapping of each algorithm); r is the units
// remaining, t the seconds until the quota is whole again,
// rounded up.
func (r Rejection) WriteHeaders(h http.Header) int64 {
	a := r.Answer()
	a.SetFields(h)
	return a.RetryAfter
}

// SetFields sets a's fields on h: Retry-After, Sluice-Reason, and with
// RateLimit the RateLimit-Policy and RateLimit fields.
func (a *Answer) SetFields(h http.Header) {
	h[HeaderRetryAfter] = intValue(a.RetryAfter)
	if int(a.Reason) < len(reasonValues) {
		h[HeaderReason] = reasonValues[a.Reason]
	}
	if a.RateLimit {
		var buf [192]byte
		b := a.appendPolicy(buf[:0])
		policyEnd := len(b)
		b = a.appendLimit(b)
		s := string(b)
		v := []string{s[:policyEnd], s[policyEnd:]}
		h[HeaderRateLimitPolicy] = v[0:1:1]
		h[HeaderRateLimit] = v[1:2:2]
	}
}

// AppendHead appends a's fields in their HTTP/1.1 wire form to b, for a
// server that writes its responses itself: those WriteResponse sets
// (Content-Type, X-Content-Type-Options, Content-Length of Body) and those
// of SetFields ("Retry-After: 2\r\nSluice-Reason: rate\r\n", and the
// RateLimit fields). The status line, the connection's own fields and the
// blank line are the caller's. It does not allocate when b has room.
func (a *Answer) AppendHead(b []byte) []byte {
	b = append(b, "Content-Type: "+textPlainValue+"\r\nX-Content-Type-Options: nosniff\r\nContent-Length: "...)
	b = append(b, a.body().length[0]...)
	b = append(b, "\r\n"+HeaderRetryAfter+": "...)
	b = strconv.AppendInt(b, a.RetryAfter, 10)
	b = append(b, "\r\n"...)
	if int(a.Reason) < len(reasonValues) {
		b = append(b, HeaderReason+": "...)
		b = append(b, reasonValues[a.Reason][0]...)
		b = append(b, "\r\n"...)
	}
	if a.RateLimit {
		b = append(b, "RateLimit-Policy: "...)
		b = a.appendPolicy(b)
		b = append(b, "\r\nRateLimit: "...)
		b = a.appendLimit(b)
		b = append(b, "\r\n"...)
	}
	return b
}

// Policy returns the RateLimit-Policy field's value, "" without RateLimit.
func (a *Answer) Policy() string {
	if !a.RateLimit {
		return ""
	}
	return string(a.appendPolicy(nil))
}

// Limit returns the RateLimit field's value, "" without RateLimit.
func (a *Answer) Limit() string {
	if !a.RateLimit {
		return ""
	}
	return string(a.appendLimit(nil))
}

// Body returns the one-line text the answer's body is ("too many requests
// (rate)\n"); shared by every answer of its reason: never modify it.
func (a *Answer) Body() []byte { return a.body().text }

func (a *Answer) body() *answerBody {
	reason := a.Reason
	if int(reason) >= len(bodies) {
		reason = adaptive.RejectNone
	}
	return &bodies[reason][b2i(a.Status == http.StatusTooManyRequests)]
}

// WriteResponse answers the rejected request: SetFields, Content-Type,
// X-Content-Type-Options and Content-Length, then the status (429 or 503)
// and a one-line plain-text body naming the reason.
func (a *Answer) WriteResponse(w http.ResponseWriter) {
	h := w.Header()
	a.SetFields(h)
	b := a.body()
	h["Content-Type"] = textPlain
	h["Content-Length"] = b.length
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(a.Status)
	_, _ = w.Write(b.text) // the client may be gone: nothing to do
}

// WriteResponse answers the rejected request with its Answer.
func (r Rejection) WriteResponse(w http.ResponseWriter) {
	a := r.Answer()
	a.WriteResponse(w)
}

const textPlainValue = "text/plain; charset=utf-8"

var (
	textPlain = one(textPlainValue)
	noSniff   = one("nosniff")
)

// bodies holds the response body of every reason, for overload [0] and for
// a client over its quota [1]: "service overloaded (queue_full)", "too many
// requests (rate)", and "upstream failing (circuit_open)" for the breaker.
var bodies = func() (b [adaptive.NumRejections][2]answerBody) {
	for i := range b {
		for k, lead := range [2]string{"service overloaded", "too many requests"} {
			if adaptive.RejectReason(i) == adaptive.RejectCircuitOpen && k == 0 {
				lead = "upstream failing" // not overload: the breaker opened on its failures
			}
			s := lead + " (" + adaptive.RejectReason(i).String() + ")\n"
			b[i][k].text, b[i][k].length = []byte(s), one(strconv.Itoa(len(s)))
		}
	}
	return b
}()

// answerBody is a refusal's body and its Content-Length value.
type answerBody struct {
	text   []byte
	length []string
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendPolicy appends the RateLimit-Policy value: "group";q=Q;w=W.
func (a *Answer) appendPolicy(b []byte) []byte {
	return appendItem(b, a.Group, ";q=", a.Quota, ";w=", a.Window)
}

// appendLimit appends the RateLimit value: "group";r=R;t=T.
func (a *Answer) appendLimit(b []byte) []byte {
	return appendItem(b, a.Group, ";r=", a.Remaining, ";t=", a.Reset)
}

// appendItem appends a structured field (RFC 9651) list of one item: name
// as an sf-string, with the integer parameters k1 (";q=") v1 and k2 v2.
func appendItem(b []byte, name, k1 string, v1 int64, k2 string, v2 int64) []byte {
	b = appendSFString(b, name)
	b = append(b, k1...)
	b = strconv.AppendInt(b, v1, 10)
	b = append(b, k2...)
	return strconv.AppendInt(b, v2, 10)
}

// wholeSecondPolicy expresses p as q units per w whole seconds, with the
// promise that a client sending at most q per w seconds, evenly spaced, is
// never refused (TestRateLimitPolicyIsSafe checks it for every algorithm):
// what p promises to such a client (Quota - Shortfall per Window) with its
// window rounded up to a whole second (at least one) and its quota scaled in
// proportion, rounded down. A window of one unit short (the weighted sliding
// window of Limit 1) is promised 1 per two windows. So, per algorithm:
//
//   - token bucket and leaky bucket (rate r/s, burst b): b per b/r seconds,
//     scaled: 2/s burst 3 is q=4;w=2 (2/s sustained), 100/s burst 20 is
//     q=100;w=1;
//   - fixed window, sliding log, sliding buckets (N per t): N per t, scaled
//     when t is not whole seconds: 10 per 1.5 s is q=13;w=2;
//   - sliding window (N per t): N-1 per t, scaled: 10 per 1 s is q=9;w=1.
func wholeSecondPolicy(p limits.Policy) (q, w int64) {
	quota, window := p.Quota-max(p.Shortfall, 0), p.Window
	if quota < 1 && p.Quota >= 1 {
		quota, window = 1, 2*window
	}
	if window <= 0 {
		return max(quota, 0), 1
	}
	w = max(ceilSeconds(window), 1)
	if time.Duration(w)*time.Second == window {
		return quota, w
	}
	scaled := float64(quota) * float64(time.Duration(w)*time.Second) / float64(window)
	return int64(min(scaled, 1<<62)), w
}

// ceilSeconds rounds d up to whole seconds, 0 for d ≤ 0, at most a day.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return min(int64((d-1)/time.Second)+1, maxRetryAfter)
}

// appendSFString appends s as an RFC 9651 sf-string: quoted, '"' and '\'
// escaped, bytes outside printable ASCII dropped, at most 64 characters; an
// empty result is "default".
func appendSFString(b []byte, s string) []byte {
	const maxLen = 64
	b = append(b, '"')
	start, n := len(b), 0
	for i := 0; i < len(s) && n < maxLen; i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			continue
		}
		if c == '"' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, c)
		n++
	}
	if len(b) == start {
		b = append(b, "default"...)
	}
	return append(b, '"')
}
