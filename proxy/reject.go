package proxy

import (
	"net/http"
	"strconv"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
)

// Response header names the proxy sets on responses it writes itself.
const (
	headerError       = "Sluice-Error" // what failed when the proxy answers 502/504
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
	textPlain            = one("text/plain; charset=utf-8")
	grpcContentType      = one("application/grpc")
	noSniff              = one("nosniff")
	grpcUnavailableValue = one(strconv.Itoa(grpcUnavailable))
	grpcExhaustedValue   = one(strconv.Itoa(grpcResourceExhausted))
)

// grpcMessages holds the grpc-message of every rejection reason; only printable
// ASCII without '%', so no percent-encoding is needed.
var grpcMessages = func() (m [adaptive.NumRejections][]string) {
	for r := range m {
		m[r] = one("sluice: rejected (" + adaptive.RejectReason(r).String() + ")")
	}
	return m
}()

// pushbackValues holds grpc-retry-pushback-ms for Retry-After values of 1 to
// 60 seconds, so the common rejections cost no allocation.
var pushbackValues = func() (v [61][]string) {
	for i := range v {
		v[i] = one(strconv.Itoa(i * 1000))
	}
	return v
}()

// writeRejection answers a request the gate (or the circuit breaker) turned
// away. An HTTP request gets the gate's own answer, Rejection.WriteResponse: 429
// or 503 with a jittered Retry-After, Sluice-Reason and, for a rate limit, the
// RateLimit-Policy and RateLimit fields. A gRPC request gets a trailers-only gRPC
// response built from the same figures instead (HTTP 200 carrying those fields,
// grpc-status RESOURCE_EXHAUSTED (8) when the client is over its quota, "rate"
// or "fair_share", else UNAVAILABLE (14), and grpc-retry-pushback-ms with the
// same jittered delay), which gRPC clients read as the call's status. Nothing
// of the request body is read.
//
// ct is the request's Content-Type, echoed to grpc-web clients.
func writeRejection(w http.ResponseWriter, g grpcKind, ct string, rej *gate.Rejection) {
	if g == grpcNone {
		if hw, ok := w.(*h1Writer); ok {
			hw.refuse(rej) // the own server's: prebuilt bytes, no allocation
			return
		}
		rej.WriteResponse(w)
		return
	}
	secs := rej.WriteHeaders(w.Header())
	reason := rej.Reason
	if int(reason) >= len(grpcMessages) {
		reason = adaptive.RejectNone
	}
	writeGRPCStatus(w, g, ct, rej.OverQuota(), grpcMessages[reason], secs)
}

// writeGRPCStatus writes a trailers-only gRPC response carrying a failure status:
// RESOURCE_EXHAUSTED when exhausted, else UNAVAILABLE. pushbackSecs ≤ 0 omits
// grpc-retry-pushback-ms. ct is the request's Content-Type.
func writeGRPCStatus(w http.ResponseWriter, g grpcKind, ct string, exhausted bool, msg []string, pushbackSecs int64) {
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
	switch {
	case pushbackSecs <= 0:
	case pushbackSecs < int64(len(pushbackValues)):
		h[headerGRPCPush] = pushbackValues[pushbackSecs]
	default:
		h[headerGRPCPush] = one(strconv.FormatInt(pushbackSecs*1000, 10))
	}
	w.WriteHeader(http.StatusOK)
}
