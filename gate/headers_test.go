package gate

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/limits"
)

func TestRetryAfterSeconds(t *testing.T) {
	cases := []struct {
		d        time.Duration
		min, max int64
	}{
		{0, 1, 2},
		{time.Millisecond, 1, 2},
		{time.Second, 1, 2},
		{time.Second + 1, 2, 3},
		{2500 * time.Millisecond, 3, 5},
		{10 * time.Second, 10, 15},
		{limits.InfDuration, 86400, 86400 + 43200},
	}
	for _, c := range cases {
		seen := map[int64]bool{}
		for u := range uint64(64) {
			s := retryAfterSeconds(c.d, u)
			if s < c.min || s > c.max {
				t.Fatalf("retryAfterSeconds(%v, %d) = %d, want in [%d, %d]", c.d, u, s, c.min, c.max)
			}
			seen[s] = true
		}
		if span := c.max - c.min + 1; span <= 64 && int64(len(seen)) != span {
			t.Errorf("retryAfterSeconds(%v) takes %d values, want every second of [%d, %d]", c.d, len(seen), c.min, c.max)
		}
	}
}

func TestWholeSecondPolicy(t *testing.T) {
	cases := []struct {
		p    limits.Policy
		q, w int64
	}{
		{limits.Policy{Quota: 100, Window: time.Second}, 100, 1},
		{limits.Policy{Quota: 20, Window: 200 * time.Millisecond}, 100, 1}, // a bucket of 20 at 100/s
		{limits.Policy{Quota: 10, Window: 1500 * time.Millisecond}, 13, 2},
		{limits.Policy{Quota: 5, Window: time.Minute}, 5, 60},
		{limits.Policy{Quota: 1, Window: 3 * time.Nanosecond}, 333333333, 1},
		{limits.Policy{Quota: 7}, 7, 1},
	}
	for _, c := range cases {
		if q, w := wholeSecondPolicy(c.p); q != c.q || w != c.w {
			t.Errorf("wholeSecondPolicy(%v per %v) = q=%d;w=%d, want q=%d;w=%d", c.p.Quota, c.p.Window, q, w, c.q, c.w)
		}
	}
}

func TestAppendSFString(t *testing.T) {
	cases := map[string]string{
		"api":        `"api"`,
		`a"b\c`:      `"a\"b\\c"`,
		"x\x00y\xff": `"xy"`,
		"":           `"default"`,
		"\x01":       `"default"`,
	}
	for in, want := range cases {
		if got := string(appendSFString(nil, in)); got != want {
			t.Errorf("appendSFString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestWriteHeaders(t *testing.T) {
	r := Rejection{Reason: adaptive.RejectRate, Group: "api", RetryAfter: 3 * time.Second,
		Rate:   limits.Result{Limit: 20, Remaining: 0, ResetAfter: 1500 * time.Millisecond},
		Policy: limits.Policy{Quota: 20, Window: 200 * time.Millisecond}}
	h := http.Header{}
	secs := r.WriteHeaders(h)
	if secs < 3 || secs > 5 || h.Get("Retry-After") != smallValues[secs][0] {
		t.Errorf("Retry-After %q (returned %d), want 3 to 5", h.Get("Retry-After"), secs)
	}
	if got := h.Get("RateLimit-Policy"); got != `"api";q=100;w=1` {
		t.Errorf("RateLimit-Policy %s", got)
	}
	if got := h.Get("RateLimit"); got != `"api";r=0;t=2` {
		t.Errorf("RateLimit %s", got)
	}
	// Only "rate" carries the rate-limit fields; every reason names itself.
	for why := adaptive.RejectReason(1); int(why) < adaptive.NumRejections; why++ {
		w := httptest.NewRecorder()
		Rejection{Reason: why, Group: "g", RetryAfter: time.Second, Policy: r.Policy}.WriteResponse(w)
		res := w.Result()
		if res.Header.Get("Sluice-Reason") != why.String() {
			t.Errorf("%v: Sluice-Reason %q", why, res.Header.Get("Sluice-Reason"))
		}
		wantStatus := 503
		if why == adaptive.RejectRate || why == adaptive.RejectFairShare {
			wantStatus = 429
		}
		if res.StatusCode != wantStatus {
			t.Errorf("%v: status %d, want %d", why, res.StatusCode, wantStatus)
		}
		if has := res.Header.Get("RateLimit") != ""; has != (why == adaptive.RejectRate) {
			t.Errorf("%v: RateLimit field present = %v", why, has)
		}
	}
}

// FuzzSFString checks that a policy name always becomes a valid RFC 9651
// sf-string that decodes to the name's printable ASCII.
func FuzzSFString(f *testing.F) {
	for _, s := range []string{"default", `a"b\c`, "", "\x00\xff", strings.Repeat("x", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		b := appendSFString(nil, name)
		if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
			t.Fatalf("%q: not quoted: %q", name, b)
		}
		var dec []byte
		for i := 1; i < len(b)-1; i++ {
			c := b[i]
			if c < 0x20 || c > 0x7e {
				t.Fatalf("%q: byte %#x in %q", name, c, b)
			}
			if c == '\\' {
				i++
				if i >= len(b)-1 || (b[i] != '"' && b[i] != '\\') {
					t.Fatalf("%q: bad escape in %q", name, b)
				}
				c = b[i]
			} else if c == '"' {
				t.Fatalf("%q: unescaped quote in %q", name, b)
			}
			dec = append(dec, c)
		}
		var want []byte
		for i := 0; i < len(name) && len(want) < 64; i++ {
			if c := name[i]; c >= 0x20 && c <= 0x7e {
				want = append(want, c)
			}
		}
		if len(want) == 0 {
			want = []byte("default")
		}
		if !bytes.Equal(dec, want) {
			t.Fatalf("%q decodes to %q, want %q", name, dec, want)
		}
	})
}

// TestWriteResponseBodies checks the one-line bodies: overload, a client's
// quota, and the breaker, which is an upstream failure, not overload.
func TestWriteResponseBodies(t *testing.T) {
	for _, c := range []struct {
		reason adaptive.RejectReason
		status int
		body   string
	}{
		{adaptive.RejectQueueFull, 503, "service overloaded (queue_full)\n"},
		{adaptive.RejectFairShare, 429, "too many requests (fair_share)\n"},
		{adaptive.RejectCircuitOpen, 503, "upstream failing (circuit_open)\n"},
	} {
		rec := httptest.NewRecorder()
		Rejection{Reason: c.reason}.WriteResponse(rec)
		if rec.Code != c.status || rec.Body.String() != c.body {
			t.Errorf("%v: %d %q, want %d %q", c.reason, rec.Code, rec.Body.String(), c.status, c.body)
		}
	}
}
