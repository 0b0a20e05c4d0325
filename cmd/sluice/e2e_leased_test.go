package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
)

// Leased global quotas end to end (rate sync = "leased"): real sluice
// processes lease blocks of one token bucket from a real redis-server (or a
// master its redis-sentinels watch) and decide locally against them.

// leasedConfig is every node's config: one group whose global token bucket
// of RATE/s (burst BURST) is leased, with leases that expire EXPIRY after a
// node's last renewal, and a concurrency limit and queue that never reject.
const leasedConfig = `
[redis]
REDIS
nodes = 3
timeout = "20ms"

[[group]]
name = "shared"
  [group.rate]
  scope = "global"
  sync = "leased"
  rate = RATE
  burst = BURST
  lease_expiry = "EXPIRY"
  [group.concurrency]
  law = "fixed"
  limit = 1000
  [group.queue]
  max = 0
` + noResources

// leasedNodes starts n nodes sharing the leased bucket, reaching Redis by
// the [redis] line(s) redisLines, in front of up.
func leasedNodes(t *testing.T, n int, redisLines string, up *arrivals, rate, burst float64, expiry time.Duration) []*node {
	t.Helper()
	config := strings.NewReplacer("REDIS", redisLines, "UPSTREAM", up.url, "EXPIRY", expiry.String(),
		"RATE", strconv.FormatFloat(rate, 'g', -1, 64), "BURST", strconv.FormatFloat(burst, 'g', -1, 64)).Replace(prelude + leasedConfig)
	return startNodes(t, n, config)
}

// loadScale scales the offered load and the quota to what two cores can
// drive beside the daemons: under the race detector, every process is
// several times slower.
func loadScale() float64 {
	if raceEnabled {
		return 0.25
	}
	return 1
}

// paced offers each node its own request rate, open loop: a dispatcher per
// node hands out one ticket per request due (on a 1ms ticker), and workers
// send a request per ticket. Tickets the workers cannot take at once are
// dropped and counted, so a slow machine lowers the load instead of piling
// it up; every count is bounded by the rate and the run's duration.
type paced struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	status  map[int]int // answers by status code
	answers int         // all of them
	errs    []error     // of live nodes
	slowest time.Duration
	dropped int

	dead sync.Map // node name → true: not sent to any more
}

func startPaced(t *testing.T, nodes []*node, rates []float64) *paced {
	t.Helper()
	p := &paced{stop: make(chan struct{}), status: map[int]int{}}
	for i, n := range nodes {
		rate := rates[i]
		workers := max(4, int(rate/80))
		tickets := make(chan struct{}, workers)
		c := client(t)
		p.wg.Add(1 + workers)
		go func() { // the dispatcher
			defer p.wg.Done()
			defer close(tickets)
			tick := time.NewTicker(time.Millisecond) // the load's pace, what is under test
			defer tick.Stop()
			start, sent := time.Now(), 0
			for {
				select {
				case <-p.stop:
					return
				case now := <-tick.C:
					due := int(rate * now.Sub(start).Seconds())
					for ; sent < due; sent++ {
						select {
						case tickets <- struct{}{}:
						default:
							p.mu.Lock()
							p.dropped++
							p.mu.Unlock()
						}
					}
				}
			}
		}()
		for range workers {
			go func() {
				defer p.wg.Done()
				for range tickets {
					if _, dead := p.dead.Load(n.name); dead {
						continue
					}
					start := time.Now()
					r := do(c, "GET", n.s.url("/work"), "X-Node", n.name)
					took := time.Since(start)
					_, dead := p.dead.Load(n.name)
					p.mu.Lock()
					switch {
					case r.err != nil && !dead:
						p.errs = append(p.errs, fmt.Errorf("%s: %w", n.name, r.err))
					case r.err == nil:
						p.status[r.status]++
						p.answers++
						p.slowest = max(p.slowest, took)
					}
					p.mu.Unlock()
				}
			}()
		}
	}
	return p
}

// count returns the answers so far.
func (p *paced) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answers
}

// halt stops the load and waits for the requests in flight.
func (p *paced) halt() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.wg.Wait()
}

// check reports the load's failures: errors of live nodes, answers other
// than 200 and 429, and an answer slower than bound.
func (p *paced) check(t *testing.T, bound time.Duration) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Logf("answers %v, dropped tickets %d, slowest %v", p.status, p.dropped, p.slowest)
	if len(p.errs) > 0 {
		t.Errorf("%d requests failed, the first: %v", len(p.errs), p.errs[0])
	}
	for code := range p.status {
		if code != 200 && code != 429 {
			t.Errorf("answers %v, want 200 and 429 only", p.status)
			break
		}
	}
	if p.slowest > bound {
		t.Errorf("the slowest answer took %v, beyond %v: a decision waited on Redis", p.slowest, bound)
	}
}

// leaseStatus is the part of a group's read-out these tests read.
type leaseStatus struct {
	Mode  string `json:"mode"`
	Sync  string `json:"sync"`
	Lease *struct {
		Bound         int64  `json:"bound"`
		Outstanding   int64  `json:"outstanding"`
		Held          int64  `json:"held"`
		Keys          int    `json:"keys"`
		Admitted      uint64 `json:"admitted"`
		Renewals      uint64 `json:"renewals"`
		RenewalErrors uint64 `json:"renewal_errors"`
	} `json:"lease"`
}

func (n *node) lease(t *testing.T, c *http.Client) leaseStatus {
	t.Helper()
	r := do(c, "GET", n.admin+"/v1/groups/shared")
	var v struct {
		Rate struct {
			Global *leaseStatus `json:"global"`
		} `json:"rate"`
	}
	if r.err != nil || r.status != 200 || json.Unmarshal([]byte(r.body), &v) != nil || v.Rate.Global == nil || v.Rate.Global.Lease == nil {
		t.Fatalf("%s: GET /v1/groups/shared: %d %v\n%s", n.name, r.status, r.err, r.body)
	}
	return *v.Rate.Global
}

// awaitRenewals polls each node's read-out until its lease has been renewed
// more than after times since (after nil: more than 3 times), with units
// held, by Redis.
func awaitRenewals(t *testing.T, c *http.Client, nodes []*node, after []uint64, what string) []uint64 {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	got := make([]uint64, len(nodes))
	for i, n := range nodes {
		want := uint64(3)
		if after != nil {
			want = after[i] + 3
		}
		for {
			st := n.lease(t, c)
			if st.Mode == "redis" && st.Lease.Renewals > want && st.Lease.Keys == 1 {
				got[i] = st.Lease.Renewals
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s: no renewals within %v: %+v %+v", n.name, what, waitLimit, st, st.Lease)
			}
		}
	}
	return got
}

// awaitMode polls each node's /v1/status until Redis's link is in mode.
func awaitMode(t *testing.T, c *http.Client, nodes []*node, mode string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for _, n := range nodes {
		for n.redis(t, c).Mode != mode {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not in mode %s within %v: %+v", n.name, mode, waitLimit, n.redis(t, c))
			}
		}
	}
}

// commandCalls returns the calls of every command Redis served (INFO
// commandstats), INFO's own left out, by command, and their sum.
func commandCalls(t *testing.T, c *goredis.Client) (map[string]int64, int64) {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	by, n := map[string]int64{}, int64(0)
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || name == "cmdstat_info" {
			continue
		}
		v, _, _ := strings.Cut(rest, ",")
		calls, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("commandstats line %q", line)
		}
		by[strings.TrimPrefix(name, "cmdstat_")] = calls
		n += calls
	}
	return by, n
}

// since returns the calls of each command in to that were not in from.
func callsSince(from, to map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range to {
		if v > from[k] {
			d[k] = v - from[k]
		}
	}
	return d
}

// nodeCalls counts, of the commands Redis ran (callsSince), those the nodes
// sent: the script calls (renewals, exact decisions, heartbeats) and the
// definitions' HGETALL (counted whole, with the few the renewal script runs
// when it drops lapsed leases). The rest ran inside the scripts.
func nodeCalls(by map[string]int64) int64 { return by["evalsha"] + by["eval"] + by["hgetall"] }

// count returns the arrivals of each node in [from, to), and their total.
func (a *arrivals) count(from, to time.Time) (map[string]int, int) {
	by, _ := a.since(from)
	out, total := map[string]int{}, 0
	for n, ts := range by {
		for _, at := range ts {
			if at.Before(to) {
				out[n]++
				total++
			}
		}
	}
	return out, total
}

// runFor lets the load run for d: the sleep is the measured window.
func runFor(d time.Duration) {
	timer := time.NewTimer(d)
	<-timer.C
}

// TestE2ELeasedShares: three sluice processes lease one global token bucket
// of 2,000 req/s (scaled down under -race) with 6,000 req/s offered, 60/30/10
// % of it to the three. Over 10 s once their leases run, the upstream sees
// the quota admitted within ±2 %; what it admits beyond the quota is within
// the documented bound (1.5 × rate × lease_period, each node's read-out) and
// 2 % of the quota; each node's part follows its demand; and the nodes call
// Redis (INFO commandstats: script calls and HGETALLs) at most once per 100
// decisions. The commands the scripts run inside are logged: about five a
// renewal.
func TestE2ELeasedShares(t *testing.T) {
	rate := 2000 * loadScale()
	demand := []float64{0.6, 0.3, 0.1}
	srv := redistest.Start(t)
	up := startArrivals(t)
	nodes := leasedNodes(t, 3, `address = "`+srv.Addr()+`"`, up, rate, rate/10, time.Second)
	c := client(t)
	rates := make([]float64, len(demand))
	for i, d := range demand {
		rates[i] = 3 * rate * d
	}
	l := startPaced(t, nodes, rates)
	defer l.halt()
	awaitRenewals(t, c, nodes, nil, "leases under load")

	const window = 10 * time.Second
	rdb := srv.Client()
	byCmd, calls := commandCalls(t, rdb)
	from, answered := time.Now(), l.count()
	runFor(window)
	to, answeredTo := time.Now(), l.count()
	byCmdTo, callsTo := commandCalls(t, rdb)
	var bound, outstanding int64
	for _, n := range nodes {
		st := n.lease(t, c)
		bound, outstanding = st.Lease.Bound, max(outstanding, st.Lease.Outstanding)
	}
	l.halt()
	l.check(t, stallBound)

	by, admitted := up.count(from, to)
	expected := rate * to.Sub(from).Seconds()
	decisions := answeredTo - answered
	cmds, sent := callsTo-calls, nodeCalls(callsSince(byCmd, byCmdTo))
	over := float64(admitted) - expected
	t.Logf("admitted %d in %v (n1 %d, n2 %d, n3 %d), expected %.0f (%+.2f %%); over-admission %.0f, bound %d (%.2f %% of the quota), outstanding %d; "+
		"decisions %d (%.1f× the quota); calls to Redis %d (%.3f %% of the decisions), commands Redis ran with those inside the scripts %d (%.3f %%: %v)",
		admitted, to.Sub(from).Round(time.Millisecond), by["n1"], by["n2"], by["n3"], expected, 100*(float64(admitted)/expected-1),
		over, bound, 100*float64(bound)/expected, outstanding, decisions, float64(decisions)/expected, sent, 100*float64(sent)/float64(decisions), cmds, 100*float64(cmds)/float64(decisions), callsSince(byCmd, byCmdTo))
	if float64(decisions) < 2.5*expected {
		t.Fatalf("the load offered %d decisions in %v for a quota of %.0f: not well above it, the test cannot judge", decisions, window, expected)
	}
	if want := int64(math.Ceil(1.5 * rate * 0.1)); bound != want {
		t.Errorf("bound %d, want 1.5 × %v/s × 100ms = %d", bound, rate, want)
	}
	if math.Abs(float64(admitted)/expected-1) > 0.02 {
		t.Errorf("admitted %d, want %.0f ± 2 %%", admitted, expected)
	}
	if over > float64(bound) || over > 0.02*expected {
		t.Errorf("over-admission %.0f, beyond the bound %d or 2 %% of the quota (%.0f)", over, bound, 0.02*expected)
	}
	for i, n := range nodes {
		if share := float64(by[n.name]) / float64(admitted); math.Abs(share-demand[i]) > 0.05 {
			t.Errorf("%s admitted %.1f %% of the total, want its %.0f %% of the demand ± 5", n.name, 100*share, 100*demand[i])
		}
	}
	// Whatever the load, each node calls Redis about once a renewal period
	// (10/s) and a few times a heartbeat (1/s): at most 15/s a node.
	if perSecond := float64(sent) / to.Sub(from).Seconds(); perSecond > 15*float64(len(nodes)) {
		t.Errorf("the nodes called Redis %.0f times a second, want at most 15 a node", perSecond)
	}
	// At the full load, 6,000 decisions a second, that is under 1 % of
	// them (the race detector's quarter of the load does not get there).
	if !raceEnabled && float64(sent) > 0.01*float64(decisions) {
		t.Errorf("the nodes called Redis %d times for %d decisions, want ≤ 1 %%", sent, decisions)
	}
}

// TestE2ELeasedNodeKilled: of three nodes leasing a bucket of 2,000 req/s
// (scaled under -race), the busiest (60 % of 6,000 req/s) is killed with
// SIGKILL. Its lease expires 1s after its last renewal; from then on the
// other two admit the whole quota between them (their demand, 2,400 req/s,
// exceeds it), and at no time do all together admit more than the quota
// plus the bound.
func TestE2ELeasedNodeKilled(t *testing.T) {
	rate := 2000 * loadScale()
	const expiry = time.Second
	srv := redistest.Start(t)
	up := startArrivals(t)
	nodes := leasedNodes(t, 3, `address = "`+srv.Addr()+`"`, up, rate, rate/10, expiry)
	c := client(t)
	l := startPaced(t, nodes, []float64{1.8 * rate, 0.9 * rate, 0.3 * rate})
	defer l.halt()
	awaitRenewals(t, c, nodes, nil, "leases under load")
	bound := nodes[1].lease(t, c).Lease.Bound

	from := time.Now()
	runFor(time.Second)
	l.dead.Store("n1", true)
	killed := time.Now()
	nodes[0].s.signal(t, syscall.SIGKILL)
	// The lease lapses within expiry; its share is the others' from their
	// next renewals on (a period, 100ms): measure 2 s after that.
	taken := killed.Add(expiry + 300*time.Millisecond)
	runFor(time.Until(taken.Add(2 * time.Second)))
	to := time.Now()
	l.halt()
	l.check(t, stallBound)

	_, total := up.count(from, to)
	allowed := rate*to.Sub(from).Seconds() + float64(bound)
	after, survivors := up.count(taken, to)
	want := rate * to.Sub(taken).Seconds()
	_, lapse := up.count(killed, taken)
	t.Logf("total %d in %v (allowed %.0f: quota + bound %d); after the kill: %d in the %v to the lease's expiry and the next renewal, "+
		"then n2 %d + n3 %d = %d in %v (quota %.0f, %+.2f %%)",
		total, to.Sub(from).Round(time.Millisecond), allowed, bound, lapse, taken.Sub(killed).Round(time.Millisecond),
		after["n2"], after["n3"], survivors, to.Sub(taken).Round(time.Millisecond), want, 100*(float64(survivors)/want-1))
	if float64(total) > allowed {
		t.Errorf("admitted %d in all, beyond the quota plus the bound (%.0f)", total, allowed)
	}
	if after["n1"] != 0 {
		t.Errorf("the killed node admitted %d", after["n1"])
	}
	if math.Abs(float64(survivors)/want-1) > 0.03 {
		t.Errorf("after the lease's expiry the survivors admitted %d, want the whole quota %.0f ± 3 %%", survivors, want)
	}
}

// TestE2ELeasedRedisDown: nodes leasing a bucket keep answering every
// request from local state, none slower than stallBound, while Redis is
// killed and while it hangs (SIGSTOP: connections open, no answers); they
// report the fallback, and go back to Redis's leases by themselves after
// its restart and after SIGCONT.
func TestE2ELeasedRedisDown(t *testing.T) {
	const rate = 300.0
	srv := redistest.Start(t)
	up := startArrivals(t)
	nodes := leasedNodes(t, 3, `address = "`+srv.Addr()+`"`, up, rate, rate/10, time.Second)
	c := client(t)
	l := startPaced(t, nodes, []float64{rate, rate, rate})
	defer l.halt()
	renewed := awaitRenewals(t, c, nodes, nil, "leases under load")

	srv.Kill()
	awaitMode(t, c, nodes, "fallback")
	srv.Restart()
	renewed = awaitRenewals(t, c, nodes, renewed, "renewals after Redis's restart")

	srv.Pause()
	awaitMode(t, c, nodes, "fallback")
	srv.Resume()
	awaitRenewals(t, c, nodes, renewed, "renewals after SIGCONT")
	l.halt()
	l.check(t, stallBound)
	for _, n := range nodes {
		if st := n.lease(t, c); st.Lease.RenewalErrors == 0 {
			t.Errorf("%s: no failed renewal while Redis was down: %+v", n.name, st.Lease)
		}
	}
}

// TestE2ELeasedSentinelFailover: nodes that find Redis through three
// redis-sentinels keep deciding under load while the master is killed; the
// sentinels promote its replica, and the nodes renew their leases on it (it
// runs their scripts).
func TestE2ELeasedSentinelFailover(t *testing.T) {
	const rate = 300.0
	redistest.Need(t, "redis-sentinel")
	master := redistest.Start(t)
	replica := redistest.StartReplica(t, master)
	var watchers []*redistest.Sentinel
	var addrs []string
	for range 3 {
		s := redistest.StartSentinel(t, master, "quotas", 2)
		watchers = append(watchers, s)
		addrs = append(addrs, strconv.Quote(s.Addr()))
	}
	for _, w := range watchers {
		w.AwaitPeers("quotas", 2, 1)
	}
	up := startArrivals(t)
	lines := "sentinel_addresses = [" + strings.Join(addrs, ", ") + "]\nmaster_name = \"quotas\""
	nodes := leasedNodes(t, 2, lines, up, rate, rate/10, time.Second)
	c := client(t)
	l := startPaced(t, nodes, []float64{rate, rate})
	defer l.halt()
	awaitRenewals(t, c, nodes, nil, "leases under load")

	master.Kill()
	redistest.WaitFor(t, waitLimit, "the sentinels promote the replica", func() bool {
		addr, err := watchers[0].Master(context.Background(), "quotas")
		return err == nil && addr == replica.Addr()
	})
	_, before := commandCalls(t, replica.Client())
	snap := make([]uint64, len(nodes))
	for i, n := range nodes {
		snap[i] = n.lease(t, c).Lease.Renewals
	}
	awaitRenewals(t, c, nodes, snap, "renewals on the promoted replica")
	l.halt()
	l.check(t, 2*stallBound)
	if _, n := commandCalls(t, replica.Client()); n-before < 6 {
		t.Errorf("the new master served %d commands since its promotion, want the nodes' renewals", n-before)
	}
}
