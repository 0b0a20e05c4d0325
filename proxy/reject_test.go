package proxy

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRetryAfterSeconds(t *testing.T) {
	for _, tc := range []struct {
		d        time.Duration
		min, max int64
	}{
		{0, 1, 2},
		{-time.Second, 1, 2},
		{time.Millisecond, 1, 2},
		{time.Second, 1, 2},
		{time.Second + 1, 2, 3},
		{2 * time.Second, 2, 3},
		{2500 * time.Millisecond, 3, 5},
		{10 * time.Second, 10, 15},
		{time.Hour, 3600, 5400},
		{1000 * time.Hour, 86400, 129600},
	} {
		seen := map[int64]bool{}
		for u := uint64(0); u < 64; u++ {
			got := retryAfterSeconds(tc.d, u*0x9E3779B97F4A7C15)
			if got < tc.min || got > tc.max {
				t.Fatalf("retryAfterSeconds(%v) = %d, want in [%d, %d]", tc.d, got, tc.min, tc.max)
			}
			seen[got] = true
		}
		// Both ends of the range are reachable: the jitter is real.
		if got := retryAfterSeconds(tc.d, 0); got != tc.min {
			t.Errorf("retryAfterSeconds(%v, 0) = %d, want %d", tc.d, got, tc.min)
		}
		spread := uint64(tc.max - tc.min)
		if got := retryAfterSeconds(tc.d, spread); got != tc.max {
			t.Errorf("retryAfterSeconds(%v, %d) = %d, want %d", tc.d, spread, got, tc.max)
		}
		if len(seen) < 2 {
			t.Errorf("retryAfterSeconds(%v) took one value over 64 random words", tc.d)
		}
	}
}

func TestRejectionRate(t *testing.T) {
	rec := httptest.NewRecorder()
	writeRejection(rec, grpcNone, "", Rejection{
		Kind: RejectRate, Reason: ReasonRate, RetryAfter: 1500 * time.Millisecond,
		Quota: Quota{Policy: "per-tenant", Limit: 100, Window: time.Minute, Remaining: 0, Reset: 1500 * time.Millisecond},
	})
	res := rec.Result()
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429", res.StatusCode)
	}
	ra, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || ra < 2 || ra > 3 {
		t.Errorf("Retry-After %q, want 2 or 3", res.Header.Get("Retry-After"))
	}
	for k, want := range map[string]string{
		"Sluice-Reason":    "rate",
		"RateLimit-Policy": `"per-tenant";q=100;w=60`,
		"RateLimit":        `"per-tenant";r=0;t=2`,
		"Content-Type":     "text/plain; charset=utf-8",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if body := rec.Body.String(); body != "too many requests (rate)\n" {
		t.Errorf("body %q", body)
	}
	if res.Header.Get("Content-Length") != strconv.Itoa(rec.Body.Len()) {
		t.Errorf("Content-Length %q for %d bytes", res.Header.Get("Content-Length"), rec.Body.Len())
	}
}

func TestRejectionOverload(t *testing.T) {
	for _, reason := range []Reason{ReasonConcurrency, ReasonQueueTimeout, ReasonQueueFull, ReasonCPU, ReasonMemory, ReasonPriority, ReasonCircuitOpen} {
		rec := httptest.NewRecorder()
		writeRejection(rec, grpcNone, "", Rejection{Kind: RejectOverload, Reason: reason, Quota: Quota{Limit: 5}})
		res := rec.Result()
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%v: status %d, want 503", reason, res.StatusCode)
		}
		if got := res.Header.Get("Sluice-Reason"); got != reason.String() {
			t.Errorf("Sluice-Reason %q, want %q", got, reason)
		}
		if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("%v: Retry-After %q", reason, res.Header.Get("Retry-After"))
		}
		if res.Header.Get("RateLimit") != "" || res.Header.Get("RateLimit-Policy") != "" {
			t.Errorf("%v: RateLimit fields on an overload rejection", reason)
		}
	}
}

func TestRejectionRateWithoutQuota(t *testing.T) {
	rec := httptest.NewRecorder()
	writeRejection(rec, grpcNone, "", Rejection{Kind: RejectRate, Reason: ReasonRate})
	if rec.Code != 429 || rec.Header().Get("RateLimit") != "" {
		t.Fatalf("status %d, RateLimit %q", rec.Code, rec.Header().Get("RateLimit"))
	}
}

func TestRejectionGRPC(t *testing.T) {
	for _, tc := range []struct {
		kind   RejectKind
		status string
	}{{RejectOverload, "14"}, {RejectRate, "8"}} {
		rec := httptest.NewRecorder()
		writeRejection(rec, grpcNative, "application/grpc+proto", Rejection{Kind: tc.kind, Reason: ReasonQueueFull, RetryAfter: 3 * time.Second})
		h := rec.Header()
		if rec.Code != 200 || rec.Body.Len() != 0 {
			t.Fatalf("status %d, %d body bytes; want a trailers-only 200", rec.Code, rec.Body.Len())
		}
		if h.Get("Grpc-Status") != tc.status || h.Get("Content-Type") != "application/grpc" {
			t.Errorf("grpc-status %q content-type %q", h.Get("Grpc-Status"), h.Get("Content-Type"))
		}
		if !strings.Contains(h.Get("Grpc-Message"), "queue_full") || h.Get("Sluice-Reason") != "queue_full" {
			t.Errorf("grpc-message %q, reason %q", h.Get("Grpc-Message"), h.Get("Sluice-Reason"))
		}
		ms, err := strconv.Atoi(h.Get("Grpc-Retry-Pushback-Ms"))
		if err != nil || ms < 3000 || ms > 5000 || ms%1000 != 0 {
			t.Errorf("grpc-retry-pushback-ms %q", h.Get("Grpc-Retry-Pushback-Ms"))
		}
	}
	rec := httptest.NewRecorder()
	writeRejection(rec, grpcWeb, "application/grpc-web-text", Rejection{})
	if rec.Header().Get("Content-Type") != "application/grpc-web-text" || rec.Header().Get("Grpc-Status") != "14" {
		t.Errorf("grpc-web: content-type %q status %q", rec.Header().Get("Content-Type"), rec.Header().Get("Grpc-Status"))
	}
}

func TestRejectionOutOfRangeValues(t *testing.T) {
	rec := httptest.NewRecorder()
	writeRejection(rec, grpcNone, "", Rejection{Kind: 7, Reason: 200})
	if rec.Code != 503 || rec.Header().Get("Sluice-Reason") != "none" {
		t.Fatalf("status %d reason %q", rec.Code, rec.Header().Get("Sluice-Reason"))
	}
}

func TestSetRateLimitFields(t *testing.T) {
	for _, tc := range []struct {
		q            Quota
		policy, rate string
	}{
		{Quota{Limit: 10, Window: time.Second}, `"default";q=10;w=1`, `"default";r=0;t=0`},
		{Quota{Policy: `a"b\c`, Limit: 10, Window: 1500 * time.Millisecond, Remaining: 3, Reset: 100 * time.Millisecond}, `"a\"b\\c";q=10;w=2`, `"a\"b\\c";r=3;t=1`},
		{Quota{Policy: "t\x00\nx\xff", Limit: 1, Window: -time.Second, Remaining: -2, Reset: -time.Second}, `"tx";q=1;w=1`, `"tx";r=0;t=0`},
		{Quota{Policy: strings.Repeat("p", 300), Limit: 1 << 40, Window: 24 * time.Hour}, `"` + strings.Repeat("p", 64) + `";q=1099511627776;w=86400`, `"` + strings.Repeat("p", 64) + `";r=0;t=0`},
	} {
		h := http.Header{}
		setRateLimitFields(h, &tc.q)
		if got := h.Get("RateLimit-Policy"); got != tc.policy {
			t.Errorf("RateLimit-Policy %q, want %q", got, tc.policy)
		}
		if got := h.Get("RateLimit"); got != tc.rate {
			t.Errorf("RateLimit %q, want %q", got, tc.rate)
		}
	}
}

func TestReasonAndOutcomeNames(t *testing.T) {
	want := []string{"none", "rate", "concurrency", "queue_timeout", "queue_full", "cpu", "memory", "priority", "circuit_open"}
	for i, w := range want {
		if got := Reason(i).String(); got != w {
			t.Errorf("Reason(%d) = %q, want %q", i, got, w)
		}
	}
	if Reason(len(want)).String() != "unknown" || Outcome(3).String() != "unknown" {
		t.Error("out-of-range names")
	}
	for o, w := range map[Outcome]string{OutcomeSuccess: "success", OutcomeDropped: "dropped", OutcomeIgnored: "ignored"} {
		if o.String() != w {
			t.Errorf("%d.String() = %q", o, o.String())
		}
	}
}

func TestWriteRejectionAllocations(t *testing.T) {
	w := &benchWriter{h: make(http.Header)}
	rej := Rejection{Kind: RejectOverload, Reason: ReasonConcurrency, RetryAfter: 2 * time.Second}
	n := testing.AllocsPerRun(100, func() {
		clear(w.h)
		writeRejection(w, grpcNone, "", rej)
	})
	if n != 0 {
		t.Errorf("an overload rejection allocates %v times, want 0", n)
	}
}
