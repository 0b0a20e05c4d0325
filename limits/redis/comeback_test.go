package redis

import (
	"runtime"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limits"
)

// TestLeasedBackWithinPeriods: Redis killed (then restarted) or hung (then
// resumed) under three busy nodes, long enough for every node's backoff to
// reach its maximum (1 s here) and for twice go-redis's pool size of
// rounds, then back: every node renews on Redis again
// within three of its rounds (a round a period, 50ms) of the return, its
// renewer probing once a period while Redis is away. A node used to wait out
// its backoff (here up to 1.2 s: about 24 rounds), deciding by its share
// meanwhile, and then debit all of that from the stock the nodes already
// back were living on, which ran them dry (the lab's dip after a return);
// probing once a period through go-redis alone, a killed Redis's failed
// dials opened the pool's own breaker, and a node came back up to a second
// late.
func TestLeasedBackWithinPeriods(t *testing.T) {
	for _, how := range []string{"killed", "hung"} {
		t.Run(how, func(t *testing.T) {
			srv := startServer(t)
			const rate, period, backoffMax = 2000, 50 * time.Millisecond, time.Second
			p := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: rate, Burst: rate, Sync: limits.SyncLeased,
				Lease: LeaseParams{Period: period, TTL: 2 * time.Second}}
			var nodes []*node
			var logs []*roundLog
			var chs []chan struct{}
			for range 3 {
				l, err := New(Params{StoreParams: StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: 50 * time.Millisecond, Nodes: 3,
					BackoffMin: 20 * time.Millisecond, BackoffMax: backoffMax}, LimiterParams: p})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				n := &node{perSec: 1000, l: l, open: true}
				n.drive("")
				t.Cleanup(n.halt)
				ch := make(chan struct{}, 1)
				nodes, logs, chs = append(nodes, n), append(logs, watchRounds(l, ch)), append(chs, ch)
			}
			for i, n := range nodes {
				for n.l.Status().Renewals < 5 {
					awaitRounds(t, n.l, chs[i], 1)
				}
			}
			if how == "killed" {
				srv.Kill()
			} else {
				srv.Pause()
				t.Cleanup(srv.Resume)
			}
			// Every node in fallback, its backoff at the maximum, for more
			// rounds than go-redis's pool size (10 a core): as many failed
			// dials open the pool's own breaker, which then dials once a
			// second by itself.
			down := time.Now()
			for i, n := range nodes {
				for {
					n.l.s.link.mu.Lock()
					b := n.l.s.link.backoff
					n.l.s.link.mu.Unlock()
					if n.l.Status().Mode == ModeFallback && b >= backoffMax && logs[i].since(down) > 20*runtime.GOMAXPROCS(0) {
						break
					}
					awaitRounds(t, n.l, chs[i], 1)
				}
			}
			renewed := make([]uint64, len(nodes))
			for i, n := range nodes {
				renewed[i] = n.l.Status().Renewals
			}
			if how == "killed" {
				srv.Restart()
			} else {
				srv.Resume()
			}
			back := time.Now()
			for i, n := range nodes {
				for n.l.Status().Renewals == renewed[i] {
					awaitRounds(t, n.l, chs[i], 1)
				}
				rounds := logs[i].since(back)
				t.Logf("node %d: back on Redis in its round %d after Redis returned (%v)", i, rounds, time.Since(back).Round(time.Millisecond))
				if rounds > 3 {
					t.Errorf("node %d renewed on Redis again only in its round %d after Redis returned, want within 3 (a period each)", i, rounds)
				}
			}
		})
	}
}

// since is how many rounds ended at or after from.
func (r *roundLog) since(from time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, at := range r.at {
		if !at.Before(from) {
			n++
		}
	}
	return n
}
