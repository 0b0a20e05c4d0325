package proxy

import (
	"net/http"
	"strconv"
	"time"
)

// Response header names the proxy sets on responses it writes itself.
const (
	headerReason      = "Sluice-Reason" // why a request was rejected
	headerError       = "Sluice-Error"  // what failed when the proxy answers 502/504
	headerRetryAfter  = "Retry-After"
	headerRLPolicy    = "Ratelimit-Policy" // canonical form of RateLimit-Policy
	headerRL          = "Ratelimit"        // canonical form of RateLimit
	headerGRPCStatus  = "Grpc-Status"
	headerGRPCMessage = "Grpc-Message"
	headerGRPCPush    = "Grpc-Retry-Pushback-Ms"
)

// one returns s as a one-element header value that nothing can append into.
func one(s string) []string { return []string{s}[:1:1] }

// Constant header values, shared by every response: net/http never modifies a
// header value slice, and their capacity equals their length, so an Add by a
// later handler copies rather than writes into them.
var (
	textPlain       = one("text/plain; charset=utf-8")
	grpcContentType = one("application/grpc")
	noSniff         = one("nosniff")
	reasonValues    = func() (v [len(reasonNames)][]string) {
		for i := range v {
			v[i] = one(reasonNames[i])
		}
		return v
	}()
	smallIntValues = func() (v [maxSmallInt + 1][]string) {
		for i := range v {
			v[i] = one(smallInts[i])
		}
		return v
	}()
	grpcUnavailableValue = one(strconv.Itoa(grpcUnavailable))
	grpcExhaustedValue   = one(strconv.Itoa(grpcResourceExhausted))
)

// intValue returns n as a header value, without allocating for small n.
func intValue(n int64) []string {
	if n >= 0 && n <= maxSmallInt {
		return smallIntValues[n]
	}
	return one(strconv.FormatInt(n, 10))
}

// rejectionBodies holds the plain-text body of every (kind, reason) pair.
var rejectionBodies = func() (b [2][len(reasonNames)]struct {
	text   []byte
	length []string
}) {
	for k := range b {
		for r := range b[k] {
			s := "service overloaded (" + reasonNames[r] + ")\n"
			if RejectKind(k) == RejectRate {
				s = "too many requests (" + reasonNames[r] + ")\n"
			}
			b[k][r].text = []byte(s)
			b[k][r].length = one(strconv.Itoa(len(s)))
		}
	}
	return b
}()

// grpcMessages holds the grpc-message of every reason; only printable ASCII
// without '%', so no percent-encoding is needed.
var grpcMessages = func() (m [len(reasonNames)][]string) {
	for r := range m {
		m[r] = one("sluice: rejected (" + reasonNames[r] + ")")
	}
	return m
}()

// writeRejection answers a rejected request: 429 for a rate limit, 503 for
// overload, with a jittered Retry-After, Sluice-Reason and, for a rate limit with
// a quota, the RateLimit-Policy and RateLimit fields. A gRPC request gets a
// trailers-only gRPC response instead (HTTP 200, grpc-status RESOURCE_EXHAUSTED (8)
// or UNAVAILABLE (14), grpc-retry-pushback-ms with the same jittered delay), which
// gRPC clients read as the call's status. Nothing of the request body is read.
//
// ct is the request's Content-Type, echoed to grpc-web clients.
func writeRejection(w http.ResponseWriter, g grpcKind, ct string, rej Rejection) {
	kind := rej.Kind
	if kind != RejectRate {
		kind = RejectOverload
	}
	reason := rej.Reason
	if int(reason) >= len(reasonNames) {
		reason = ReasonNone
	}
	secs := jitteredRetryAfter(rej.RetryAfter)
	h := w.Header()
	h[headerReason] = reasonValues[reason]
	h[headerRetryAfter] = intValue(secs)
	if kind == RejectRate && rej.Quota.Limit > 0 {
		setRateLimitFields(h, &rej.Quota)
	}
	if g != grpcNone {
		writeGRPCStatus(w, g, ct, kind == RejectRate, grpcMessages[reason], secs*1000)
		return
	}
	body := &rejectionBodies[kind][reason]
	h["Content-Type"] = textPlain
	h["Content-Length"] = body.length
	h["X-Content-Type-Options"] = noSniff
	if kind == RejectRate {
		w.WriteHeader(http.StatusTooManyRequests)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write(body.text) // the client may be gone; nothing to do
}

// writeGRPCStatus writes a trailers-only gRPC response carrying a failure status:
// RESOURCE_EXHAUSTED when exhausted, else UNAVAILABLE. pushbackMs < 0 omits
// grpc-retry-pushback-ms. ct is the request's Content-Type.
func writeGRPCStatus(w http.ResponseWriter, g grpcKind, ct string, exhausted bool, msg []string, pushbackMs int64) {
	h := w.Header()
	if g == grpcWeb {
		// A grpc-web client expects its own content type (and encoding) back.
		h["Content-Type"] = one(ct)
	} else {
		h["Content-Type"] = grpcContentType
	}
	if exhausted {
		h[headerGRPCStatus] = grpcExhaustedValue
	} else {
		h[headerGRPCStatus] = grpcUnavailableValue
	}
	h[headerGRPCMessage] = msg
	if pushbackMs >= 0 {
		h[headerGRPCPush] = intValue(pushbackMs)
	}
	w.WriteHeader(http.StatusOK)
}

// setRateLimitFields sets RateLimit-Policy and RateLimit
// (draft-ietf-httpapi-ratelimit-headers-10, structured fields of RFC 8941: one list
// member, the policy name as an sf-string with integer parameters).
func setRateLimitFields(h http.Header, q *Quota) {
	var buf [256]byte
	b := buf[:0]
	b = appendSFString(b, q.Policy)
	nameEnd := len(b)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, max(q.Limit, 0), 10)
	b = append(b, ";w="...)
	b = strconv.AppendInt(b, max(ceilSeconds(q.Window), 1), 10)
	policyEnd := len(b)
	b = append(b, buf[:nameEnd]...)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, max(q.Remaining, 0), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, ceilSeconds(q.Reset), 10)
	s := string(b)
	v := []string{s[:policyEnd], s[policyEnd:]}
	h[headerRLPolicy] = v[0:1:1]
	h[headerRL] = v[1:2:2]
}

// ceilSeconds rounds d up to whole seconds; negative d gives 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// appendSFString appends s as an RFC 8941 sf-string: quoted, with '"' and '\'
// escaped; bytes outside printable ASCII are dropped, and the name is cut at 64
// characters. An empty result becomes "default".
func appendSFString(b []byte, s string) []byte {
	const maxLen = 64
	b = append(b, '"')
	start := len(b)
	n := 0
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
