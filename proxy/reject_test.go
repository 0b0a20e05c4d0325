package proxy

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/limits"
)

// rateRejection is a rejection as the gate gives it for a token bucket of 20
// refilled at 100/s: its 200 ms window is rendered as q=100;w=1.
var rateRejection = gate.Rejection{Reason: adaptive.RejectRate, Group: "api", RetryAfter: 3 * time.Second,
	Rate:   limits.Result{Limit: 20, Remaining: 0, ResetAfter: 1500 * time.Millisecond},
	Policy: limits.Policy{Quota: 20, Window: 200 * time.Millisecond}}

// TestRejectionHTTPIsTheGates checks that an HTTP rejection is exactly what the
// gate renders (Rejection.WriteResponse): the proxy adds nothing of its own.
func TestRejectionHTTPIsTheGates(t *testing.T) {
	for why := adaptive.RejectReason(1); int(why) < adaptive.NumRejections; why++ {
		rej := rateRejection
		rej.Reason = why
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		writeRejection(got, grpcNone, "", &rej)
		rej.WriteResponse(want)
		// Retry-After is jittered: compare it by range, the rest exactly.
		for _, rec := range []*httptest.ResponseRecorder{got, want} {
			if ra, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || ra < 3 || ra > 5 {
				t.Errorf("%v: Retry-After %q, want 3 to 5", why, rec.Header().Get("Retry-After"))
			}
			rec.Header().Del("Retry-After")
		}
		if got.Code != want.Code || got.Body.String() != want.Body.String() || !equalHeaders(got.Header(), want.Header()) {
			t.Errorf("%v: proxy wrote %d %v %q, gate writes %d %v %q", why, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
	}
	rec := httptest.NewRecorder()
	writeRejection(rec, grpcNone, "", &rateRejection)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("RateLimit-Policy") != `"api";q=100;w=1` || rec.Header().Get("RateLimit") != `"api";r=0;t=2` {
		t.Errorf("rate rejection: %d %v", rec.Code, rec.Header())
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}

// TestRejectionGRPC checks the trailers-only gRPC rejection: RESOURCE_EXHAUSTED
// (8) for a client over its quota (rate, fair_share), UNAVAILABLE (14) for
// overload, the gate's fields, and a pushback equal to Retry-After.
func TestRejectionGRPC(t *testing.T) {
	for why := adaptive.RejectReason(1); int(why) < adaptive.NumRejections; why++ {
		rej := rateRejection
		rej.Reason = why
		rec := httptest.NewRecorder()
		writeRejection(rec, grpcNative, "application/grpc+proto", &rej)
		h := rec.Header()
		if rec.Code != 200 || rec.Body.Len() != 0 {
			t.Fatalf("%v: status %d, %d body bytes; want a trailers-only 200", why, rec.Code, rec.Body.Len())
		}
		wantStatus := "14"
		if why == adaptive.RejectRate || why == adaptive.RejectFairShare {
			wantStatus = "8"
		}
		if h.Get("Grpc-Status") != wantStatus || h.Get("Content-Type") != "application/grpc" {
			t.Errorf("%v: grpc-status %q content-type %q, want %s", why, h.Get("Grpc-Status"), h.Get("Content-Type"), wantStatus)
		}
		if !strings.Contains(h.Get("Grpc-Message"), why.String()) || h.Get("Sluice-Reason") != why.String() {
			t.Errorf("%v: grpc-message %q, reason %q", why, h.Get("Grpc-Message"), h.Get("Sluice-Reason"))
		}
		ra, _ := strconv.Atoi(h.Get("Retry-After"))
		ms, err := strconv.Atoi(h.Get("Grpc-Retry-Pushback-Ms"))
		if err != nil || ra < 3 || ra > 5 || ms != ra*1000 {
			t.Errorf("%v: grpc-retry-pushback-ms %q with Retry-After %q", why, h.Get("Grpc-Retry-Pushback-Ms"), h.Get("Retry-After"))
		}
		if has := h.Get("RateLimit") != ""; has != (why == adaptive.RejectRate) {
			t.Errorf("%v: RateLimit field present = %v", why, has)
		}
	}
	// A long wait is rendered too (beyond the cached values).
	rec := httptest.NewRecorder()
	writeRejection(rec, grpcNative, "application/grpc", &gate.Rejection{Reason: adaptive.RejectCircuitOpen, RetryAfter: time.Hour})
	if ra, _ := strconv.Atoi(rec.Header().Get("Retry-After")); rec.Header().Get("Grpc-Retry-Pushback-Ms") != strconv.Itoa(ra*1000) || ra < 3600 {
		t.Errorf("an hour: Retry-After %q pushback %q", rec.Header().Get("Retry-After"), rec.Header().Get("Grpc-Retry-Pushback-Ms"))
	}
	rec = httptest.NewRecorder()
	writeRejection(rec, grpcWeb, "application/grpc-web-text", &gate.Rejection{Reason: adaptive.RejectConcurrency})
	if rec.Header().Get("Content-Type") != "application/grpc-web-text" || rec.Header().Get("Grpc-Status") != "14" {
		t.Errorf("grpc-web: content-type %q status %q", rec.Header().Get("Content-Type"), rec.Header().Get("Grpc-Status"))
	}
}

func TestRejectionOutOfRangeReason(t *testing.T) {
	rec := httptest.NewRecorder()
	writeRejection(rec, grpcNative, "application/grpc", &gate.Rejection{Reason: 200})
	if rec.Code != 200 || rec.Header().Get("Grpc-Status") != "14" || rec.Header().Get("Grpc-Message") != "sluice: rejected ()" {
		t.Fatalf("status %d grpc-status %q message %q", rec.Code, rec.Header().Get("Grpc-Status"), rec.Header().Get("Grpc-Message"))
	}
}

func TestWriteRejectionAllocations(t *testing.T) {
	w := &benchWriter{h: make(http.Header)}
	overload := gate.Rejection{Reason: adaptive.RejectConcurrency, Group: "api", RetryAfter: 2 * time.Second}
	for _, tc := range []struct {
		name string
		g    grpcKind
	}{{"http", grpcNone}, {"grpc", grpcNative}} {
		n := testing.AllocsPerRun(100, func() {
			clear(w.h)
			writeRejection(w, tc.g, "application/grpc", &overload)
		})
		if n != 0 {
			t.Errorf("%s: an overload rejection allocates %v times, want 0", tc.name, n)
		}
	}
}
