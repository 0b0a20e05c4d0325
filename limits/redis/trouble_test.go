package redis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/limits"
)

// Leased quotas through Redis trouble: uneven demand, Redis killed or hung,
// Redis restarted empty.

// troubleNode is a node of the quota p on srv, one of nodes, whose store
// probes a dead Redis at least every 400ms.
func troubleNode(t *testing.T, addr string, nodes int, p LimiterParams) *Limiter {
	t.Helper()
	p.Sync = limits.SyncLeased
	l, err := New(Params{StoreParams: StoreParams{Address: addr, Heartbeat: -1, Timeout: 50 * time.Millisecond, Nodes: nodes,
		BackoffMin: 20 * time.Millisecond, BackoffMax: 400 * time.Millisecond}, LimiterParams: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// troubleNodes starts len(perSec) nodes of p, each driven at its rate on
// key "", and waits for rounds renewals of the last one.
func troubleNodes(t *testing.T, addr string, p LimiterParams, perSec []float64, rounds int) ([]*node, <-chan struct{}) {
	t.Helper()
	var nodes []*node
	for _, r := range perSec {
		n := &node{perSec: r, l: troubleNode(t, addr, len(perSec), p), open: true}
		n.drive("")
		t.Cleanup(func() {
			select {
			case <-n.stop:
			default:
				n.halt()
			}
		})
		nodes = append(nodes, n)
	}
	last := nodes[len(nodes)-1].l
	ch := last.rounds()
	awaitRounds(t, last, ch, rounds)
	return nodes, ch
}

func windowSums(nodes []*node) (offered, admitted int64) {
	for _, n := range nodes {
		offered += n.windowO.Load()
		admitted += n.windowA.Load()
	}
	return offered, admitted
}

// roundLog records the instants of a limiter's renewal rounds.
type roundLog struct {
	mu sync.Mutex
	at []time.Time
}

// watchRounds records l's rounds in a roundLog, and signals ch (if not nil,
// without blocking) after each.
func watchRounds(l *Limiter, ch chan struct{}) *roundLog {
	r := &roundLog{}
	f := func() {
		r.mu.Lock()
		r.at = append(r.at, time.Now())
		r.mu.Unlock()
		if ch != nil {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	l.lease.rounded.Store(&f)
	return r
}

// late sums, over the gaps between rounds from `from` on, how much longer
// than limit each was: the time a lease holding limit's worth of its
// demand ran dry because the machine ran its renewer late.
func (r *roundLog) late(from time.Time, limit time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	sum, prev := time.Duration(0), from
	for _, at := range r.at {
		if at.Before(from) {
			continue
		}
		sum += max(0, at.Sub(prev)-limit)
		prev = at
	}
	return sum
}

// TestLeasedUneven: offered 5,000/500/500 a second against a quota of
// 2,000/s, the quiet nodes get their demand (at least 95 % of what they
// offer: the max-min fair split, 500/500/1,000), and the busy one the rest;
// with shares that followed demand they got 17 %. A quiet node's lease
// holds 1.5 periods of its demand: what it offers while its renewer runs
// later than that (a busy machine, measured) is not counted against it.
func TestLeasedUneven(t *testing.T) {
	srv := startServer(t)
	const rate, period = 2000, 50 * time.Millisecond
	p := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: rate, Burst: rate / 2, Lease: LeaseParams{Period: period, TTL: time.Second}}
	nodes, rounds := troubleNodes(t, srv.Addr(), p, []float64{5000, 500, 500}, 10)
	ch := make(chan struct{}, 1)
	logs := []*roundLog{nil, watchRounds(nodes[1].l, nil), watchRounds(nodes[2].l, ch)}
	rounds = ch
	for _, n := range nodes {
		n.openWindow()
	}
	start := time.Now()
	awaitRounds(t, nodes[2].l, rounds, 30)
	took := time.Since(start)
	_, admitted := windowSums(nodes)
	for i, n := range nodes {
		o, a := n.windowO.Load(), n.windowA.Load()
		t.Logf("node %d: offered %d, admitted %d (%.1f %%) in %v", i, o, a, 100*float64(a)/float64(o), took.Round(time.Millisecond))
		if i == 0 {
			continue
		}
		late := logs[i].late(start, 3*period/2)
		if want := 0.95*float64(o) - n.perSec*late.Seconds(); float64(a) < want {
			t.Errorf("quiet node %d admitted %d of the %d it offered, want at least 95 %% (%.0f, its renewals %v late)", i, a, o, want, late)
		}
	}
	if q := rate * took.Seconds(); float64(admitted) < 0.85*q {
		t.Errorf("admitted %d in %v, want about the quota %.0f", admitted, took, q)
	}
	shares := recordedShares(t, srv.Client(), "sluice:api:lease:{}", rate)
	for i, n := range nodes {
		// Each renewal sees the others' demands of their last renewals:
		// a share lags its fair value (500/s) while the demands are noisy
		// (a busy machine: down to 223/s at load 13, a round or two), never
		// pushing the recorded sum past the rate; the share of the demand
		// would be 167/s.
		if s := shares[n.l.s.nodeID]; i > 0 && s < 175 {
			t.Errorf("quiet node %d: fallback share %.0f/s, want about its demand, 500/s", i, s)
		}
	}
}

// recordedShares reads the fallback shares recorded in a lease hash (one
// HGETALL: one instant), by node, in units per second, and checks that
// they add up to #S and to no more than rate.
func recordedShares(t *testing.T, c *goredis.Client, hash string, rate float64) map[string]float64 {
	t.Helper()
	all, err := c.HGetAll(bg, hash).Result()
	if err != nil {
		t.Fatal(err)
	}
	out, sum := map[string]float64{}, 0.0
	for k, v := range all {
		if id, ok := strings.CutPrefix(k, "#s:"); ok {
			n, _ := strconv.ParseFloat(v, 64)
			out[id] = n / shareScale
			sum += n / shareScale
		}
	}
	total, _ := strconv.ParseFloat(all["#S"], 64)
	if math.Abs(total/shareScale-sum) > 0.01 || sum > rate+0.01 {
		t.Errorf("recorded shares %v add up to %.3f (#S %.3f), want #S and at most the rate %v", out, sum, total/shareScale, rate)
	}
	return out
}

// TestLeasedOutage: Redis killed, then Redis hung (SIGSTOP), under three
// nodes that want 1.5 times the quota. The round that cannot renew puts the
// node in fallback at once (Status says so in the same moment the decisions
// change: within one period of the outage); from then on each node decides
// by its fallback share, the units it still holds counting toward it, so
// that the nodes together admit at least 90 % of the quota (no gap while
// leases lapse) and at most the quota plus what they held.
func TestLeasedOutage(t *testing.T) {
	for _, how := range []string{"killed", "hung"} {
		t.Run(how, func(t *testing.T) {
			srv := startServer(t)
			c := srv.Client()
			const rate, period = 2000, 50 * time.Millisecond
			p := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: rate, Burst: rate, Lease: LeaseParams{Period: period, TTL: 2 * time.Second}}
			nodes, _ := troubleNodes(t, srv.Addr(), p, []float64{1000, 1000, 1000}, 20)
			held, _ := strconv.ParseInt(c.HGet(bg, "sluice:api:lease:{}", "#O").Val(), 10, 64)
			errs := make([]uint64, len(nodes))
			for i, n := range nodes {
				errs[i] = n.l.Status().RenewalErrors
			}
			goAway(t, srv, how)
			down := time.Now()
			// Each node's first round after the outage fails, and that
			// round leaves the node in fallback mode.
			for i, n := range nodes {
				ch := n.l.rounds()
				for n.l.Status().RenewalErrors == errs[i] {
					awaitRounds(t, n.l, ch, 1)
				}
				if st := n.l.Status(); st.Mode != ModeFallback {
					t.Fatalf("a renewal failed, and the status says %+v", st)
				}
			}
			switched := time.Since(down)
			for _, n := range nodes {
				n.openWindow()
			}
			from := time.Now()
			fb := nodes[0].l.Status().FallbackDecisions
			// A second, the sleep being the window measured: the leases'
			// TTL is longer, so without the fallback share the nodes would
			// refuse (their units spent) until it. (Rounds are no clock
			// here: a probe of a hung Redis waits for its dial.)
			window := time.NewTimer(time.Second)
			<-window.C
			took := time.Since(from)
			offered, admitted := windowSums(nodes)
			quota := rate * took.Seconds()
			t.Logf("in fallback %v after the outage; then offered %d, admitted %d in %v (quota %.0f, %.1f %%; held at the outage %d)",
				switched.Round(time.Millisecond), offered, admitted, took.Round(time.Millisecond), quota, 100*float64(admitted)/quota, held)
			if want := 0.9 * min(float64(offered), quota); float64(admitted) < want {
				t.Errorf("admitted %d while Redis was %s, want at least 90 %% of min(offered, quota) = %.0f", admitted, how, want)
			}
			// The shares add up to the rate; the units held at the outage
			// and the shares' refill in the time a round takes to start
			// the next come on top.
			if bound := quota + float64(held) + rate*(period.Seconds()); float64(admitted) > bound {
				t.Errorf("admitted %d while Redis was %s, beyond the quota plus the units held (%.0f)", admitted, how, bound)
			}
			if st := nodes[0].l.Status(); st.FallbackDecisions == fb || st.Mode != ModeFallback {
				t.Errorf("status during the outage %+v: want fallback decisions", st)
			}
			sum := 0.0
			for i, n := range nodes {
				share := n.l.Status().Share
				sum += share
				t.Logf("node %d: fallback share %.0f/s, admitted %d", i, share, n.windowA.Load())
			}
			// The shares the nodes decided by are those recorded at their
			// last renewals: they add up to no more than the rate.
			if sum > rate+0.01 {
				t.Errorf("the fallback shares add up to %.1f/s, beyond the rate", sum)
			}
		})
	}
}

// TestLeasedRestartEmpty: Redis killed under three busy nodes and started
// again without its data. The nodes find a new epoch in the lease hash: the
// first back empties the fresh stock, and each takes no more than its
// fallback share until the others are back, so the nodes admit across the
// restart no more than the quota plus the units held when Redis died (the
// stated bound); a node that came back first used to take the whole quota
// while the others still decided by their shares.
func TestLeasedRestartEmpty(t *testing.T) {
	srv := startServer(t)
	c := srv.Client()
	const rate, period = 2000, 50 * time.Millisecond
	p := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: rate, Burst: rate, Lease: LeaseParams{Period: period, TTL: 2 * time.Second}}
	nodes, _ := troubleNodes(t, srv.Addr(), p, []float64{1500, 1500, 1500}, 20)
	held, _ := strconv.ParseInt(c.HGet(bg, "sluice:api:lease:{}", "#O").Val(), 10, 64)
	bound := nodes[0].l.Status().Bound
	for _, n := range nodes {
		n.openWindow()
	}
	from := time.Now()
	srv.Kill()
	for _, n := range nodes {
		ch := n.l.rounds()
		for n.l.Status().Mode != ModeFallback {
			awaitRounds(t, n.l, ch, 1)
		}
	}
	srv.Restart()
	// Every node renews on the new epoch, and its rejoin ends; then a few
	// more rounds.
	for _, n := range nodes {
		ch := n.l.rounds()
		for st := n.l.Status(); st.Rejoins == 0 || st.Rejoining > 0 || st.Mode != ModeRedis; st = n.l.Status() {
			awaitRounds(t, n.l, ch, 1)
		}
		awaitRounds(t, n.l, ch, 5)
	}
	took := time.Since(from)
	_, admitted := windowSums(nodes)
	over := float64(admitted) - rate*took.Seconds()
	t.Logf("admitted %d in %v across the restart: %+.0f over the quota; units held when Redis died %d, the stated bound %d",
		admitted, took.Round(time.Millisecond), over, held, bound)
	// A round's lateness lets each share refill a period more.
	if over > float64(held)+rate*period.Seconds() {
		t.Errorf("over-admission %.0f across the restart, beyond the units held when Redis died (%d)", over, held)
	}
}

// TestExactLateBounded: exact mode, one node offered eight times the quota
// (sixteen callers) while Redis stalls for 250ms of every 400ms (SIGSTOP,
// SIGCONT: beyond the longest budget, 100ms, but never long enough for the
// link to go down; the burst, a second of the rate, keeps the refill of a
// stall). Many decisions run out of the budget; the fallback admits of
// them only what the overshoot limiter allows (Overshoot of the quota), so
// the node admits at most the quota plus that: the timed-out decisions used
// to be admitted by the node's whole share.
func TestExactLateBounded(t *testing.T) {
	// A run is judged only when the stalls made decisions late with the
	// link up and the load stayed well above the quota. On a starved
	// machine a stall can outlast the link's second, or the callers fall
	// behind: such a run cannot judge, and is made again.
	for attempt := 1; ; attempt++ {
		err := exactLateBoundedRun(t)
		if err == nil {
			return
		}
		if attempt == 3 {
			t.Fatalf("%v: the test cannot judge (%d runs)", err, attempt)
		}
		t.Logf("run %d cannot judge (%v): again", attempt, err)
	}
}

// exactLateBoundedRun is one run of TestExactLateBounded: it reports what
// breaks the bound on t, and returns an error when the run cannot judge.
func exactLateBoundedRun(t *testing.T) error {
	t.Helper()
	srv := startServer(t)
	c := srv.Client()
	const rate, burst = 500.0, 500
	// A budget of 100ms: the link goes down only after 1 s without an
	// answer, never here.
	l, err := New(Params{StoreParams: StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: 100 * time.Millisecond},
		LimiterParams: LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: rate, Burst: burst}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start, wall := redisTime(t, c), time.Now()
	stop, stalled := make(chan struct{}), make(chan error, 1)
	go func() { // the stalls
		defer close(stalled)
		tick := time.NewTicker(400 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if err := srv.Signal(syscall.SIGSTOP); err != nil {
				stalled <- err
				return
			}
			pause := time.NewTimer(250 * time.Millisecond)
			<-pause.C
			if err := srv.Signal(syscall.SIGCONT); err != nil {
				stalled <- err
				return
			}
		}
	}()
	var drivers []*node
	for range 16 {
		n := &node{l: l, perSec: rate / 2}
		n.drive("")
		drivers = append(drivers, n)
	}
	run := time.NewTimer(3 * time.Second) // the run measured
	<-run.C
	for _, n := range drivers {
		n.halt()
	}
	close(stop)
	if err := <-stalled; err != nil {
		t.Fatal(err)
	}
	srv.Signal(syscall.SIGCONT)
	end := redisTime(t, c)
	var offered, admitted int64
	for _, n := range drivers {
		offered += n.offered.Load()
		admitted += n.admitted.Load()
	}
	st := l.Status()
	quota := burst + rate*end.Sub(start).Seconds()
	late := Overshoot * quota
	t.Logf("offered %d, admitted %d in %v; the quota %.0f, the overshoot bound %.1f (%.0f/s stated); %d timeouts, %d late units admitted; budget %v, mode %v",
		offered, admitted, end.Sub(start).Round(time.Millisecond), quota, late, st.LateBound, st.Timeouts, st.LateAdmitted, st.Timeout, st.Mode)
	if st.Timeouts < 50 || st.Mode != ModeRedis || st.Since.After(wall) {
		return fmt.Errorf("%d timeouts, mode %v since %v: the stalls did not make decisions late with the link up", st.Timeouts, st.Mode, st.Since)
	}
	if float64(offered) < 2*quota {
		return fmt.Errorf("offered %d for a quota of %.0f: not well above it", offered, quota)
	}
	if float64(admitted) > quota+late+1 {
		t.Errorf("admitted %d, beyond the quota %.0f plus the overshoot bound %.1f", admitted, quota, late)
	}
	if float64(st.LateAdmitted) > late+1 {
		t.Errorf("%d units admitted late, beyond the overshoot bound %.1f", st.LateAdmitted, late)
	}
	if st.LateBound != Overshoot*rate {
		t.Errorf("late bound %v/s, want %v of the rate", st.LateBound, Overshoot)
	}
	return nil
}

// renewAtSeq numbers renewAt's calls.
var renewAtSeq atomic.Int64

// abs is |v|.
func abs(v int64) int64 { return max(v, -v) }

// renewAt runs the renewal script of a token bucket (rate and burst 2,000,
// ttl 2 s, period 100ms, 3 nodes) for node on key "" at the instant at, as
// lease.go sends it (ARGV: lua/lease.lua), and returns the answer's fields.
// Each call is numbered after the last, which its node received.
func renewAt(t *testing.T, c *goredis.Client, at time.Time, node string, held, dem, want, epoch, debit int64, share float64) []int64 {
	t.Helper()
	seq := renewAtSeq.Add(1)
	return renewCall(t, c, at, node, held, dem, want, epoch, debit, share, seq, seq-1)
}

// renewCall is renewAt with the call's number and the last one its node
// received given.
func renewCall(t *testing.T, c *goredis.Client, at time.Time, node string, held, dem, want, epoch, debit int64, share float64, seq, acked int64) []int64 {
	t.Helper()
	scr := callerTimeRenewals[TokenBucket]
	args := []any{node, 2000, 100, formatRate(2000), 2000, 3, 1,
		held, 0, dem, want, "0", epoch, debit, int64(math.Ceil(share * shareScale)), seq, acked, at.Unix(), int64(at.Nanosecond())}
	text, err := c.EvalSha(bg, scr.sha, []string{"sluice:api:gcra:{}", "sluice:api:lease:{}"}, args...).Text()
	if isNoScript(err) {
		text, err = c.Eval(bg, scr.src, []string{"sluice:api:gcra:{}", "sluice:api:lease:{}"}, args...).Text()
	}
	if err != nil {
		t.Fatal(err)
	}
	return renewalFields(t, text)
}

// renewalFields parses a renewal's answer (lua/lease.lua): its
// space-separated integer fields, in order.
func renewalFields(t *testing.T, text string) []int64 {
	t.Helper()
	var out []int64
	for _, f := range strings.Fields(text) {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("renewal answer %q", text)
		}
		out = append(out, v)
	}
	return out
}

// TestLeasedRestartDebit: after Redis restarted empty, a node of the earlier
// epoch debits from the stock only what its fallback share admitted since
// the new epoch began (the renewals at injected instants; the stock's
// figures within a unit: the GCRA keeps nanoseconds). The first node
// back empties the fresh stock, which settles what every node admitted by
// its share before; a node that came back later used to debit its whole
// outage on top, emptying the refill the nodes already back were owed, and
// they ran dry (the lab's 200ms dip after Redis came back).
func TestLeasedRestartDebit(t *testing.T) {
	srv := startServer(t)
	c := srv.Client()
	t0 := time.Unix(1_700_000_000, 0)
	const share = 2000.0 / 3 // each node's fallback share, units per second
	for _, n := range []string{"a", "b", "c"} {
		renewAt(t, c, t0, n, 0, 1000, 150, 0, 0, 0)
	}
	e1 := t0.UnixMilli()
	if err := c.FlushAll(bg).Err(); err != nil { // restarted empty
		t.Fatal(err)
	}
	t1 := t0.Add(10 * time.Second)
	// a is back first, with its outage's admissions: it empties the stock.
	if f := renewAt(t, c, t1, "a", 0, 1000, 0, e1, 6667, share); f[4] != 0 || f[7] != t1.UnixMilli() {
		t.Fatalf("the first node back: answer %v, want the stock emptied (avail 0) and the epoch %d", f, t1.UnixMilli())
	}
	// b comes back 600ms later, with its whole outage's admissions: of
	// the 1,200 units refilled since, it debits what its share admitted
	// since t1 (400).
	t2 := t1.Add(600 * time.Millisecond)
	since := int64(math.Ceil(share * t2.Sub(t1).Seconds()))
	if f := renewAt(t, c, t2, "b", 0, 1000, 0, e1, 7067, share); abs(f[4]-(1200-since)) > 1 {
		t.Errorf("a node of the earlier epoch back 600ms after the restart: %d units left in the stock, want 1200 less the %d its share admitted since the restart (%d)", f[4], since, 1200-since)
	}
	// A node of the current epoch debits all it reports.
	if f := renewAt(t, c, t2, "a", 0, 1000, 0, t1.UnixMilli(), 50, share); abs(f[4]-(1200-since-50)) > 1 {
		t.Errorf("a debit of the current epoch: %d units left, want %d", f[4], 1200-since-50)
	}
}
