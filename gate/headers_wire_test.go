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

// TestAppendFields: the wire form of a rejection's fields says what
// WriteHeaders sets on a header map, Retry-After within the same jittered
// range, and AppendFields and Body allocate nothing.
func TestAppendFields(t *testing.T) {
	for _, r := range []Rejection{
		{Reason: adaptive.RejectRate, Group: `a "b"`, RetryAfter: 2500 * time.Millisecond,
			Rate:   limits.Result{Remaining: 0, ResetAfter: 1500 * time.Millisecond},
			Policy: limits.Policy{Quota: 20, Window: 200 * time.Millisecond}},
		{Reason: adaptive.RejectQueueFull, Group: "g", RetryAfter: time.Second},
		{Reason: adaptive.RejectCircuitOpen, RetryAfter: 10 * time.Second},
	} {
		t.Run(r.Reason.String(), func(t *testing.T) {
			b, secs := r.AppendFields(nil)
			mh, err := textproto.NewReader(bufio.NewReader(strings.NewReader(string(b) + "\r\n"))).ReadMIMEHeader()
			if err != nil {
				t.Fatalf("%q: %v", b, err)
			}
			got := http.Header(mh)
			want := http.Header{}
			r.WriteHeaders(want)
			if len(got) != len(want) {
				t.Errorf("fields %v, WriteHeaders sets %v", got, want)
			}
			base := int64((r.RetryAfter-1)/time.Second) + 1
			for k, v := range want {
				if k == HeaderRetryAfter {
					if n, _ := strconv.ParseInt(got.Get(k), 10, 64); n != secs || n < base || n > base+(base+1)/2 {
						t.Errorf("Retry-After %q (returned %d), want %d to %d", got.Get(k), secs, base, base+(base+1)/2)
					}
					continue
				}
				if got.Get(k) != v[0] {
					t.Errorf("%s: %q, WriteHeaders sets %q", k, got.Get(k), v[0])
				}
			}
			rec := httptest.NewRecorder()
			r.WriteResponse(rec)
			if string(r.Body()) != rec.Body.String() {
				t.Errorf("Body %q, WriteResponse writes %q", r.Body(), rec.Body.String())
			}
			buf := make([]byte, 0, 512)
			if n := testing.AllocsPerRun(100, func() { buf, _ = r.AppendFields(buf[:0]); _ = r.Body() }); n != 0 {
				t.Errorf("%v allocations", n)
			}
		})
	}
}
