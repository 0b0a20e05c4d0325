package proxy

import (
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/gate"
)

// grpcKind says whether a request speaks gRPC, by its Content-Type.
type grpcKind uint8

const (
	grpcNone   grpcKind = iota
	grpcNative          // application/grpc[+codec]: HTTP/2, status in trailers
	grpcWeb             // application/grpc-web[-text][+codec]: status in a body frame
)

// grpcKindOf classifies a Content-Type value (RFC 9110 media types are
// case-insensitive; gRPC's are "application/grpc" with an optional "+codec" or
// parameters). It does not allocate.
func grpcKindOf(ct string) grpcKind {
	const base = "application/grpc"
	if len(ct) < len(base) || !strings.EqualFold(ct[:len(base)], base) {
		return grpcNone
	}
	rest := ct[len(base):]
	if rest == "" || rest[0] == '+' || rest[0] == ';' {
		return grpcNative
	}
	const web = "-web"
	if len(rest) >= len(web) && strings.EqualFold(rest[:len(web)], web) {
		rest = rest[len(web):]
		if rest == "" || rest[0] == '+' || rest[0] == ';' || rest[0] == '-' {
			return grpcWeb
		}
	}
	return grpcNone
}

// gRPC status codes this package names (google.golang.org/grpc/codes).
const (
	grpcOK                = 0
	grpcCancelled         = 1
	grpcUnknown           = 2
	grpcDeadlineExceeded  = 4
	grpcResourceExhausted = 8
	grpcInternal          = 13
	grpcUnavailable       = 14
	grpcDataLoss          = 15
)

// parseGRPCStatus parses a grpc-status value: a decimal number, optionally with
// surrounding spaces. ok is false for anything else.
func parseGRPCStatus(s string) (code int, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 9 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	return code, true
}

// grpcOutcome classifies a gRPC status code, following gRPC's own mapping of codes
// to HTTP statuses (google/rpc/code.proto) with the overload codes called out:
//
//   - OK → success;
//   - UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED (overload and timeouts) and
//     UNKNOWN, INTERNAL, DATA_LOSS (server faults, HTTP 500) → dropped;
//   - CANCELLED (the caller gave up) and the caller's errors — INVALID_ARGUMENT,
//     NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED, FAILED_PRECONDITION, ABORTED,
//     OUT_OF_RANGE, UNIMPLEMENTED, UNAUTHENTICATED (HTTP 4xx/501) → ignored;
//   - a code outside 0…16 is UNKNOWN, as gRPC clients treat it → dropped.
func grpcOutcome(code int) gate.Outcome {
	switch code {
	case grpcOK:
		return gate.Success
	case grpcDeadlineExceeded, grpcResourceExhausted, grpcUnavailable,
		grpcUnknown, grpcInternal, grpcDataLoss:
		return gate.Dropped
	}
	if code >= 1 && code <= 16 {
		return gate.Ignored
	}
	return gate.Dropped
}

// statusOutcome classifies an HTTP status from the upstream: 5xx dropped, 4xx
// ignored, anything else (1xx, 2xx, 3xx) success.
func statusOutcome(code int) gate.Outcome {
	switch {
	case code >= 500:
		return gate.Dropped
	case code >= 400:
		return gate.Ignored
	}
	return gate.Success
}

// grpcResponseOutcome classifies a gRPC response by its grpc-status, found in the
// trailers (http.TrailerPrefix keys) or, for a trailers-only response or
// grpc-web, in the header. A native gRPC response without a status is dropped
// (clients report INTERNAL); a grpc-web one carries it in the body, unseen here,
// and counts as a success.
func grpcResponseOutcome(h http.Header, g grpcKind) gate.Outcome {
	v := h[http.TrailerPrefix+headerGRPCStatus]
	if len(v) == 0 {
		v = h[headerGRPCStatus]
	}
	if len(v) == 0 {
		if g == grpcWeb {
			return gate.Success
		}
		return gate.Dropped
	}
	code, ok := parseGRPCStatus(v[0])
	if !ok {
		return gate.Dropped
	}
	return grpcOutcome(code)
}
