package redis

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limits"
)

func TestParseReply(t *testing.T) {
	good := []struct {
		in   string
		want limits.Result
	}{
		{"1 4 0 200000000", limits.Result{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: 200 * time.Millisecond}},
		{"0 0 -1 0", limits.Result{Limit: 5, RetryAfter: limits.InfDuration}},
		{"0 0 123 999999999999999999", limits.Result{Limit: 5, RetryAfter: 123, ResetAfter: 999999999999999999}},
	}
	for _, c := range good {
		got, err := parseReply(c.in, 5)
		if err != nil || got != c.want {
			t.Errorf("parseReply(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{
		"", "1", "1 2 3", "1 2 3 4 5", "1 2 3 4 ", " 1 2 3 4", "1  2 3 4", "2 0 0 0", "1 6 0 0",
		"1 -1 0 0", "0 0 -2 0", "0 0 0 -1", "1 2 3 4x", "x 2 3 4", "1 2 3 1000000000000000000", "- 2 3 4", "01 2 3 4", "0 0 -0 0",
	} {
		if r, err := parseReply(in, 5); err == nil {
			t.Errorf("parseReply(%q) = %+v, want an error", in, r)
		}
	}
}

// FuzzParseReply: a reply from Redis (or something posing as it) never
// panics the parser, and what it accepts is a consistent Result that
// formats back to the same reply.
func FuzzParseReply(f *testing.F) {
	for _, s := range []string{"1 4 0 200000000", "0 0 -1 0", "0 3 250 1000", "1 2 3", "9 9 9 9", "0 0 -0 0"} {
		f.Add(s, int64(5))
	}
	f.Fuzz(func(t *testing.T, s string, limit int64) {
		r, err := parseReply(s, limit)
		if err != nil {
			return
		}
		if r.Remaining < 0 || r.Remaining > limit || r.Limit != limit || r.RetryAfter < 0 || r.ResetAfter < 0 {
			t.Fatalf("parseReply(%q, %d) = %+v", s, limit, r)
		}
		retry := int64(r.RetryAfter)
		if r.RetryAfter == limits.InfDuration {
			retry = -1
		}
		ok := 0
		if r.Allowed {
			ok = 1
		}
		if back := fmt.Sprintf("%d %d %d %d", ok, r.Remaining, retry, r.ResetAfter); back != s {
			t.Fatalf("parseReply(%q) = %+v, which formats as %q", s, r, back)
		}
	})
}

func TestBudget(t *testing.T) {
	b := startBudget(time.Hour)
	if b.Err() != nil {
		t.Fatal("a fresh budget has expired")
	}
	b.stop()
	b = startBudget(time.Nanosecond)
	<-b.Done() // the event under test: the timer closes Done
	if b.Err() == nil {
		t.Fatal("Done closed but Err is nil")
	}
	b.stop() // a fired budget is not reused
	for range 100 {
		b := startBudget(time.Hour)
		select {
		case <-b.Done():
			t.Fatal("a reused budget is already done")
		default:
		}
		b.stop()
	}
}
