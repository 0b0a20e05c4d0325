package gate

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/limits"
)

// TestAnswerForms: one Answer says the same in every form: the wire
// fields of AppendHead are the header fields WriteResponse sets, to the
// Retry-After, Body is what WriteResponse writes, Retry-After is in the
// jittered range of the rejection's RetryAfter, and AppendHead and Body
// allocate nothing.
func TestAnswerForms(t *testing.T) {
	for _, r := range []Rejection{
		{Reason: adaptive.RejectRate, Group: `a "b"`, RetryAfter: 2500 * time.Millisecond,
			Rate:   limits.Result{Remaining: 0, ResetAfter: 1500 * time.Millisecond},
			Policy: limits.Policy{Quota: 20, Window: 200 * time.Millisecond}},
		{Reason: adaptive.RejectQueueFull, Group: "g", RetryAfter: time.Second},
		{Reason: adaptive.RejectCircuitOpen, RetryAfter: 10 * time.Second},
	} {
		t.Run(r.Reason.String(), func(t *testing.T) {
			a := r.Answer()
			b := a.AppendHead(nil)
			mh, err := textproto.NewReader(bufio.NewReader(strings.NewReader(string(b) + "\r\n"))).ReadMIMEHeader()
			if err != nil {
				t.Fatalf("%q: %v", b, err)
			}
			got := http.Header(mh)
			rec := httptest.NewRecorder()
			a.WriteResponse(rec)
			want := rec.Header()
			if len(got) != len(want) {
				t.Errorf("fields %v, WriteResponse sets %v", got, want)
			}
			for k, v := range want {
				if got.Get(k) != v[0] {
					t.Errorf("%s: %q, WriteResponse sets %q", k, got.Get(k), v[0])
				}
			}
			if rec.Code != a.Status || a.Status != r.Status() {
				t.Errorf("status %d, answer %d, rejection %d", rec.Code, a.Status, r.Status())
			}
			base := int64((r.RetryAfter-1)/time.Second) + 1
			if n, _ := strconv.ParseInt(got.Get(HeaderRetryAfter), 10, 64); n != a.RetryAfter || n < base || n > base+(base+1)/2 {
				t.Errorf("Retry-After %q (answer %d), want %d to %d", got.Get(HeaderRetryAfter), a.RetryAfter, base, base+(base+1)/2)
			}
			if string(a.Body()) != rec.Body.String() {
				t.Errorf("Body %q, WriteResponse writes %q", a.Body(), rec.Body.String())
			}
			if p, l := a.Policy(), a.Limit(); p != want.Get(HeaderRateLimitPolicy) || l != want.Get(HeaderRateLimit) {
				t.Errorf("Policy %q, Limit %q; the fields %q, %q", p, l, want.Get(HeaderRateLimitPolicy), want.Get(HeaderRateLimit))
			}
			buf := make([]byte, 0, 512)
			if n := testing.AllocsPerRun(100, func() { a := r.Answer(); buf = a.AppendHead(buf[:0]); _ = a.Body() }); n != 0 {
				t.Errorf("%v allocations", n)
			}
		})
	}
}
