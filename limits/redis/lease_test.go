package redis

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/limits"
)

// leasedNode opens a store of its own (a node, with its own id) on srv and
// a leased limiter of p on it.
func leasedNode(t testing.TB, addr string, p LimiterParams) *Limiter {
	t.Helper()
	if p.Sync == "" {
		p.Sync = limits.SyncLeased
	}
	l, err := New(Params{StoreParams: StoreParams{Address: addr, Heartbeat: -1, Timeout: 50 * time.Millisecond}, LimiterParams: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// redisTime is Redis's clock, the quotas' own.
func redisTime(t testing.TB, c *goredis.Client) time.Time {
	t.Helper()
	now, err := c.Time(bg).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// awaitLease makes decisions for key until l holds units on its lease of
// key (bounded by limit). It returns the units admitted.
func awaitLease(t testing.TB, l *Limiter, key string, limit time.Duration) int64 {
	t.Helper()
	deadline := time.Now().Add(limit)
	admitted := int64(0)
	for i := 0; ; i++ {
		if le := (*l.lease.leases.Load())[key]; le != nil {
			if held, _ := le.a.Held(); held > 0 {
				return admitted
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lease within %v: %+v", limit, l.Status())
		}
		if l.Allow(key, 1).Allowed {
			admitted++
		}
		if i%64 == 0 {
			runtime.Gosched()
		}
	}
}

// awaitRounds waits for n renewal rounds of l.
func awaitRounds(t testing.TB, l *Limiter, rounds <-chan struct{}, n int) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second) // a failure's bound, not a pace
	defer timeout.Stop()
	for range n {
		select {
		case <-rounds:
		case <-timeout.C:
			t.Fatalf("%d renewal rounds not within 10s: %+v", n, l.Status())
		}
	}
}

// TestLeasedDecidesLocally: once a node holds a lease, its decisions make
// no Redis call; it takes the whole burst when it is alone and busy, and
// never more than the quota allows (Burst plus Rate times the time, in
// Redis's clock, from a state where nothing was leased).
func TestLeasedDecidesLocally(t *testing.T) {
	srv := startServer(t)
	c := srv.Client()
	start := redisTime(t, c)
	l := leasedNode(t, srv.Addr(), LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 1, Burst: 1000,
		Lease: LeaseParams{Period: 20 * time.Millisecond}})
	admitted := awaitLease(t, l, "", 10*time.Second)
	exact := l.Status().StoreDecisions
	if exact < promoteAt || exact > 1000 {
		t.Fatalf("%d exact decisions before the lease, want at least %d", exact, promoteAt)
	}
	// The lease is renewed in the background; decide until the burst is
	// used up (the refill, 1 a second, is all that is left).
	deadline := time.Now().Add(10 * time.Second)
	for admitted < 990 && time.Now().Before(deadline) {
		r := l.Allow("", 1)
		if r.Allowed {
			admitted++
		}
		if r.Limit != 1000 || r.Remaining > r.Limit || r.Remaining < 0 {
			t.Fatalf("result %+v", r)
		}
	}
	end := redisTime(t, c)
	st := l.Status()
	if st.StoreDecisions != exact {
		t.Errorf("%d exact decisions after the lease came, want none", st.StoreDecisions-exact)
	}
	bound := 1000 + int64(math.Ceil(end.Sub(start).Seconds()))
	if admitted < 990 || admitted > bound {
		t.Errorf("admitted %d, want at least 990 and at most burst + refill = %d", admitted, bound)
	}
	if st.Sync != limits.SyncLeased || st.Leases != 1 || st.Renewals == 0 || st.LastRenewal.IsZero() {
		t.Errorf("status %+v", st)
	}
}

// TestLeasedCloseGivesBack: a node that stops gives back the units it
// holds, and removes its lease: the quota has exactly what the node did not
// admit (the refill, a unit per 1000 s, is nil).
func TestLeasedCloseGivesBack(t *testing.T) {
	srv := startServer(t)
	c := srv.Client()
	p := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 0.001, Burst: 1000, Lease: LeaseParams{Period: 20 * time.Millisecond}}
	l := leasedNode(t, srv.Addr(), p)
	admitted := awaitLease(t, l, "", 10*time.Second)
	for range 20 {
		if l.Allow("", 1).Allowed {
			admitted++
		}
	}
	admitted += awaitLease(t, l, "", 10*time.Second) // holding some, to give back
	if st := l.Status(); st.Outstanding < st.Held {
		t.Fatalf("holding more than Redis counts: %+v", st)
	}
	l.Close()
	if n := c.Exists(bg, "sluice:api:lease:{}").Val(); n != 0 {
		t.Errorf("the lease hash outlived its only lease: %v", c.HGetAll(bg, "sluice:api:lease:{}").Val())
	}
	p.Sync, p.Lease = limits.SyncExact, LeaseParams{}
	exact, err := New(Params{StoreParams: StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second}, LimiterParams: p})
	if err != nil {
		t.Fatal(err)
	}
	defer exact.Close()
	if r := exact.Allow("", 0); r.Remaining != 1000-admitted {
		t.Fatalf("after the node gave back: %d remaining, want 1000 - %d admitted = %d", r.Remaining, admitted, 1000-admitted)
	}
}

// node drives one leased limiter with an offered load, counting what it
// offers and what is admitted.
type node struct {
	l                 *Limiter
	perSec            float64
	offered, admitted atomic.Int64
	windowO, windowA  atomic.Int64 // since the window opened
	stop              chan struct{}
	done              sync.WaitGroup
	worst             atomic.Int64 // the slowest decision, ns
	// decisions, if set, records each decision's instant and outcome.
	decisions *decisionLog
	// open drops the decisions a late tick missed instead of making them
	// at once: an open-loop load that a stalled driver does not turn into
	// a burst (which a lease holding a period and a half of the demand
	// would refuse, for the driver's stall, not the quota's).
	open bool
}

// drive offers perSec decisions a second on key, paced by a 2 ms ticker
// (the load, not a wait), until stop.
func (n *node) drive(key string) {
	n.stop = make(chan struct{})
	n.done.Add(1)
	go func() {
		defer n.done.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		start, sent := time.Now(), int64(0)
		for {
			select {
			case <-n.stop:
				return
			case <-tick.C:
			}
			due := int64(time.Since(start).Seconds() * n.perSec)
			if tick := int64(math.Ceil(n.perSec * 0.004)); n.open && due-sent > tick {
				sent = due - tick // missed while the driver did not run
			}
			for ; sent < due; sent++ {
				t := time.Now()
				ok := n.l.AllowAt(key, t, 1).Allowed
				if d := int64(time.Since(t)); d > n.worst.Load() {
					n.worst.Store(d)
				}
				n.offered.Add(1)
				n.windowO.Add(1)
				if n.decisions != nil {
					n.decisions.add(t, ok)
				}
				if ok {
					n.admitted.Add(1)
					n.windowA.Add(1)
				}
			}
		}
	}()
}

func (n *node) halt() {
	close(n.stop)
	n.done.Wait()
}

// openWindow restarts the window counts.
func (n *node) openWindow() { n.windowO.Store(0); n.windowA.Store(0) }

// maxMinFair is the max-min fair split of capacity c among the demands ds:
// each gets min(d, L), the level L such that the parts add up to c (or
// each its demand, when they add up to less).
func maxMinFair(ds []float64, c float64) []float64 {
	out := make([]float64, len(ds))
	left := map[int]bool{}
	for i := range ds {
		left[i] = true
	}
	for len(left) > 0 {
		cut := c / float64(len(left))
		done := false
		for i := range left {
			if ds[i] <= cut {
				out[i], c, done = ds[i], c-ds[i], true
				delete(left, i)
			}
		}
		if !done {
			for i := range left {
				out[i] = cut
			}
			break
		}
	}
	return out
}

// TestLeasedShares: three nodes share a quota of 3,000/s with 9,000/s
// offered 60/30/10: after a few renewals the nodes' shares of the admitted
// units are the max-min fair split of the quota over their demands
// (5,400/2,700/900: 35/35/30 %), the nodes together admit about the quota
// and never more than Burst + Rate·t (from a state where nothing was
// leased), and Redis serves a few renewal calls a period, not one per
// decision.
func TestLeasedShares(t *testing.T) {
	srv := startServer(t)
	c := srv.Client()
	const rate, burst, period = 3000, 3000, 50 * time.Millisecond
	p := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: rate, Burst: burst, Lease: LeaseParams{Period: period, TTL: time.Second}}
	start := redisTime(t, c)
	nodes := []*node{{perSec: 5400}, {perSec: 2700}, {perSec: 900}}
	for _, n := range nodes {
		n.l = leasedNode(t, srv.Addr(), p)
		n.drive("")
	}
	rounds := nodes[2].l.rounds()
	awaitRounds(t, nodes[2].l, rounds, 10) // warm-up: a few renewals
	c.ConfigResetStat(bg)
	for _, n := range nodes {
		n.openWindow()
	}
	from := redisTime(t, c)
	awaitRounds(t, nodes[2].l, rounds, 30)
	to := redisTime(t, c)
	calls := scriptCalls(t, c)
	var offered, admitted, total int64
	for _, n := range nodes {
		offered += n.windowO.Load()
		admitted += n.windowA.Load()
	}
	for _, n := range nodes {
		n.halt()
		total += n.admitted.Load()
	}
	end := redisTime(t, c)
	if bound := burst + int64(rate*end.Sub(start).Seconds()); total > bound {
		t.Errorf("admitted %d in all, over Burst + Rate·t = %d", total, bound)
	}
	window := to.Sub(from).Seconds()
	if want := 0.85 * rate * window; float64(admitted) < want || float64(admitted) > burst+rate*window {
		t.Errorf("admitted %d in %.2fs, want about the quota %.0f", admitted, window, rate*window)
	}
	var demands []float64
	for _, n := range nodes {
		demands = append(demands, float64(n.windowO.Load()))
	}
	fair := maxMinFair(demands, float64(admitted))
	for i, n := range nodes {
		demand := float64(n.windowO.Load()) / float64(offered)
		share := float64(n.windowA.Load()) / float64(admitted)
		want := fair[i] / float64(admitted)
		t.Logf("node %d: %.1f%% of the demand, %.1f%% of the admitted, max-min fair %.1f%%", i, 100*demand, 100*share, 100*want)
		if math.Abs(share-want) > 0.07 {
			t.Errorf("node %d: share %.3f of the admitted, want its max-min fair share %.3f", i, share, want)
		}
	}
	// Each node renews once a period, and at most four times when asked
	// early (the quota has no room here: never).
	if max := 3 * 4 * (window/period.Seconds() + 1); float64(calls) > max {
		t.Errorf("%d script calls in %.2fs for %d decisions, want at most %.0f", calls, window, offered, max)
	}
	t.Logf("%d decisions, %d admitted, %d script calls (%.2f%%) in %.2fs", offered, admitted, calls, 100*float64(calls)/float64(offered), window)
}

// scriptCalls is the number of script calls (EVALSHA and EVAL) Redis
// counted since the last CONFIG RESETSTAT.
func scriptCalls(t testing.TB, c *goredis.Client) int64 {
	t.Helper()
	return commandCount(t, c, "evalsha", "eval")
}

// commandCount sums the calls of the named commands (all, if none is
// named, those run inside scripts included) in INFO commandstats.
func commandCount(t testing.TB, c *goredis.Client, names ...string) int64 {
	t.Helper()
	info, err := c.InfoMap(bg, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for cmd, stats := range info["Commandstats"] {
		name := strings.TrimPrefix(cmd, "cmdstat_")
		if len(names) > 0 && !contains(names, name) {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, _ := parseInt(v)
				total += n
			}
		}
	}
	return total
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func parseInt(s string) (int64, bool) {
	v, rest, ok := leadingInt(s)
	return v, ok && rest == ""
}

// TestLeaseHolderDies: a node killed while it holds a lease (it stops
// renewing without giving anything back) counts against the quota until
// its lease expires, TTL after its last renewal; then the other node's
// renewals drop it, and the survivor gets all it asks of the quota.
func TestLeaseHolderDies(t *testing.T) {
	srv := startServer(t)
	c := srv.Client()
	const rate, ttl = 2000, 500 * time.Millisecond
	p := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: rate, Burst: rate, Lease: LeaseParams{Period: 25 * time.Millisecond, TTL: ttl}}
	// The survivor asks three quarters of the quota: while the dead lease
	// counts, its fair part is 1500/5500 of the refill; alone, it can get
	// all it asks, with room in the stock for its renewals to come late on
	// a busy machine (with demand at the rate, every late renewal would
	// lose decisions for good).
	victim, survivor := &node{perSec: 4000}, &node{perSec: 1500}
	for _, n := range []*node{victim, survivor} {
		n.l = leasedNode(t, srv.Addr(), p)
		n.drive("")
	}
	rounds := survivor.l.rounds()
	awaitRounds(t, survivor.l, rounds, 10)
	victim.halt()
	victim.l.abandon()
	killed := redisTime(t, c)
	hash := "sluice:api:lease:{}"
	id := victim.l.s.nodeID
	record, err := c.HGet(bg, hash, id).Result()
	if err != nil {
		t.Fatalf("the killed node's lease is not in Redis: %v", err)
	}
	// Its record "o d e w t g": e is its expiry, in ms of Redis's time,
	// TTL after its last renewal (before the kill).
	var o, d, e int64
	if _, err := fmt.Sscanf(record, "%d %d %d", &o, &d, &e); err != nil {
		t.Fatalf("lease record %q: %v", record, err)
	}
	expiry := time.UnixMilli(e)
	if expiry.After(killed.Add(ttl)) {
		t.Errorf("the dead lease expires %v after the kill, want at most the TTL %v", expiry.Sub(killed), ttl)
	}
	// The survivor's renewals drop the dead lease once it has expired: at
	// the latest, the first renewal round that starts after the expiry.
	// Rounds are the events counted, whatever they take on a busy machine:
	// once Redis's time is past the expiry, the round under way may have
	// run its script before it, the next one may not.
	for after := 0; c.HExists(bg, hash, id).Val(); {
		if !redisTime(t, c).Before(expiry) {
			if after++; after > 2 {
				t.Fatalf("the dead lease (expiry %v) is still there two renewal rounds after it expired", expiry)
			}
		}
		awaitRounds(t, survivor.l, rounds, 1)
	}
	if gone := redisTime(t, c); gone.Before(expiry) {
		t.Errorf("the dead lease was dropped before its expiry %v (at %v at the latest)", expiry, gone)
	}
	// From then on the survivor is alone: it gets about all it asks, far
	// more than its fair part beside the dead lease (1500/5500 of the
	// refill: 36 % of what it asks).
	awaitRounds(t, survivor.l, rounds, 2)
	survivor.openWindow()
	from := redisTime(t, c)
	awaitRounds(t, survivor.l, rounds, 20)
	window := redisTime(t, c).Sub(from).Seconds()
	got := float64(survivor.windowA.Load())
	survivor.halt()
	if d := c.HGet(bg, hash, "#D").Val(); d == "" {
		t.Errorf("no demand recorded: %v", c.HGetAll(bg, hash).Val())
	}
	if offered := float64(survivor.windowO.Load()); got < 0.85*offered {
		t.Errorf("alone, the survivor got %.0f of the %.0f it offered in %.2fs", got, offered, window)
	}
}

// TestLeasedRedisDown: Redis killed, then Redis hung (SIGSTOP: connections
// open, no answers). Every decision answers at once from local state: from
// the lease while it is valid, then by the fallback. Once Redis is back,
// the node leases again by itself.
func TestLeasedRedisDown(t *testing.T) {
	for _, how := range []string{"killed", "hung"} {
		t.Run(how, func(t *testing.T) {
			srv := startServer(t)
			const ttl = time.Second
			l, err := New(Params{
				StoreParams: StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: 5 * time.Millisecond,
					BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond},
				LimiterParams: LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 10_000, Burst: 1000, Sync: limits.SyncLeased,
					Lease: LeaseParams{Period: 50 * time.Millisecond, TTL: ttl}},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			n := &node{l: l, perSec: 2000}
			watch := lateness(2)
			n.drive("")
			rounds := l.rounds()
			awaitRounds(t, l, rounds, 5)
			if st := l.Status(); st.Leases != 1 || st.Renewals == 0 {
				t.Fatalf("no lease: %+v", st)
			}
			down := l.Status()
			goAway(t, srv, how)
			// Renewals fail; the lease lapses (TTL after the last renewal)
			// and the decisions fall back, without calling Redis.
			for st := l.Status(); st.Mode != ModeFallback || st.FallbackDecisions < down.FallbackDecisions+100; st = l.Status() {
				awaitRounds(t, l, rounds, 1)
			}
			if st := l.Status(); st.RenewalErrors == 0 || st.LastError == "" {
				t.Errorf("status %+v: want the failed renewals", st)
			}
			comeBack(srv, how)
			back := l.Status()
			for st := l.Status(); st.Held == 0 || st.Renewals <= back.Renewals; st = l.Status() {
				awaitRounds(t, l, rounds, 1)
			}
			after := l.Status()
			n.halt()
			if worst, late := time.Duration(n.worst.Load()), watch(); worst > stallBound+late {
				t.Errorf("the slowest decision took %v: a stall (the process waited %v for a CPU)", worst, late)
			}
			if after.Mode != ModeRedis {
				t.Errorf("back: %+v", after)
			}
		})
	}
}

// TestLeasedKeyed: in a quota split per key, the keys busy on a node are
// leased, at most MaxKeys of them; the others are decided exactly.
func TestLeasedKeyed(t *testing.T) {
	srv := startServer(t)
	l := leasedNode(t, srv.Addr(), LimiterParams{Name: "tenants", Algorithm: TokenBucket, Rate: 100, Burst: 100,
		Lease: LeaseParams{Period: 20 * time.Millisecond, MaxKeys: 2}})
	rounds := l.rounds()
	hot := []string{"a", "b", "c"}
	for r := 0; ; r++ {
		for _, k := range hot {
			for range 2 * promoteAt {
				l.Allow(k, 1)
			}
		}
		if l.Status().Leases == 2 {
			break
		}
		if r > 500 {
			t.Fatalf("not 2 leases: %+v", l.Status())
		}
		awaitRounds(t, l, rounds, 1)
	}
	leased := 0
	for _, k := range hot {
		if (*l.lease.leases.Load())[k] != nil {
			leased++
		}
	}
	if leased != 2 {
		t.Fatalf("%d of the hot keys leased, want MaxKeys 2", leased)
	}
	before := l.Status().StoreDecisions
	if r := l.Allow("cold", 1); !r.Allowed || r.Remaining != 99 {
		t.Fatalf("a cold key: %+v", r)
	}
	if l.Status().StoreDecisions != before+1 {
		t.Fatal("a cold key's decision was not made by Redis")
	}
}

// TestLeasedFixedWindow: a fixed window's units are leased from the current
// window and lapse at its end, so the nodes together never admit more than
// the limit in one window.
func TestLeasedFixedWindow(t *testing.T) {
	srv := startServer(t)
	c := srv.Client()
	const limit, window = 300, 250 * time.Millisecond
	p := LimiterParams{Name: "fw", Algorithm: FixedWindow, Limit: limit, Window: window, Lease: LeaseParams{Period: 25 * time.Millisecond}}
	start := redisTime(t, c)
	nodes := []*node{{perSec: 2000}, {perSec: 1000}}
	for _, n := range nodes {
		n.l = leasedNode(t, srv.Addr(), p)
		n.drive("k")
	}
	rounds := nodes[0].l.rounds()
	awaitRounds(t, nodes[0].l, rounds, 40)
	var total int64
	for _, n := range nodes {
		n.halt()
		total += n.admitted.Load()
	}
	end := redisTime(t, c)
	windows := end.UnixNano()/int64(window) - start.UnixNano()/int64(window) + 1
	if total > limit*windows {
		t.Errorf("admitted %d over %d windows, more than %d", total, windows, limit*windows)
	}
	if full := windows - 2; total < limit*full*7/10 {
		t.Errorf("admitted %d over %d windows: too few", total, windows)
	}
	if st := nodes[0].l.Status(); st.Leases != 1 || st.Renewals == 0 {
		t.Errorf("status %+v", st)
	}
}

// A leased limiter's decisions on its lease cost what a local limiter's
// do: see BenchmarkLeased. Here: the Results have the quota's shape.
func TestLeasedResults(t *testing.T) {
	srv := startServer(t)
	l := leasedNode(t, srv.Addr(), LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 100, Burst: 50,
		Lease: LeaseParams{Period: 20 * time.Millisecond}})
	awaitLease(t, l, "", 10*time.Second)
	now := time.Now()
	if r := l.AllowAt("", now, 51); r.Allowed || r.RetryAfter != limits.InfDuration || r.Limit != 50 {
		t.Errorf("n over the burst: %+v", r)
	}
	r := l.AllowAt("", now, 0)
	if !r.Allowed || r.Remaining > 50 || r.Limit != 50 || r.ResetAfter != time.Duration(50-r.Remaining)*10*time.Millisecond {
		t.Errorf("probe: %+v", r)
	}
}
