package redis

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limits"
)

// TestQuotaDefinitionWins: a quota set in Redis (what the admin API's PATCH
// does) applies to every node at its next refresh, wins over each node's
// configuration at a restart and at a reload with a changed configuration,
// and leaves once cleared, each node going back to its own configuration.
func TestQuotaDefinitionWins(t *testing.T) {
	srv := startServer(t)
	node := func(nodes int) *Store {
		s, err := Open(StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second, Nodes: nodes})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	limiter := func(s *Store, p LimiterParams) *Limiter {
		l, err := s.NewLimiter(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	configured := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 10, Burst: 10}
	a := node(2)
	la := limiter(a, configured)
	want := func(l *Limiter, what string, p limits.Policy, version int64) {
		t.Helper()
		if got := l.Policy(); got != p {
			t.Errorf("%s: policy %+v, want %+v", what, got, p)
		}
		if st := l.Status(); st.QuotaVersion != version || st.QuotaError != "" {
			t.Errorf("%s: quota version %d (error %q), want %d", what, st.QuotaVersion, st.QuotaError, version)
		}
	}
	tenPerSecond := limits.Policy{Quota: 10, Window: time.Second}
	want(la, "no definition", tenPerSecond, 0)

	// The PATCH, from any node.
	v, err := a.SetQuota(bg, "api", Quota{Algorithm: TokenBucket, Rate: 100, Burst: 50})
	if err != nil || v != 1 {
		t.Fatalf("SetQuota: version %d, %v", v, err)
	}
	if q, ok, err := a.GetQuota(bg, "api"); err != nil || !ok || q.Rate != 100 || q.Burst != 50 || q.Version != 1 {
		t.Fatalf("GetQuota: %+v %v %v", q, ok, err)
	}
	want(la, "before the refresh", tenPerSecond, 0)
	if err := a.Refresh(bg); err != nil {
		t.Fatal(err)
	}
	fiftyPerHalf := limits.Policy{Quota: 50, Window: 500 * time.Millisecond}
	want(la, "after the refresh", fiftyPerHalf, 1)
	if r := la.Allow("tenant", 1); !r.Allowed || r.Limit != 50 || r.Remaining != 49 {
		t.Errorf("a decision under the definition: %+v", r)
	}
	// The local fallback shares the definition's amounts (2 nodes).
	if p := la.template.(*limits.TokenBucket).Params(); p.Burst != 25 || p.Rate != 50 {
		t.Errorf("fallback share %+v, want half of the definition", p)
	}

	// A restarted node, and a reload with a changed configuration: the
	// definition in Redis wins, from the new limiter's first decision.
	b := node(1)
	want(limiter(b, configured), "a restart", fiftyPerHalf, 1)
	changed := configured
	changed.Rate, changed.Burst = 20, 20
	lc := limiter(b, changed)
	want(lc, "a reload with another configuration", fiftyPerHalf, 1)

	// A second PATCH, then cleared: every node back to its own.
	if v, err := b.SetQuota(bg, "api", Quota{Algorithm: LeakyBucket, Rate: 30, Burst: 30}); err != nil || v != 2 {
		t.Fatalf("second SetQuota: %d %v", v, err)
	}
	a.Refresh(bg)
	want(la, "the second definition (the buckets share their state)", limits.Policy{Quota: 30, Window: time.Second}, 2)
	if err := a.ClearQuota(bg, "api"); err != nil {
		t.Fatal(err)
	}
	a.Refresh(bg)
	b.Refresh(bg)
	want(la, "cleared", tenPerSecond, 0)
	want(lc, "cleared, the reloaded node", limits.Policy{Quota: 20, Window: time.Second}, 0)

	// A definition of an algorithm with another state is not applied, and
	// says why; a damaged one changes nothing.
	if _, err := a.SetQuota(bg, "api", Quota{Algorithm: FixedWindow, Limit: 5, Window: time.Second}); err != nil {
		t.Fatal(err)
	}
	a.Refresh(bg)
	if st := la.Status(); !strings.Contains(st.QuotaError, "fixed_window") || la.Policy() != tenPerSecond {
		t.Errorf("a definition of another algorithm: %q, policy %+v", st.QuotaError, la.Policy())
	}
	srv.Client().HSet(bg, a.defKey("api"), "algorithm", "token_bucket", "version", "x")
	a.Refresh(bg)
	if st := la.Status(); !strings.Contains(st.QuotaError, "malformed") || la.Policy() != tenPerSecond {
		t.Errorf("a damaged definition: %q, policy %+v", st.QuotaError, la.Policy())
	}
	if _, err := a.SetQuota(bg, "api", Quota{Algorithm: TokenBucket, Rate: -1, Burst: 5}); err == nil {
		t.Error("SetQuota accepted a negative rate")
	}
}

// TestQuotaHeartbeatRefresh: the heartbeat applies a new definition by
// itself, to a leased quota too: its next renewals ask with the new
// amounts.
func TestQuotaHeartbeatRefresh(t *testing.T) {
	srv := startServer(t)
	beats := make(chan struct{}, 1)
	s, err := openStore(StoreParams{Address: srv.Addr(), Heartbeat: 10 * time.Millisecond, Timeout: time.Second},
		func(int, error) {
			select {
			case beats <- struct{}{}:
			default:
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.NewLimiter(LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 10, Burst: 10, Sync: limits.SyncLeased,
		Lease: LeaseParams{Period: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetQuota(bg, "api", Quota{Algorithm: TokenBucket, Rate: 1000, Burst: 1000}); err != nil {
		t.Fatal(err)
	}
	<-beats // a beat that may have begun before the change
	<-beats
	if p := l.Policy(); p.Quota != 1000 {
		t.Fatalf("after a heartbeat: policy %+v", p)
	}
	// Leased under the new quota: one node takes more than the old burst.
	admitted := awaitLease(t, l, "", 10*time.Second)
	rounds := l.rounds()
	for admitted <= 10 {
		for range 100 {
			if l.Allow("", 1).Allowed {
				admitted++
			}
		}
		awaitRounds(t, l, rounds, 1)
	}
}

// TestQuotaDefineLeasedThin: Define on a leased limiter refuses amounts its
// lease cannot take, a bucket's burst below rate × lease period (which
// every leased node would refuse to apply), with ErrInvalidQuota and
// nothing written; the configuration's check refuses the same.
func TestQuotaDefineLeasedThin(t *testing.T) {
	srv := startServer(t)
	l := leasedNode(t, srv.Addr(), LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 100, Burst: 40,
		Lease: LeaseParams{Period: 100 * time.Millisecond}})
	for _, q := range []Quota{{Rate: 100, Burst: 5}, {Rate: 1000, Burst: 40}} {
		now, err := l.Define(bg, q)
		if !errors.Is(err, ErrInvalidQuota) || !strings.Contains(err.Error(), "below rate × lease period") {
			t.Errorf("Define %+v: %v, want ErrInvalidQuota for the burst", q, err)
		}
		if now.Rate != 100 || now.Burst != 40 || now.Version != 0 {
			t.Errorf("Define %+v: in force %+v, want the configured quota", q, now)
		}
	}
	if n := srv.Client().Exists(bg, l.s.defKey("api")).Val(); n != 0 {
		t.Errorf("a refused definition was written: %v", srv.Client().HGetAll(bg, l.s.defKey("api")).Val())
	}
	if now, err := l.Define(bg, Quota{Rate: 200, Burst: 40}); err != nil || now.Rate != 200 || now.Version != 1 {
		t.Errorf("Define 200/s burst 40 (a period is 20): %+v, %v", now, err)
	}
}
