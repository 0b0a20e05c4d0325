package redis

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limits"
)

// deadAddress is a loopback port where nothing listens: connections are
// refused at once.
func deadAddress(t *testing.T) string {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// TestFallbackPolicies decides with Redis unreachable from the start (a node
// must start and serve while Redis is down) under each policy.
func TestFallbackPolicies(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	open := func(t *testing.T, f limits.Fallback, nodes int) *Limiter {
		l, err := New(Params{
			// A budget of a second: a refused dial is an error, never a
			// timeout (whose late decisions a busy machine's 5ms budget
			// bounded by Overshoot: 29 of the share's 30 admitted).
			StoreParams: StoreParams{Address: deadAddress(t), Fallback: f, Nodes: nodes, Heartbeat: -1, Timeout: time.Second,
				BackoffMin: time.Second, BackoffMax: time.Minute},
			LimiterParams: LimiterParams{Name: "api", Algorithm: SlidingWindow, Limit: 90, Window: time.Minute},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	t.Run("local", func(t *testing.T) {
		l := open(t, limits.FallbackLocal, 3)
		if n := admitted(l, "k", at, 100); n != 30 {
			t.Errorf("admitted %d of 100, want the share 90/3 = 30", n)
		}
		st := l.Status()
		if st.Mode != ModeFallback || st.StoreDecisions != 0 || st.FallbackDecisions != 100 || st.Errors != failThreshold || st.Nodes != 3 {
			t.Errorf("status %+v: want fallback mode after %d errors, then no Redis call", st, failThreshold)
		}
		if !st.NextProbe.After(at) || st.LastError == "" {
			t.Errorf("status %+v: want the next probe after the failures and the last error", st)
		}
	})
	t.Run("open", func(t *testing.T) {
		l := open(t, limits.FallbackOpen, 3)
		want := limits.Result{Allowed: true, Limit: 90, Remaining: 90}
		for range 100 {
			if r := l.AllowAt("k", at, 1); r != want {
				t.Fatalf("got %+v, want %+v", r, want)
			}
		}
	})
	t.Run("closed", func(t *testing.T) {
		l := open(t, limits.FallbackClosed, 3)
		for i := range 10 {
			r := l.AllowAt("k", at, 1)
			if r.Allowed || r.Limit != 90 || r.RetryAfter < time.Second*8/10 {
				t.Fatalf("decision %d: %+v, want refused until the next probe", i, r)
			}
		}
		if r := l.AllowAt("k", at, 0); !r.Allowed {
			t.Errorf("a probe of cost 0: %+v", r)
		}
		if r := l.AllowAt("k", at, 91); r.RetryAfter != limits.InfDuration {
			t.Errorf("n over the limit: %+v", r)
		}
	})
}

// TestClosed: a closed limiter, or one on a closed store, answers by its
// fallback without calling Redis.
func TestClosed(t *testing.T) {
	srv := startServer(t)
	s, err := Open(StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.NewLimiter(LimiterParams{Name: "a", Algorithm: TokenBucket, Rate: 1, Burst: 1})
	b, _ := s.NewLimiter(LimiterParams{Name: "b", Algorithm: TokenBucket, Rate: 1, Burst: 1})
	a.Close()
	a.Allow("k", 1)
	b.Allow("k", 1)
	if st := a.Status(); st.StoreDecisions != 0 || st.FallbackDecisions != 1 {
		t.Errorf("closed limiter: %+v", st)
	}
	if st := b.Status(); st.StoreDecisions != 1 {
		t.Errorf("open limiter: %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.Close() // idempotent
	b.Allow("k", 1)
	if st := b.Status(); st.StoreDecisions != 1 || st.FallbackDecisions != 1 || st.Errors != 0 {
		t.Errorf("limiter on a closed store: %+v", st)
	}
	if _, err := s.NewLimiter(LimiterParams{Name: "c", Algorithm: TokenBucket, Rate: 1, Burst: 1}); err == nil {
		t.Error("NewLimiter on a closed store")
	}
}
