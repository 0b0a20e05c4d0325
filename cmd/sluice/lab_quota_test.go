package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	labload "github.com/sluicehq/sluice/cmd/internal/lab/load"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/limits"
)

// TestLabGlobalQuota is issue 29's lab, skipped unless SLUICE_QUOTA_LAB is
// set: it loads the machine for minutes, so run it under the bench lock,
//
//	SLUICE_QUOTA_LAB=1 go test ./cmd/sluice -run TestLabGlobalQuota -v -timeout 30m
//
// and once more with SLUICE_QUOTA_LAB_BINARY naming another sluice binary
// (the contender: the code before) to compare in the same sitting. Each
// scenario starts one redis-server (no persistence) and three real daemons
// sharing a global token bucket of 2,000/s (burst a second of it; leased:
// lease_period 100ms, lease_expiry 2s; fallback local; nodes 3), drives
// each daemon with the lab's open-loop generator (cmd/internal/lab/load: Poisson
// arrivals at the node's rate, its tenant header naming the node), and
// counts what the upstream admitted, by node, at 10 ms resolution. Each
// target of the issue is a check; the figures are logged.
func TestLabGlobalQuota(t *testing.T) {
	if os.Getenv("SLUICE_QUOTA_LAB") == "" {
		t.Skip("issue 29's lab: set SLUICE_QUOTA_LAB=1 and run it under the bench lock (6,000 req/s for minutes)")
	}
	if bin := os.Getenv("SLUICE_QUOTA_LAB_BINARY"); bin != "" {
		binOnce.Do(func() { binPath = bin }) // the contender instead of this code's build
	}
	t.Run("steady", func(t *testing.T) { labSteady(t, labOffered, true) })
	t.Run("steady-6000", func(t *testing.T) { labSteady(t, []float64{labRate, labRate, labRate}, false) })
	t.Run("killed", func(t *testing.T) { labOutage(t, "killed") })
	t.Run("hung", func(t *testing.T) { labOutage(t, "hung") })
	t.Run("restarted-empty", labRestart)
	t.Run("uneven", labUneven)
	t.Run("exact-saturated", labExact)
}

const (
	labRate  = 2000.0
	labBurst = 2000.0
)

// labOffered is each node's load in the steady, outage and restart
// scenarios: 1.5 times the quota in all. The issue offered 2,000/s to each
// node; on two shared cores that starves the generator and the proxies
// (answers and arrivals trail decisions by seconds), and counts by arrival
// time are then off by that much at a window's ends. The uneven and
// exact scenarios offer what the issue did.
var labOffered = []float64{labRate / 2, labRate / 2, labRate / 2}

// quotaLabConfig is each lab node's config; SYNC is the rate's sync lines.
const quotaLabConfig = `
[redis]
address = "REDIS"
nodes = 3

[[group]]
name = "shared"
  [group.rate]
  scope = "global"
  SYNC
  rate = 2000
  burst = 2000
  [group.concurrency]
  law = "fixed"
  limit = 4000
  [group.queue]
  max = 0
` + noResources

const quotaLabLeased = "sync = \"leased\"\n  lease_period = \"100ms\"\n  lease_expiry = \"2s\""

// labRun is one scenario's daemons and load.
type labRun struct {
	srv   *redistest.Server
	up    *arrivals
	nodes []*node
	start time.Time

	mu      sync.Mutex
	results []labload.Result
	sends   sendLog
}

// sendLog records each request the generators send: when it left (the
// transport's RoundTrip) and whether it was admitted, so that a dip can be
// told from a stall of the test process, which stops the generators and
// the upstream's count of arrivals alike.
type sendLog struct {
	mu sync.Mutex
	at []time.Time
	ok []bool
}

// sendRecorder is a generator's transport that records into log.
type sendRecorder struct {
	next http.RoundTripper
	log  *sendLog
}

func (s sendRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	at := time.Now()
	resp, err := s.next.RoundTrip(req)
	ok := err == nil && resp.StatusCode == http.StatusOK
	s.log.mu.Lock()
	s.log.at, s.log.ok = append(s.log.at, at), append(s.log.ok, ok)
	s.log.mu.Unlock()
	return resp, err
}

func labStart(t *testing.T, sync string) *labRun {
	t.Helper()
	r := &labRun{srv: redistest.Start(t), up: startArrivals(t)}
	config := strings.NewReplacer("REDIS", r.srv.Addr(), "UPSTREAM", r.up.url, "SYNC", sync).Replace(prelude + quotaLabConfig)
	r.nodes = startNodes(t, 3, config)
	return r
}

// drive offers each node its rate for d, open loop, and runs the events at
// their offsets from the start meanwhile; it returns when the load is over.
func (r *labRun) drive(t *testing.T, rates []float64, d time.Duration, events map[time.Duration]func()) {
	t.Helper()
	var gens []*labload.Generator
	for i, n := range r.nodes {
		// The generator's own transport (see labload.Params), recorded.
		tr := &http.Transport{MaxIdleConns: labload.DefaultMaxInflight, MaxIdleConnsPerHost: labload.DefaultMaxInflight,
			IdleConnTimeout: 30 * time.Second, DisableCompression: true}
		t.Cleanup(tr.CloseIdleConnections)
		g, err := labload.New(labload.Params{Target: n.s.url("/work"), Schedule: labload.Schedule{{For: d, From: rates[i], To: rates[i]}},
			Tenants: labload.Mix{{Name: n.name, Weight: 1}}, Timeout: 5 * time.Second, Seed: uint64(i + 1),
			Transport: sendRecorder{next: tr, log: &r.sends}})
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, g)
	}
	var wg sync.WaitGroup
	r.start = time.Now()
	for _, g := range gens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := g.Run(context.Background())
			if err != nil {
				t.Error(err)
			}
			r.mu.Lock()
			r.results = append(r.results, res)
			r.mu.Unlock()
		}()
	}
	// The events run at their offsets (off the test's goroutine); those
	// not yet run when the load ends never run, and drive returns once
	// those under way are over: none acts after the scenario (a restart
	// then would outlive the test's cleanup).
	var evs sync.WaitGroup
	var timers []*time.Timer
	for at, ev := range events {
		evs.Add(1)
		timer := time.AfterFunc(at, func() { defer evs.Done(); ev() })
		timers = append(timers, timer)
	}
	wg.Wait()
	for _, timer := range timers {
		if timer.Stop() {
			evs.Done()
		}
	}
	evs.Wait()
}

// restart starts Redis again, empty, from an event of drive.
func (r *labRun) restart(t *testing.T) {
	if err := r.srv.TryRestart(); err != nil {
		t.Errorf("restarting redis-server: %v", err)
	}
}

// between counts the admitted requests in [from, to) after the start, by
// node, and in all.
func (r *labRun) between(from, to time.Duration) (map[string]int, int) {
	return r.up.count(r.start.Add(from), r.start.Add(to))
}

// offered is the arrivals each generator offered in the whole seconds
// [from, to) after the start, by node.
func (r *labRun) offered(from, to time.Duration) map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int64{}
	for _, res := range r.results {
		if len(res.Tenants) != 1 {
			continue
		}
		for _, s := range res.Seconds {
			if at := time.Duration(s.T) * time.Second; at >= from && at < to {
				out[res.Tenants[0].Name] += s.Offered
			}
		}
	}
	return out
}

// slowest is the slowest answer of the run, admitted or refused (from the
// instant each request was due), and the generators' own worst lateness in
// sending one (which the first includes).
func (r *labRun) slowest() (answer, lag time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	worst, late := 0.0, 0.0
	for _, res := range r.results {
		worst = max(worst, res.Totals.Latency.Max, res.Totals.RejectLatency.Max)
		late = max(late, res.DispatchLag.Max)
	}
	return time.Duration(worst * float64(time.Millisecond)), time.Duration(late * float64(time.Millisecond))
}

// pipeline is the p50 and p99 of the admitted requests' latency: how far
// an arrival at the upstream trails its decision, which the counts by
// arrival time are off by at a window's ends.
func (r *labRun) pipeline() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	p50, p99 := 0.0, 0.0
	for _, res := range r.results {
		p50, p99 = max(p50, res.Totals.Latency.P50), max(p99, res.Totals.Latency.P99)
	}
	return fmt.Sprintf("admitted latency p50 %.0fms, p99 %.0fms", p50, p99)
}

// dip is the longest stretch in [from, to) after the start over which
// every 100ms window admitted fewer than floor requests (a window
// starting every 10ms): how long the nodes together admitted less than
// floor per 100ms, and when it began.
func (r *labRun) dip(from, to time.Duration, floor float64) (longest, at time.Duration) {
	_, all := r.up.since(r.start.Add(from))
	const step, width = 10 * time.Millisecond, 100 * time.Millisecond
	run := time.Duration(0)
	lo, hi := 0, 0
	for w := from; w+width <= to; w += step {
		a, b := r.start.Add(w), r.start.Add(w+width)
		for lo < len(all) && all[lo].Before(a) {
			lo++
		}
		for hi < len(all) && all[hi].Before(b) {
			hi++
		}
		if float64(hi-lo) < floor {
			run += step
			if run > longest {
				longest, at = run, w+step-run
			}
		} else {
			run = 0
		}
	}
	return longest, at
}

// decided is dip by the generators' send instants: the longest stretch in
// [from, to) after the start over which every 100ms window (one starting
// every 10ms) had fewer requests admitted, of those sent in it, than 0.9 ×
// min(sent, quota per 100ms) — the limiter's dip, whatever the test
// process's stalls, which delay sends and arrivals alike; and stalled, the
// longest stretch over which the generators sent fewer than 0.9 × offered
// per 100ms (their own dip: what the arrival count's dip includes); and
// every stretch of the limiter's dip, as "length@start".
func (r *labRun) decided(from, to time.Duration, quota, offered float64) (dip, dipAt, stalled, stalledAt time.Duration, dips []string) {
	type send struct {
		at time.Time
		ok bool
	}
	r.sends.mu.Lock()
	all := make([]send, len(r.sends.at))
	for i, at := range r.sends.at {
		all[i] = send{at, r.sends.ok[i]}
	}
	r.sends.mu.Unlock()
	slices.SortFunc(all, func(x, y send) int { return x.at.Compare(y.at) })
	const step, width = 10 * time.Millisecond, 100 * time.Millisecond
	perWindow := width.Seconds()
	var dipRun, stallRun time.Duration
	lo, hi, ok := 0, 0, 0 // ok: admitted among all[lo:hi]
	for w := from; w+width <= to; w += step {
		a, b := r.start.Add(w), r.start.Add(w+width)
		for lo < len(all) && all[lo].at.Before(a) {
			if lo < hi && all[lo].ok {
				ok--
			}
			lo++
		}
		hi = max(hi, lo)
		for hi < len(all) && all[hi].at.Before(b) {
			if all[hi].ok {
				ok++
			}
			hi++
		}
		sent := float64(hi - lo)
		if float64(ok) < 0.9*min(sent, quota*perWindow) {
			dipRun += step
			if dipRun > dip {
				dip, dipAt = dipRun, w+step-dipRun
			}
		} else if dipRun > 0 {
			dips = append(dips, fmt.Sprintf("%v@%v", dipRun, w-dipRun))
			dipRun = 0
		}
		if sent < 0.9*offered*perWindow {
			stallRun += step
			if stallRun > stalled {
				stalled, stalledAt = stallRun, w+step-stallRun
			}
		} else {
			stallRun = 0
		}
	}
	if dipRun > 0 {
		dips = append(dips, fmt.Sprintf("%v@%v (to the end)", dipRun, to-dipRun))
	}
	return dip, dipAt, stalled, stalledAt, dips
}

// labSteady: rates offered to the nodes (steady: 1,000/s each, 1.5 times
// the quota; steady-6000: 2,000/s each, the load) for 13 s: from
// 2 s to 12 s the nodes admit the quota within ±2 %, once what the stock
// gave up meanwhile is set aside (the bucket starts full, a second of the
// quota, and the stock is read from Redis at both ends), and they call
// Redis (MONITOR) for at most 1 % of the decisions. At 6,000/s only the
// calls are judged (accurate is false): on two shared cores the arrivals
// there trail the decisions by up to seconds (see labOffered), which the
// counts at the window's ends are off by.
func labSteady(t *testing.T, rates []float64, accurate bool) {
	r := labStart(t, quotaLabLeased)
	rdb := r.srv.Client()
	mon := r.srv.Monitor()
	var mu sync.Mutex
	var ends [2]bucketState
	read := func(i int) func() {
		return func() {
			st, _ := bucketOf(rdb, labRate, labBurst)
			mu.Lock()
			ends[i] = st
			mu.Unlock()
		}
	}
	r.drive(t, rates, 13*time.Second, map[time.Duration]func(){2 * time.Second: read(0), 12 * time.Second: read(1)})
	calls := nodeCalls(mon.Stop())
	by, admitted := r.between(2*time.Second, 12*time.Second)
	decisions := int64(0)
	for _, res := range r.results {
		decisions += res.Totals.OK + res.Totals.Rejected
	}
	quota := labRate * 10
	mu.Lock()
	drained := ends[0].stock - ends[1].stock
	mu.Unlock()
	steady := float64(admitted) - drained
	t.Logf("steady: admitted %d in 10 s (%v): %+.2f %% of the quota; less what the stock gave up (%.0f): %+.2f %%; Redis calls %d for %d decisions (%.3f %%)",
		admitted, by, 100*(float64(admitted)/quota-1), drained, 100*(steady/quota-1), calls, decisions, 100*float64(calls)/float64(decisions))
	if accurate && math.Abs(steady/quota-1) > 0.02 {
		t.Errorf("steady: admitted %d in 10 s (%.0f less what the stock gave up), want the quota %.0f ± 2 %%", admitted, steady, quota)
	}
	if float64(calls) > 0.01*float64(decisions) {
		t.Errorf("steady: %d Redis calls for %d decisions, want ≤ 1 %%", calls, decisions)
	}
}

// labOutage: 1,000/s offered to each node; Redis is killed (or hung:
// SIGSTOP) at 4 s for 10 s. The nodes together never admit less than 90 %
// of min(offered, quota) per 100ms for longer than one lease period, and
// no request waits 1 s. Judged by the generators' send instants (decided):
// the count of arrivals at the upstream, logged beside it, also dips when
// the test process (generators and upstream) stalls on a shared host.
func labOutage(t *testing.T, how string) {
	r := labStart(t, quotaLabLeased)
	// The events run off the test's goroutine: signals, and a restart
	// that reports its failure with t.Errorf.
	stop, back := syscall.SIGKILL, func() { r.restart(t) }
	if how == "hung" {
		stop, back = syscall.SIGSTOP, func() { _ = r.srv.Signal(syscall.SIGCONT) }
	}
	r.drive(t, labOffered, 20*time.Second, map[time.Duration]func(){
		4 * time.Second:  func() { _ = r.srv.Signal(stop) },
		14 * time.Second: back,
	})
	floor := 0.9 * min(3*labOffered[0], labRate) / 10
	arrived, arrivedAt := r.dip(3*time.Second, 18*time.Second, floor)
	dip, at, stalled, stalledAt, dips := r.decided(3*time.Second, 18*time.Second, labRate, 3*labOffered[0])
	t.Logf("%s: every stretch under 90 %% of min(sent, quota) per 100ms, by send instant: %v", how, dips)
	_, during := r.between(4*time.Second, 14*time.Second)
	slowest, lag := r.slowest()
	t.Logf("%s: admitted %d in the 10 s without Redis (%.1f/s, %.1f %% of the quota); the longest stretch under 90 %% of min(sent, quota) per 100ms, by send instant: %v from %v; "+
		"by arrival at the upstream (under 90 %% of the quota): %v from %v; the generators sent under 90 %% of their rate for %v from %v (Redis away from 4s to 14s); slowest answer %v (the generator sent up to %v late); %s",
		how, during, float64(during)/10, 100*float64(during)/(labRate*10), dip, at, arrived, arrivedAt, stalled, stalledAt, slowest, lag, r.pipeline())
	if dip > 100*time.Millisecond {
		t.Errorf("%s: admitted under 90 %% of min(sent, quota) for %v, longer than a lease period", how, dip)
	}
	if slowest-lag > time.Second {
		t.Errorf("%s: an answer took %v (%v beyond the generator's lateness)", how, slowest, slowest-lag)
	}
}

// labRestart: 1,000/s offered to each node; Redis is killed at 4 s and
// started again empty at 6 s. Over the 8 s from the kill the nodes admit
// no more than the quota, the stock Redis had before the kill and the
// stated bound (1.5 × rate × lease_period).
func labRestart(t *testing.T) {
	r := labStart(t, quotaLabLeased)
	c := client(t)
	rdb := r.srv.Client()
	var before bucketState
	var mu sync.Mutex
	r.drive(t, labOffered, 16*time.Second, map[time.Duration]func(){
		4 * time.Second: func() {
			st, _ := bucketOf(rdb, labRate, labBurst)
			mu.Lock()
			before = st
			mu.Unlock()
			_ = r.srv.Signal(syscall.SIGKILL)
		},
		6 * time.Second: func() { r.restart(t) },
	})
	bound := r.nodes[0].lease(t, c).Lease.Bound
	_, admitted := r.between(4*time.Second, 12*time.Second)
	mu.Lock()
	over := float64(admitted) - labRate*8 - before.stock
	mu.Unlock()
	t.Logf("restarted empty: admitted %d in the 8 s from the kill: %+.0f over the quota and the stock before (%.0f); the stated bound %d; %s",
		admitted, over, before.stock, bound, r.pipeline())
	if over > float64(bound) {
		t.Errorf("restarted empty: over-admission %.0f across the restart, beyond the stated bound %d", over, bound)
	}
}

// labUneven: 5,000/500/500 a second offered: the quiet nodes are
// admitted at least 95 % of their demand (the max-min fair split gives them
// all of it, 500 each, and the busy node the other 1,000).
func labUneven(t *testing.T) {
	r := labStart(t, quotaLabLeased)
	r.drive(t, []float64{5000, 500, 500}, 12*time.Second, nil)
	by, admitted := r.between(2*time.Second, 12*time.Second)
	offered := r.offered(2*time.Second, 12*time.Second)
	t.Logf("uneven: admitted %d in 10 s: %v of the offered %v", admitted, by, offered)
	for _, n := range []string{"n2", "n3"} {
		if float64(by[n]) < 0.95*float64(offered[n]) {
			t.Errorf("uneven: quiet node %s admitted %d of the %d it offered, want at least 95 %%", n, by[n], offered[n])
		}
	}
}

// labExact: exact mode, 2,000/s offered to each node, the host saturated:
// what the nodes admit beyond what Redis decided (MONITOR, replayed through
// a local bucket at Redis's instants) is at most 1 % of the quota.
func labExact(t *testing.T) {
	r := labStart(t, "sync = \"exact\"")
	c := client(t)
	mon := r.srv.Monitor()
	r.drive(t, []float64{labRate, labRate, labRate}, 10*time.Second, nil)
	cmds := mon.Stop()
	bucket, err := limits.NewTokenBucket(limits.TokenBucketParams{Rate: labRate, Burst: labBurst})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, cmd := range cmds {
		costs, err := gcraDecisions(cmd, "sluice:shared:gcra:{}")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range costs {
			if bucket.AllowAt(cmd.At, n).Allowed {
				want++
			}
		}
	}
	_, got := r.up.count(r.start.Add(-time.Second), time.Now())
	var timeouts, fallback uint64
	for _, n := range r.nodes {
		st := n.redis(t, c)
		timeouts += st.Timeouts
		fallback += st.Decisions.Fallback
	}
	over := got - want
	quota := labBurst + labRate*10
	t.Logf("exact at saturation: admitted %d, Redis's decisions admit %d: %+d (%.2f %% of the quota %.0f); %d timeouts, %d decided by the fallback",
		got, want, over, 100*float64(over)/quota, quota, timeouts, fallback)
	if float64(over) > 0.01*quota {
		t.Errorf("exact at saturation: %d admitted beyond Redis's decisions, over 1 %% of the quota", over)
	}
}
