package sim

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// Weighted fair sharing of the cores, each thread at most one core.
func TestCPUShares(t *testing.T) {
	for _, tc := range []struct {
		busy, hog  int
		w, cores   float64
		own, other float64
	}{
		{1, 0, 1, 2, 1, 1}, // room for everyone
		{2, 2, 1, 4, 1, 1}, // exactly
		{16, 2, 1, 2, 2.0 / 18, 2.0 / 18},
		{16, 2, 0.25, 2, 2 / 16.5, 0.25 * 2 / 16.5},
		{1, 2, 0.25, 2, 1, 0.5},        // the worker is capped at a core, the hog gets the rest
		{2, 1, 4, 2, 0.5, 1},           // a heavier hog is capped at a core
		{0, 3, 1, 2, 2.0 / 3, 2.0 / 3}, // no worker: the hog shares
	} {
		own, other := cpuShares(tc.busy, tc.hog, tc.w, tc.cores)
		if math.Abs(own-tc.own) > 1e-9 || math.Abs(other-tc.other) > 1e-9 {
			t.Errorf("cpuShares(%d, %d, %v, %v) = %v, %v; want %v, %v", tc.busy, tc.hog, tc.w, tc.cores, own, other, tc.own, tc.other)
		}
	}
}

// runFixed simulates sc under a fixed limit.
func runFixed(t *testing.T, sc Scenario, limit int) *Report {
	t.Helper()
	law, err := adaptive.NewFixed(adaptive.FixedParams{Bounds: adaptive.Bounds{Min: limit, Max: limit, Initial: limit}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(sc, law)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A CPU-bound backend saturates at cores / mean, and a hog takes its
// weighted share: with 16 workers against 2 busy loops on 2 cores the
// workers get 16/18 of the cores at nice 0, and 16/16.65 against nice 5.
func TestCPUBoundCapacity(t *testing.T) {
	for _, tc := range []struct {
		name string
		hogs []Hog
		want float64
	}{
		{"quiet", nil, 1000},
		{"nice 0 hog", []Hog{{Threads: 2}}, 1000 * 16 / 18.0},
		{"nice 5 hog", []Hog{{Threads: 2, Nice: 5}}, 1000 * 16 / (16 + 2*math.Pow(1.25, -5))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := Scenario{Seed: 3, Duration: 20 * time.Second, SLO: time.Second,
				Service: Service{Workers: 16, Dist: Dist{Kind: Lognormal, Mean: 2 * time.Millisecond}, Cores: 2},
				Load:    []Segment{{X: 2}}, Hogs: tc.hogs, Gate: Gate{Queue: 1000}, Phases: []Phase{{Name: "warm"}, {Name: "on", At: 5 * time.Second}}}
			r := runFixed(t, sc, 16)
			p := phase(t, r, "on")
			if math.Abs(p.Throughput-tc.want) > 0.03*tc.want {
				t.Errorf("throughput %.0f/s, want %.0f/s ± 3 %%", p.Throughput, tc.want)
			}
			if p.PeakCPU < 0.99 {
				t.Errorf("host CPU peaked at %.2f saturated", p.PeakCPU)
			}
		})
	}
}

// CPU pressure: the share of the interval in which a worker waited for a
// core, and PSI's avg10 of it, which the kernel updates every 2 s by
// e^(-2/10): after a step to full pressure it reads 0 before 2 s, 0.18 at
// 2 s, 0.33 at 4 s.
func TestCPUPressure(t *testing.T) {
	sc := Scenario{Seed: 4, Duration: 5 * time.Second, SLO: time.Second,
		Service: Service{Workers: 16, Dist: Dist{Kind: Lognormal, Mean: 2 * time.Millisecond}, Cores: 2, PSI: PSIInterval},
		Load:    []Segment{{X: 3}}, Gate: Gate{Queue: 1000}}
	r := runFixed(t, sc, 16)
	if got := r.Series[len(r.Series)-1].CPUPressure; got < 0.99 {
		t.Errorf("interval pressure %.3f with 16 workers on 2 cores, want about 1", got)
	}
	if got := runFixed(t, sc, 2).Series[len(r.Series)-1].CPUPressure; got > 0.01 {
		t.Errorf("interval pressure %.3f with a worker per core, want 0", got)
	}
	sc.Service.PSI = PSIAvg10
	r = runFixed(t, sc, 16)
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{time.Second, 0}, {2 * time.Second, 1 - math.Exp(-0.2)}, {4 * time.Second, 1 - math.Exp(-0.4)}} {
		p := r.Series[int(c.at/sc.withDefaults().Interval)-1]
		if math.Abs(p.CPUPressure-c.want) > 0.02 {
			t.Errorf("avg10 at %v: %.3f, want %.3f", c.at, p.CPUPressure, c.want)
		}
	}
}

// An outage fails what the backend holds and every request sent to it; the
// breaker then refuses all but a probe every 5 s; the backend is back after.
func TestOutageAndBreaker(t *testing.T) {
	sc := Scenario{Seed: 5, Duration: 30 * time.Second, SLO: time.Second,
		Service: Service{Workers: 10, Dist: Dist{Kind: Lognormal, Mean: 10 * time.Millisecond, Sigma: 0.5}},
		Load:    []Segment{{X: 0.5}}, Outages: []Outage{{At: 10 * time.Second, For: 10 * time.Second}}, Gate: Gate{Breaker: true},
		Phases: []Phase{{Name: "up"}, {Name: "down", At: 10 * time.Second}, {Name: "back", At: 20 * time.Second}}}
	r := runFixed(t, sc, 40)
	down := phase(t, r, "down")
	if down.Goodput != 0 || down.DropRate != 1 {
		t.Errorf("down: goodput %.0f/s, drop rate %.2f", down.Goodput, down.DropRate)
	}
	open, sent := down.Rejections[adaptive.RejectCircuitOpen], down.Attempts*10
	if float64(open) < 0.99*sent {
		t.Errorf("down: the breaker refused %d of %.0f attempts", open, sent)
	}
	if back := phase(t, r, "back"); back.Goodput < 0.95*back.Offered {
		t.Errorf("back: goodput %.0f/s of %.0f offered", back.Goodput, back.Offered)
	}
}

// Halving the workers halves the capacity.
func TestWorkerChange(t *testing.T) {
	sc := Scenario{Seed: 6, Duration: 20 * time.Second, SLO: time.Second,
		Service: Service{Workers: 10, Dist: Dist{Kind: Lognormal, Mean: 10 * time.Millisecond, Sigma: 0.5}},
		Load:    []Segment{{X: 2}}, WorkerChanges: []WorkerChange{{At: 10 * time.Second, Workers: 5}}, Gate: Gate{Queue: 1000},
		Phases: []Phase{{Name: "full"}, {Name: "shift", At: 10 * time.Second}, {Name: "half", At: 12 * time.Second}}}
	r := runFixed(t, sc, 20)
	if p := phase(t, r, "full"); math.Abs(p.Throughput-1000) > 30 {
		t.Errorf("full: throughput %.0f/s, want 1000", p.Throughput)
	}
	if p := phase(t, r, "half"); math.Abs(p.Throughput-500) > 15 {
		t.Errorf("half: throughput %.0f/s, want 500", p.Throughput)
	}
}

// TestSent: the lab's way of counting files each attempt under the second
// and phase it arrived in, whenever it ended. A constant 600 ms service
// under a fixed limit of 10: every success takes its wait plus 600 ms; the
// seconds add up to their phase, and every attempt that arrived in the
// first phase ends one way or another.
func TestSent(t *testing.T) {
	sc := Scenario{Duration: 20 * time.Second, SLO: 700 * time.Millisecond, Seed: 3,
		Service: Service{Workers: 10, Dist: Dist{Kind: Lognormal, Mean: 600 * time.Millisecond}},
		Load:    []Segment{{X: 0.5}, {At: 10 * time.Second, X: 3}},
		Phases:  []Phase{{Name: "under"}, {Name: "over", At: 10 * time.Second}},
		Gate:    Gate{Queue: 20, NoCoDel: true, MaxWait: 2 * time.Second, NoShedder: true}, Clients: Clients{Timeout: 5 * time.Second}}
	r := runFixed(t, sc, 10)
	if len(r.Seconds) != 20 {
		t.Fatalf("%d seconds, want 20", len(r.Seconds))
	}
	for i, p := range r.Phases {
		var sum Sent
		for _, s := range r.Seconds {
			if s.From >= p.Start && s.From < p.End {
				sum.Attempts += s.Attempts
				sum.OK += s.OK
				sum.Good += s.Good
				sum.Rejected += s.Rejected
				sum.Dropped += s.Dropped
			}
		}
		got := p.Sent
		if got.From != p.Start || got.To != p.End || got.Attempts != sum.Attempts || got.OK != sum.OK ||
			got.Good != sum.Good || got.Rejected != sum.Rejected || got.Dropped != sum.Dropped {
			t.Errorf("phase %s: %+v, its seconds add up to %+v", p.Name, got, sum)
		}
		if ended := got.OK + got.Rejected + got.Dropped; i == 0 && ended != got.Attempts {
			t.Errorf("phase %s: %d attempts arrived, %d ended", p.Name, got.Attempts, ended)
		}
		if got.P50 < 600*time.Millisecond || got.P99 < got.P50 {
			t.Errorf("phase %s: p50 %v p99 %v, want at least the 600ms service", p.Name, got.P50, got.P99)
		}
	}
	// At 0.5 × C little is refused and little waits long; at 3 × C a
	// queue of 20 refuses most, and the successes wait in it.
	if u := r.Phases[0].Sent; u.Rejected > u.Attempts/10 || u.Good < u.OK*8/10 {
		t.Errorf("under: %+v", u)
	}
	if o := r.Phases[1].Sent; o.Rejected < o.Attempts/2 || o.P99 < 1200*time.Millisecond {
		t.Errorf("over: %+v: want most refused, the queue's waits in p99", o)
	}
}

// TestHost: on shared cores a served request's answer takes its trip back
// holding its gate slot but no worker, its client's hops count end to end,
// and cores asked for more than they have fall behind.
func TestHost(t *testing.T) {
	base := Scenario{Duration: 20 * time.Second, SLO: time.Second, Seed: 5,
		Service: Service{Workers: 10, Dist: Dist{Kind: Lognormal, Mean: 10 * time.Millisecond}},
		Load:    []Segment{{X: 0.2}, {At: 10 * time.Second, X: 3}},
		Phases:  []Phase{{Name: "light"}, {Name: "over", At: 10 * time.Second}},
		Gate:    Gate{Queue: 50, NoShedder: true}}
	idle := Host{Cores: 2, Wake: 5 * time.Millisecond, Send: 100 * time.Microsecond}
	shared := base
	shared.Host = idle
	plain, host := runFixed(t, base, 10), runFixed(t, shared, 10)
	// Light load: every request takes its 10 ms service, and on the host
	// its 5 ms trip and the client's 0.1 ms, a little stretched by the
	// cores' use.
	if p := plain.Phases[0].Sent.P50; p != 10*time.Millisecond {
		t.Errorf("light, no host: p50 %v, want the 10ms service", p)
	}
	if p := host.Phases[0].Sent.P50; p < 15100*time.Microsecond || p > 15300*time.Microsecond {
		t.Errorf("light, on the host: p50 %v, want 10ms + 5ms + 0.1ms, a little more", p)
	}
	// Overload under a limit of 10 = the workers: the slot is held for the
	// trip back too, so 10 slots serve 10 / 15 ms, not the workers' 10 / 10 ms.
	if g, want := host.Phases[1].Sent.Goodput(), 10/0.0151; math.Abs(g-want) > 0.05*want {
		t.Errorf("overload on the host: goodput %.0f/s, want about %.0f/s (10 slots of 15ms)", g, want)
	}
	if g := plain.Phases[1].Sent.Goodput(); math.Abs(g-1000) > 50 {
		t.Errorf("overload without a host: goodput %.0f/s, want C = 1000/s", g)
	}
	// With a limit of 20 the trips back hold no worker: C again.
	if g := runFixed(t, shared, 20).Phases[1].Sent.Goodput(); math.Abs(g-1000) > 50 {
		t.Errorf("overload on the host, limit 20: goodput %.0f/s, want C = 1000/s", g)
	}
	// Cores too few for the load: 3,000 attempts a second ask 3 s of CPU
	// a second of 2 cores (0.5 ms each to send, and to refuse or forward),
	// which fall behind by 1 s of CPU every second: a served request waits
	// half a second longer every second.
	busy := base
	busy.Clients.Timeout, busy.Duration = time.Minute, 40*time.Second
	busy.Host = Host{Cores: 2, Send: 500 * time.Microsecond, Refuse: 500 * time.Microsecond, Forward: 500 * time.Microsecond}
	r := runFixed(t, busy, 20)
	if first, last := r.Seconds[12].P99, r.Seconds[18].P99; !(first > 300*time.Millisecond && last > first+2*time.Second) {
		t.Errorf("overloaded cores: p99 %v at 12 s, %v at 18 s: want late answers, later and later", first, last)
	}
	if err := (Host{Cores: -1}).Validate(); err == nil {
		t.Error("negative cores accepted")
	}
}
