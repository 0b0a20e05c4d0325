package gate

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/limits"
	"github.com/sluicehq/sluice/probe"
)

// serve admits n requests, lets each take latency on the fake clock (all
// concurrently), and finishes them with outcome o.
func serve(t *testing.T, g *Gate, clk *fakeClock, n int, latency time.Duration, o Outcome) {
	t.Helper()
	ps := make([]Pass, n)
	for i := range ps {
		ps[i] = mustEnter(t, g, request("/"))
	}
	clk.Advance(latency)
	for i := range ps {
		ps[i].Done(o)
	}
}

// TestControlLoopAIMD drives the loop with a fake sampler and chosen upstream
// latencies and checks that the limit moves as AIMD says: +1 while healthy
// and in use, ×backoff above the latency target or on a drop.
func TestControlLoopAIMD(t *testing.T) {
	clk := newFakeClock()
	res := &fakeSampler{}
	res.set(0.42, 0.3)
	var changes []Change
	g, err := New(Params{Config: config(t, `
[[group]]
name = "g"
  [group.concurrency]
  law = "aimd"
  initial = 10
  min = 1
  max = 100
  backoff = 0.5
  [group.targets]
  latency = "100ms"
  cpu = 0
  memory = 0
`), Clock: clk, Resources: res, OnChange: func(c Change) { changes = append(changes, c) }})
	if err != nil {
		t.Fatal(err)
	}
	gr := g.testGroup(t, "g")
	steps := []struct {
		n       int
		latency time.Duration
		outcome Outcome
		limit   int
	}{
		{6, 20 * time.Millisecond, Success, 11}, // healthy, in use: +1
		{6, 20 * time.Millisecond, Success, 12}, // again
		{2, 20 * time.Millisecond, Success, 12}, // not in use (2 < 12/2): held
		{6, 300 * time.Millisecond, Success, 6}, // p99 300ms > 100ms: ×0.5
		{3, 10 * time.Millisecond, Dropped, 3},  // drops: ×0.5
		{3, 10 * time.Millisecond, Success, 4},  // in use again: +1
		{0, 0, Success, 4},                      // nothing happened: held
		{4, 50 * time.Millisecond, Ignored, 5},  // ignored outcomes are no overload signal
		{4, 50 * time.Millisecond, Success, 6},  // +1
		{5, 150 * time.Millisecond, Success, 3}, // ×0.5
		{2, 150 * time.Millisecond, Success, 1}, // ×0.5, rounded down
		{1, 150 * time.Millisecond, Success, 1}, // never below min
		{1, 10 * time.Millisecond, Success, 2},  // up again
		{2, 10 * time.Millisecond, Success, 3},  // and again
		{0, 250 * time.Millisecond, Success, 3}, // idle
		{3, 1 * time.Millisecond, Success, 4},   // +1
		{4, 200 * time.Millisecond, Dropped, 2}, // drop
		{2, 200 * time.Millisecond, Success, 1}, // p99 200ms > 100ms
		{1, 99 * time.Millisecond, Success, 2},  // just under the target
		{2, 101 * time.Millisecond, Success, 1}, // just over
	}
	for i, s := range steps {
		serve(t, g, clk, s.n, s.latency, s.outcome)
		g.Tick(clk.Advance(250*time.Millisecond - s.latency))
		if got := gr.conc.Limit(); got != s.limit {
			t.Fatalf("step %d: limit %d, want %d", i, got, s.limit)
		}
		info := gr.info.Load()
		sm := info.sample
		want := struct{ succ, drops int }{}
		switch s.outcome {
		case Success:
			want.succ = s.n
		case Dropped:
			want.drops = s.n
		}
		if sm.Successes != want.succ || sm.Drops != want.drops || sm.MaxInFlight != s.n {
			t.Fatalf("step %d: sample successes %d drops %d peak %d, want %d %d %d",
				i, sm.Successes, sm.Drops, sm.MaxInFlight, want.succ, want.drops, s.n)
		}
		if s.outcome == Success && s.n > 0 && math.Abs(float64(sm.Latency.P99-s.latency)) > float64(s.latency)/100 {
			t.Fatalf("step %d: p99 %v, want %v within 1%%", i, sm.Latency.P99, s.latency)
		}
		if sm.Interval != 250*time.Millisecond || !sm.CPUKnown || sm.CPU != 0.42 || sm.Memory != 0.3 {
			t.Fatalf("step %d: sample interval %v cpu %v/%v memory %v", i, sm.Interval, sm.CPU, sm.CPUKnown, sm.Memory)
		}
		if wantTP := float64(want.succ+want.drops) / 0.25; sm.Throughput != wantTP {
			t.Fatalf("step %d: throughput %v, want %v", i, sm.Throughput, wantTP)
		}
		if sm.ByPriority[adaptive.Default].Arrived != s.n {
			t.Fatalf("step %d: derived arrivals %d, want %d", i, sm.ByPriority[adaptive.Default].Arrived, s.n)
		}
	}
	st, _ := g.Group("g")
	if st.LastChange == nil || st.LastChange.To != 1 || st.LastChange.From != 2 || st.LastChange.Reason == "" {
		t.Errorf("last change = %+v, want 2 → 1 with a reason", st.LastChange)
	}
	if len(changes) == 0 || changes[len(changes)-1].To != 1 {
		t.Errorf("OnChange saw %d changes, the last %+v", len(changes), changes[len(changes)-1])
	}
	var arrived uint64
	for _, s := range steps {
		arrived += uint64(s.n)
	}
	if st.Arrived != arrived || st.Completed[Success]+st.Completed[Dropped]+st.Completed[Ignored] != arrived {
		t.Errorf("arrived %d, completed %v; want %d each", st.Arrived, st.Completed, arrived)
	}
}

// TestControlLoopTargetFollowsTheLaw runs the default law through the gate
// and replays the samples the gate built into a twin of the law: the gate's
// limit after every tick must be the twin's decision.
func TestControlLoopTargetFollowsTheLaw(t *testing.T) {
	g, clk := newGate(t, `
[[group]]
name = "g"
  [group.concurrency]
  law = "target"
  initial = 40
  max = 400
  [group.targets]
  latency = "200ms"
  cpu = 0
  memory = 0
  [group.queue]
  max = 0
`)
	gr := g.testGroup(t, "g")
	twin, err := adaptive.NewTarget(adaptive.TargetParams{Bounds: adaptive.Bounds{Min: 1, Max: 400, Initial: 40},
		Latency: 200 * time.Millisecond, Quantile: adaptive.P99})
	if err != nil {
		t.Fatal(err)
	}
	cut := false
	for i := range 40 {
		// A service whose latency grows with the load it is given, offered
		// more than the limit (the excess is refused: the limit binds).
		n := gr.conc.Limit()
		lat := 10*time.Millisecond + time.Duration(n)*5*time.Millisecond
		ps := make([]Pass, 0, n)
		for range n + 10 {
			if p, _, ok := g.Enter(request("/")); ok {
				ps = append(ps, p)
			}
		}
		clk.Advance(lat)
		for j := range ps {
			ps[j].Done(Success)
		}
		g.Tick(clk.Advance(250*time.Millisecond - min(lat, 200*time.Millisecond)))
		s := gr.info.Load().sample
		d := twin.Update(s)
		if gr.conc.Limit() != d.Limit {
			t.Fatalf("tick %d: gate limit %d, law says %d", i, gr.conc.Limit(), d.Limit)
		}
		cut = cut || d.Limit < n
	}
	if !cut {
		t.Error("the law never cut the limit of an overloaded service")
	}
	if st, _ := g.Group("g"); st.LastChange == nil || !strings.Contains(st.LastChange.Reason, "p99") {
		t.Errorf("last change %+v, want a p99 reason", st.LastChange)
	}
}

// TestManagedRate: law "target" manages the token rate of a group-wide
// bucket: under overload the law lowers it and the bucket follows.
func TestManagedRate(t *testing.T) {
	g, clk := newGate(t, `
[[group]]
name = "g"
  [group.rate]
  rate = 1000
  burst = 100
  [group.concurrency]
  law = "target"
  initial = 50
  [group.targets]
  latency = "100ms"
  cpu = 0
  memory = 0
`)
	gr := g.testGroup(t, "g")
	st, _ := g.Group("g")
	if !st.RateManaged || st.TokenRate != 1000 {
		t.Fatalf("status: managed %v, rate %v; want a managed rate of 1000", st.RateManaged, st.TokenRate)
	}
	// Four healthy intervals set the latency baseline, then the service
	// queues: p99 300 ms against a 100 ms target.
	for i := range 5 {
		lat := 20 * time.Millisecond
		if i == 4 {
			lat = 300 * time.Millisecond
		}
		serve(t, g, clk, 40, lat, Success)
		g.Tick(clk.Advance(250*time.Millisecond - min(lat, 200*time.Millisecond)))
	}
	d := gr.info.Load().decision
	st, _ = g.Group("g")
	if d.Rate <= 0 || d.Rate >= 1000 || st.TokenRate != d.Rate {
		t.Fatalf("decision rate %v, status rate %v; want a cut below 1000 applied", d.Rate, st.TokenRate)
	}
	tb := gr.rate.algo.(*limits.TokenBucket).Params()
	if tb.Rate != d.Rate || tb.Burst != int64(math.Round(d.Rate*0.1)) {
		t.Errorf("bucket %+v, want rate %v with the burst scaled to %v", tb, d.Rate, math.Round(d.Rate*0.1))
	}
	// The cut rate turns the excess away.
	var rateRejected int
	for range 50 {
		p, rej, ok := g.Enter(request("/"))
		if ok {
			p.Done(Success)
		} else if rej.Reason == adaptive.RejectRate {
			rateRejected++
		}
	}
	if rateRejected == 0 {
		t.Error("no request refused by the cut rate")
	}
}

// tickSignal is a ResourceSampler that closes its channel when it is
// sampled for the n-th time: the control loop samples once per tick, so that
// is the n-th tick under way.
type tickSignal struct {
	n       int64
	calls   atomic.Int64
	reached chan struct{}
}

func newTickSignal(n int64) *tickSignal { return &tickSignal{n: n, reached: make(chan struct{})} }

func (s *tickSignal) Sample(now time.Time) probe.Resources {
	if s.calls.Add(1) == s.n {
		close(s.reached)
	}
	return probe.Resources{Time: now, CPU: probe.Signal{Reason: "test"}, Memory: probe.Signal{Reason: "test"}}
}

func TestRunTicksAndSavesOnShutdown(t *testing.T) {
	dir := t.TempDir()
	saved := make(chan error, 16)
	ticks := newTickSignal(2)
	g, err := New(Params{Config: config(t, `
[control]
interval = "10ms"

[[group]]
name = "g"
  [group.concurrency]
  law = "fixed"
  limit = 7
`), StateFile: dir + "/state.json", Resources: ticks, OnSave: func(_ string, err error) { saved <- err }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	timeout := time.NewTimer(10 * time.Second) // a failure's bound, not a pace
	defer timeout.Stop()
	select {
	case <-ticks.reached:
	case <-timeout.C:
		t.Fatalf("Run made %d ticks in 10s, want 2", g.Status().Ticks)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := g.Status().Ticks; n < 2 {
		t.Fatalf("Run returned after %d ticks, want at least 2", n)
	}
	if err := <-saved; err != nil {
		t.Fatalf("save on shutdown: %v", err)
	}
	st, info := readState(dir+"/state.json", time.Now(), 0)
	if info.Err != nil || st.Groups["g"].Limit != 7 {
		t.Fatalf("state after Run: %+v, %v", st, info.Err)
	}
}

// TestSampleQueueFields: the queue figures of the sample — waiters now, the
// capacity, requests that waited, their waits, and whether the queue was
// empty at some moment of the interval (adaptive.QueueWait needs it).
func TestSampleQueueFields(t *testing.T) {
	g := newRealGate(t, `
[[group]]
name = "g"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 5
  max_wait = "1h"
  codel_target = "0s"
`)
	gr := g.testGroup(t, "g")
	holder := mustEnter(t, g, request("/"))
	w1 := enterQueued(t, g, gr, 1, request("/"))
	w2 := enterQueued(t, g, gr, 2, request("/"))

	now := time.Now()
	g.Tick(now)
	s := gr.info.Load().sample
	// Empty when the interval began, two waiting at its end.
	if s.QueueLength != 2 || s.QueueCapacity != 5 || !s.QueueDrained || s.Queued != 0 || s.QueueWaitMax != 0 {
		t.Fatalf("tick 1: %+v", s)
	}
	holder.Done(Success) // to w1
	r1 := <-w1
	g.Tick(now.Add(250 * time.Millisecond))
	s = gr.info.Load().sample
	if s.QueueLength != 1 || s.QueueDrained || s.Queued != 1 || s.QueueWaitMin <= 0 || s.QueueWaitMin != s.QueueWaitMax {
		t.Fatalf("tick 2: length %d drained %v queued %d waits %v..%v; want 1 waiting, never empty, one wait",
			s.QueueLength, s.QueueDrained, s.Queued, s.QueueWaitMin, s.QueueWaitMax)
	}
	r1.p.Done(Success) // to w2: the queue empties
	r2 := <-w2
	g.Tick(now.Add(500 * time.Millisecond))
	s = gr.info.Load().sample
	if s.QueueLength != 0 || !s.QueueDrained || s.Queued != 1 || s.InFlight != 1 || s.MaxInFlight != 1 {
		t.Fatalf("tick 3: %+v", s)
	}
	r2.p.Done(Success)
}

// TestSampleSilenced: a refusal to a silent service (stall.go) counts in
// the read-outs as queue_full, and in the law's sample as Silenced, not as
// a concurrency-stage rejection: it says nothing of the limit (issue 27:
// counted as one, a silence found by chance read as a binding limit, and
// the target law's slow start doubled the limit).
func TestSampleSilenced(t *testing.T) {
	g, clk := newGate(t, `
[[group]]
name = "g"
  [group.concurrency]
  law = "fixed"
  limit = 10
  [group.targets]
  latency = "100ms"
  [group.queue]
  max = 5
`)
	gr := g.testGroup(t, "g")
	serve(t, g, clk, 2, 10*time.Millisecond, Success)
	g.Tick(clk.Now()) // mean 10 ms
	a, b := mustEnter(t, g, request("/")), mustEnter(t, g, request("/"))
	clk.Advance(61 * time.Millisecond) // 2 × 61 ms ≥ 12 × 10 ms: silent
	if _, rej, ok := g.Enter(request("/")); ok || rej.Reason != adaptive.RejectQueueFull {
		t.Fatalf("an arrival to a silent service: admitted %v, %v; want queue_full", ok, rej.Reason)
	}
	a.Done(Success)
	c := mustEnter(t, g, request("/")) // the completion ended the silence
	g.Tick(clk.Now())
	s := gr.info.Load().sample
	if s.Silenced != 1 || s.Rejected != 0 || s.ByPriority[adaptive.Default].Rejected != 0 {
		t.Errorf("sample: Silenced %d, Rejected %d, default's %d; want 1, 0, 0",
			s.Silenced, s.Rejected, s.ByPriority[adaptive.Default].Rejected)
	}
	if n := g.testGroup(t, "g").c.rejected[adaptive.RejectQueueFull].Load(); n != 1 {
		t.Errorf("queue_full counted %d times, want 1", n)
	}
	b.Done(Success)
	c.Done(Success)
}
