package redis

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/limits"
)

// TestSentinelFailover: a store that finds its master through Redis
// Sentinel follows a failover. The master is killed under load (an exact
// quota and a leased one); decisions go on, never stalling, by the
// fallback and the leases meanwhile; once the sentinels have promoted the
// replica, decisions and renewals are made by the new master.
func TestSentinelFailover(t *testing.T) {
	master := startServer(t)
	replica := redistest.StartReplica(t, master)
	var sentinels []string
	var watchers []*redistest.Sentinel
	for range 3 {
		s := redistest.StartSentinel(t, master, "quotas", 2)
		watchers = append(watchers, s)
		sentinels = append(sentinels, s.Addr())
	}
	for _, w := range watchers {
		w.AwaitPeers("quotas", 2, 1)
	}
	first := watchers[0]
	s, err := Open(StoreParams{SentinelAddresses: sentinels, MasterName: "quotas", Heartbeat: -1,
		Timeout: 50 * time.Millisecond, BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A bucket that refills slowly, so that its keys live through the test.
	exact, err := s.NewLimiter(LimiterParams{Name: "exact", Algorithm: TokenBucket, Rate: 1000, Burst: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	leased, err := s.NewLimiter(LimiterParams{Name: "leased", Algorithm: TokenBucket, Rate: 1e6, Burst: 1e6, Sync: limits.SyncLeased,
		Lease: LeaseParams{Period: 20 * time.Millisecond, TTL: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	driveUntil(t, exact, 10*time.Second, "first decision by the master", func(st Status) bool { return st.StoreDecisions > 0 })
	awaitLease(t, leased, "", 10*time.Second)

	stop := load(4, func(now time.Time) {
		exact.AllowAt("load", now, 1)
		leased.AllowAt("", now, 1)
	})
	killed := time.Now()
	master.Kill()
	// A failover the sentinels abort (a split vote, say) is tried again after
	// twice failover-timeout (6 s): the wait leaves room for several.
	redistest.WaitFor(t, 60*time.Second, "the sentinels promote the replica", func() bool {
		addr, err := first.Master(bg, "quotas")
		return err == nil && addr == replica.Addr()
	})
	t.Logf("replica promoted %v after the kill", time.Since(killed).Round(time.Millisecond))
	promoted := exact.Status()
	driveUntil(t, exact, 20*time.Second, "decisions by the new master", func(st Status) bool {
		return st.Mode == ModeRedis && st.StoreDecisions > promoted.StoreDecisions+100
	})
	t.Logf("decisions by the new master %v after the kill", time.Since(killed).Round(time.Millisecond))
	renewed := leased.Status()
	driveUntil(t, leased, 20*time.Second, "renewals on the new master", func(st Status) bool {
		return st.Renewals > renewed.Renewals+2 && st.Held > 0
	})
	worst, late := stop()
	t.Logf("the slowest pair of decisions took %v; the process waited up to %v for a CPU", worst, late)
	if worst > 2*stallBound+late {
		t.Errorf("slowest pair of decisions during the failover took %v (the process waited %v for a CPU)", worst, late)
	}
	// A replica runs no script of a client (scripts replicate as their
	// effects): the calls it counts were made to it as the master. Every
	// decision Redis made since the promotion was the new master's (the old
	// one is dead), a call deciding at most maxBatch of them (how many
	// depends on how busy the machine is).
	made := exact.Status().StoreDecisions - promoted.StoreDecisions
	if n := scriptCalls(t, replica.Client()); n == 0 || uint64(n) < made/maxBatch {
		t.Errorf("the new master ran %d script calls, want at least the %d decisions after the failover in batches of %d", n, made, maxBatch)
	}
	if st := exact.Status(); st.FallbackDecisions == 0 {
		t.Errorf("no decision fell back while no master answered: %+v", st)
	}
}

// TestSentinelPassword: sentinels that require a password of their own
// (requirepass in the sentinel's configuration), in front of a master with
// another one. A store without the sentinel password, or with a wrong one,
// cannot learn where the master is: its decisions fall back, and its
// status says why. A store given both passwords, from files as a
// deployment keeps them, decides on the master, and follows a failover to
// the replica through the same sentinel.
func TestSentinelPassword(t *testing.T) {
	master := newServer(t)
	master.Password = "master-secret"
	master.Start()
	replica := redistest.StartReplica(t, master)
	sentinel := redistest.StartSentinelAuth(t, master, "quotas", 1, "sentinel-secret")
	sentinel.AwaitPeers("quotas", 0, 1)
	dir := t.TempDir()
	files := map[string]string{"sentinel-password": " sentinel-secret\n", "password": "master-secret\n", "wrong": "guess\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	params := func(sentinelPasswordFile string) StoreParams {
		p := StoreParams{SentinelAddresses: []string{sentinel.Addr()}, MasterName: "quotas", Heartbeat: -1,
			PasswordFile: filepath.Join(dir, "password"), Timeout: 50 * time.Millisecond,
			BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond}
		if sentinelPasswordFile != "" {
			p.SentinelPasswordFile = filepath.Join(dir, sentinelPasswordFile)
		}
		return p
	}
	quota := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 1000, Burst: 1e6}
	calls := scriptCalls(t, master.Client())
	for _, without := range []string{"", "wrong"} {
		s, err := Open(params(without))
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.NewLimiter(quota)
		if err != nil {
			t.Fatal(err)
		}
		driveUntil(t, l, 10*time.Second, "fallback without the sentinel password "+without, func(st Status) bool {
			return st.Mode == ModeFallback
		})
		if st := l.Status(); st.StoreDecisions != 0 || st.LastError == "" {
			t.Errorf("sentinel password file %q: %+v, want every decision by the fallback, and the error", without, st)
		} else {
			t.Logf("sentinel password file %q: %s", without, st.LastError)
		}
		s.Close()
	}
	if n := scriptCalls(t, master.Client()); n != calls {
		t.Errorf("the master ran %d script calls for stores that could not ask the sentinel", n-calls)
	}

	s, err := Open(params("sentinel-password"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.NewLimiter(quota)
	if err != nil {
		t.Fatal(err)
	}
	driveUntil(t, l, 10*time.Second, "decisions by the master", func(st Status) bool { return st.StoreDecisions > 0 })
	if n := scriptCalls(t, master.Client()); n == calls {
		t.Error("the master ran no script call")
	}

	// A failover asked of the sentinel (no quorum needed): the store
	// learns the new master from the sentinel it authenticates to.
	sc := goredis.NewSentinelClient(&goredis.Options{Addr: sentinel.Addr(), Password: "sentinel-secret", MaxRetries: -1})
	defer sc.Close()
	redistest.WaitFor(t, 30*time.Second, "the sentinel sees the replica in sync", func() bool {
		reps, err := sc.Replicas(bg, "quotas").Result()
		return err == nil && len(reps) == 1 && reps[0]["flags"] == "slave" && reps[0]["master-link-status"] == "ok"
	})
	if err := sc.Failover(bg, "quotas").Err(); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 30*time.Second, "the sentinel promotes the replica", func() bool {
		addr, err := sentinel.Master(bg, "quotas")
		return err == nil && addr == replica.Addr()
	})
	promoted := scriptCalls(t, replica.Client())
	driveUntil(t, l, 20*time.Second, "decisions by the new master", func(Status) bool {
		return scriptCalls(t, replica.Client()) > promoted
	})
}
