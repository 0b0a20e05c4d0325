package gate

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/probe"
)

// serveRound offers n requests, lets the admitted ones take latency on the
// fake clock and finishes them: a service that completes what it is given
// (its throughput follows the limit). It returns the rejections.
func serveRound(t *testing.T, g *Gate, clk *fakeClock, n int, latency time.Duration) []Rejection {
	t.Helper()
	var ps []Pass
	var rejs []Rejection
	for range n {
		if p, rej, ok := g.Enter(request("/")); ok {
			ps = append(ps, p)
		} else {
			rejs = append(rejs, rej)
		}
	}
	clk.Advance(latency)
	for i := range ps {
		ps[i].Done(Success)
	}
	return rejs
}

// A CPU the limit does not move (a neighbour holds the host at 100 %): the
// law restores its limit, the status says which target it ignores, the
// resource guard does not shed on it, OnUnmoved hears it once with the
// law's reason, and once more when the CPU is back under its target.
func TestUnmovedCPUIsIgnored(t *testing.T) {
	clk := newFakeClock()
	res := &fakeSampler{}
	res.set(1, 0.3)
	var mu sync.Mutex
	var changes []UnmovedChange
	g, err := New(Params{Config: config(t, `
[[group]]
name = "g"
  [group.concurrency]
  law = "target"
  initial = 40
  max = 400
  [group.targets]
  latency = "200ms"
  cpu = 0.8
  memory = 0
  [group.queue]
  max = 0
`), Clock: clk, Resources: res, OnUnmoved: func(c UnmovedChange) {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, c)
	}})
	if err != nil {
		t.Fatal(err)
	}
	gr := g.testGroup(t, "g")
	minLimit := 40
	for range 12 {
		serveRound(t, g, clk, gr.conc.Limit()+10, 10*time.Millisecond)
		g.Tick(clk.Advance(240 * time.Millisecond))
		minLimit = min(minLimit, gr.conc.Limit())
	}
	st, _ := g.Group("g")
	if minLimit >= 40 {
		t.Fatal("the law never cut on the CPU: the test tests nothing")
	}
	if !st.Unmoved.Has(adaptive.UnmovedCPU) || st.Limit < 40 {
		t.Fatalf("after 12 ticks at 100 %% CPU: ignored %q, limit %d (fell to %d); want cpu ignored and the limit back at 40 or more",
			st.Unmoved, st.Limit, minLimit)
	}
	if st.Floor != (adaptive.Floor{}) {
		t.Errorf("floor %+v: the guard sheds on a CPU the limit cannot move", st.Floor)
	}
	mu.Lock()
	if len(changes) != 1 || changes[0].Now != adaptive.UnmovedCPU || changes[0].Before != 0 ||
		!strings.Contains(changes[0].Reason, "cpu 100% not moved by the limit") {
		t.Fatalf("OnUnmoved calls %+v, want one saying the cpu is not moved by the limit", changes)
	}
	mu.Unlock()

	res.set(0.5, 0.3)
	serveRound(t, g, clk, 10, 10*time.Millisecond)
	g.Tick(clk.Advance(240 * time.Millisecond))
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 2 || changes[1].Now != 0 || changes[1].Before != adaptive.UnmovedCPU || changes[1].Reason != "" {
		t.Fatalf("OnUnmoved calls %+v, want a second one acting on the cpu again", changes)
	}
	if st, _ := g.Group("g"); st.Unmoved != 0 {
		t.Errorf("ignored %q after the CPU fell under its aim", st.Unmoved)
	}
}

// pressureSampler reports the guarded workload's CPU pressure.
type pressureSampler struct{ pressure probe.Signal }

func (s *pressureSampler) Sample(now time.Time) probe.Resources {
	return probe.Resources{Time: now, CPUPressure: s.pressure, CPUPressureFrom: probe.FromCgroup}
}

// The law is given the guarded workload's CPU pressure when it is known.
func TestSampleCPUPressure(t *testing.T) {
	for _, p := range []probe.Signal{{Value: 0.25, Known: true}, {Reason: "no PSI"}} {
		g, err := New(Params{Config: config(t, "[[group]]\nname = \"g\"\n"), Clock: newFakeClock(),
			Resources: &pressureSampler{pressure: p}})
		if err != nil {
			t.Fatal(err)
		}
		g.Tick(t0.Add(time.Second))
		if s := g.testGroup(t, "g").info.Load().sample; s.CPUPressureKnown != p.Known || s.CPUPressure != p.Value {
			t.Errorf("probe pressure %+v: sample %v (known %v)", p, s.CPUPressure, s.CPUPressureKnown)
		}
	}
}

// The latency target is what the client sees: with the upstream's p99 at 80
// ms of a 100 ms target, a request below critical may wait in the queue at
// most the 20 ms left (not CoDel's 100 ms burst bound, nor max_wait); at 98
// ms, CoDel's 5 ms. Critical keeps the burst bound.
func TestQueueWaitLeavesTheLatencyTarget(t *testing.T) {
	g, clk := newGate(t, `
[[group]]
name = "g"
  [group.concurrency]
  law = "fixed"
  limit = 100
  [group.targets]
  latency = "100ms"
`)
	for _, tc := range []struct {
		upstream, wait time.Duration
	}{{80 * time.Millisecond, 20 * time.Millisecond}, {98 * time.Millisecond, 5 * time.Millisecond}} {
		g.testGroup(t, "g").pol.qw, _ = adaptive.NewQueueWait(adaptive.QueueWaitParams{Target: 5 * time.Millisecond,
			Interval: 100 * time.Millisecond, Latency: 100 * time.Millisecond}) // forget the last case's peak
		serveRound(t, g, clk, 50, tc.upstream)
		g.Tick(clk.Advance(250*time.Millisecond - tc.upstream))
		st, _ := g.Group("g")
		if st.QueueWait != tc.wait || st.QueueWaitCritical != 100*time.Millisecond {
			t.Errorf("upstream %v: wait bound %v (critical %v), want %v (critical 100ms)", tc.upstream, st.QueueWait, st.QueueWaitCritical, tc.wait)
		}
	}
}

// The managed token rate follows capacity: a service that completes 400
// req/s offered three times that, behind a group-wide bucket of 5000/s that
// law "target" manages. The rate comes down to about what the service
// completes, and the excess is then refused at the rate stage: 429 with the
// bucket's exact Retry-After (the time to the next token) and the RateLimit
// figures. When the demand falls under it, the rate goes back to its ceiling.
func TestManagedRateFollowsCapacity(t *testing.T) {
	g, clk := newGate(t, `
[[group]]
name = "g"
  [group.rate]
  rate = 5000
  [group.concurrency]
  law = "target"
  initial = 10
  [group.targets]
  latency = "100ms"
  memory = 0
  [group.queue]
  max = 0
`)
	gr := g.testGroup(t, "g")
	const capacity = 400.0 // req/s: the latency of n in flight is n / capacity
	var last []Rejection
	for range 40 {
		last = last[:0]
		for spent := time.Duration(0); spent < 250*time.Millisecond; {
			n := gr.conc.Limit()
			lat := time.Duration(float64(n) / capacity * float64(time.Second))
			last = append(last, serveRound(t, g, clk, 3*n, lat)...)
			spent += lat
		}
		g.Tick(clk.Now())
	}
	st, _ := g.Group("g")
	if !st.RateManaged || st.TokenRate < capacity || st.TokenRate > 1.3*capacity {
		t.Fatalf("token rate %.0f/s under 3x overload of a %v req/s service, want between 1 and 1.3 times it", st.TokenRate, capacity)
	}
	byRate := 0
	for _, r := range last {
		if r.Reason != adaptive.RejectRate {
			continue
		}
		byRate++
		if r.Status() != 429 || r.Policy.Quota <= 0 || r.Rate.Limit <= 0 {
			t.Fatalf("rate rejection %+v, want a 429 with the policy and the bucket's figures", r)
		}
		if next := time.Duration(float64(time.Second) / st.TokenRate); r.RetryAfter <= 0 || r.RetryAfter > next+time.Millisecond {
			t.Fatalf("Retry-After %v, want the time to the next token, at most %v", r.RetryAfter, next)
		}
	}
	if share := float64(byRate) / float64(len(last)); len(last) == 0 || share < 0.8 {
		t.Errorf("%d of %d refusals in the last interval at the rate stage, want most", byRate, len(last))
	}

	// The demand falls to a sixth of what the service completes.
	for range 30 {
		serveRound(t, g, clk, 15, 25*time.Millisecond)
		g.Tick(clk.Advance(225 * time.Millisecond))
	}
	if st, _ := g.Group("g"); math.Abs(st.TokenRate-5000) > 1 {
		t.Errorf("token rate %.0f/s once the demand fell, want back at its ceiling 5000/s", st.TokenRate)
	}
}
