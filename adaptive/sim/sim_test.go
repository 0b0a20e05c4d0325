package sim

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// runs caches simulation results: several tests assert on the same run, and
// runs are deterministic, so each (scenario, law) pair is simulated once.
var runs struct {
	sync.Mutex
	m map[string]*runResult
}

type runResult struct {
	once   sync.Once
	report *Report
	eng    *engine
	err    error
}

// run simulates testdata/<name>.scenario under the named law.
func run(t *testing.T, name, law string) *Report {
	t.Helper()
	r := result(name, law, 0)
	if r.err != nil {
		t.Fatalf("%s/%s: %v", name, law, r.err)
	}
	return r.report
}

// result runs a scenario once per (name, law, limit) and caches it; limit > 0
// cuts the scenario short.
func result(name, law string, limit time.Duration) *runResult {
	key := fmt.Sprintf("%s/%s/%v", name, law, limit)
	runs.Lock()
	if runs.m == nil {
		runs.m = map[string]*runResult{}
	}
	r, ok := runs.m[key]
	if !ok {
		r = &runResult{}
		runs.m[key] = r
	}
	runs.Unlock()
	r.once.Do(func() {
		sc, err := LoadScenario(filepath.Join("testdata", name+".scenario"))
		if err != nil {
			r.err = err
			return
		}
		if limit > 0 && sc.Duration > limit {
			sc.Duration = limit
			for len(sc.Phases) > 1 && sc.Phases[len(sc.Phases)-1].At >= limit {
				sc.Phases = sc.Phases[:len(sc.Phases)-1]
			}
		}
		l, err := sc.Law(law)
		if err != nil {
			r.err = err
			return
		}
		sc = sc.withDefaults()
		e, err := newEngine(&sc, l)
		if err != nil {
			r.err = err
			return
		}
		e.run()
		r.eng, r.report = e, e.rec.report(e)
	})
	return r
}

func phase(t *testing.T, r *Report, name string) PhaseReport {
	t.Helper()
	p, ok := r.Phase(name)
	if !ok {
		t.Fatalf("%s/%s: no phase %q", r.Scenario, r.Law, name)
	}
	return p
}

func scenarioNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.scenario")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".scenario"))
	}
	return names
}

// Every law runs every scenario, and the run obeys the model's invariants.
// Under the race detector each run is cut to 8 s of simulated time.
func TestEveryLawRunsEveryScenario(t *testing.T) {
	var limit time.Duration
	if raceDetector {
		limit = 8 * time.Second
	}
	for _, name := range scenarioNames(t) {
		for _, law := range LawNames {
			t.Run(name+"/"+law, func(t *testing.T) {
				t.Parallel()
				res := result(name, law, limit)
				if res.err != nil {
					t.Fatal(res.err)
				}
				r, e := res.report, res.eng
				if e.overshoots != 0 {
					t.Errorf("the gate admitted %d requests beyond the limit", e.overshoots)
				}
				sc := e.sc
				if want := int(sc.Duration / sc.Interval); len(r.Series) != want {
					t.Errorf("%d points, want %d", len(r.Series), want)
				}
				if len(r.Phases) != len(sc.Phases) {
					t.Errorf("%d phases, want %d", len(r.Phases), len(sc.Phases))
				}
				b := sc.Bounds
				if law == "fixed" {
					b.Max = max(b.Max, sc.Static)
				}
				for _, p := range r.Series {
					if p.Limit != b.Clamp(p.Limit) {
						t.Fatalf("at %v the limit %d is outside the bounds %+v", p.T, p.Limit, b)
					}
				}
				for _, p := range r.Phases {
					if p.Goodput > p.Throughput+1e-9 {
						t.Errorf("%s: goodput %.1f above throughput %.1f", p.Name, p.Goodput, p.Throughput)
					}
					if p.Throughput > 1.1*r.Capacity {
						t.Errorf("%s: throughput %.0f above capacity %.0f", p.Name, p.Throughput, r.Capacity)
					}
					if !(p.P50 <= p.P99 && p.P99 <= p.P999) {
						t.Errorf("%s: quantiles out of order %v %v %v", p.Name, p.P50, p.P99, p.P999)
					}
					if p.RejectRate < 0 || p.RejectRate > 1 || p.DropRate < 0 || p.DropRate > 1 {
						t.Errorf("%s: reject rate %v, drop rate %v", p.Name, p.RejectRate, p.DropRate)
					}
					sec := (p.End - p.Start).Seconds()
					rejected := 0
					for _, n := range p.Rejections {
						rejected += n
					}
					if got := float64(rejected) + p.Throughput*sec; got > p.Attempts*sec+float64(sc.Gate.Queue)+5000 {
						t.Errorf("%s: %.0f outcomes for %.0f attempts", p.Name, got, p.Attempts*sec)
					}
				}
			})
		}
	}
}

// Issue: at 1.5x, 2x, 3x and 10x C offered, goodput >= 90 % of C and admitted
// p99 <= SLO, queue wait included (measured after a 5 s warm-up, which the
// files declare as a phase).
func TestTargetOverload(t *testing.T) {
	for _, name := range []string{"overload-1.5x", "overload-2x", "overload-3x", "overload-10x"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := run(t, name, "target")
			p := phase(t, r, "overload")
			if p.Goodput < 0.9*r.Capacity {
				t.Errorf("goodput %.0f/s, want >= 90 %% of C = %.0f", p.Goodput, 0.9*r.Capacity)
			}
			// p99 <= SLO exactly: at most 1 % of completions late or dropped
			// (the histogram's P99 is only within 1/128).
			if w := r.Window(p.Start, p.End); w.LateRatio > 0.01 {
				t.Errorf("%.2f %% late: admitted p99 %v above the SLO %v", 100*w.LateRatio, p.P99, r.SLO)
			}
		})
	}
}

// The lab's backend (16 workers, exponential 40 ms, SLO 300 ms: few latencies
// per interval and a service p99 at 61 % of the SLO) overloaded by a quarter
// and by 3x: goodput >= 90 % of C and admitted p99 <= SLO, as on the canonical
// backend, and, under sustained overload, no more backend queueing than it
// takes: the limit stays within 2.5 x the knee (W = 16 in flight) rather than
// filling the latency budget (about 55, where p99 reaches 300 ms).
func TestTargetLabBackend(t *testing.T) {
	for _, name := range []string{"lab-overload-1.25x", "lab-overload-3x"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := run(t, name, "target")
			p := phase(t, r, "overload")
			w := r.Window(p.Start, p.End)
			if p.Goodput < 0.9*r.Capacity {
				t.Errorf("goodput %.0f/s, want >= 90 %% of C = %.0f", p.Goodput, 0.9*r.Capacity)
			}
			if w.LateRatio > 0.01 {
				t.Errorf("%.2f %% late: admitted p99 %v above the SLO %v", 100*w.LateRatio, p.P99, r.SLO)
			}
			if w.LimitMean > 2.5*16 {
				t.Errorf("limit mean %.1f, want <= 40 (2.5 x the knee): the backend queues for nothing", w.LimitMean)
			}
		})
	}
}

// Issue: step 0.7 -> 1.4 -> 0.7 x C converges within 2 s (goodput >= 95 % of
// the steady state, p99 <= SLO) with limit overshoot <= 20 %: once converged,
// the limit does not swing above where it settles by more than a fifth. (At
// 1.4 x C the backend is overloaded and the law takes the limit down from
// the one the 0.7 x C phase left, toward the knee: the phase's first
// seconds are that descent, not an overshoot.)
func TestTargetStep(t *testing.T) {
	r := run(t, "step", "target")
	for _, name := range []string{"high", "back"} {
		p := phase(t, r, name)
		if p.Converged < 0 || p.Converged > 2*time.Second {
			t.Errorf("%s: converged after %v, want within 2s", name, p.Converged)
		}
		w := r.Window(p.Start+2*time.Second, p.End)
		if w.Goodput < 0.95*p.SteadyGoodput {
			t.Errorf("%s: goodput %.0f/s from 2s on, want >= 95 %% of the steady %.0f/s", name, w.Goodput, p.SteadyGoodput)
		}
		if w.LateRatio > 0.01 {
			t.Errorf("%s: %.2f %% late from 2s on: p99 above the SLO", name, 100*w.LateRatio)
		}
	}
	high := phase(t, r, "high")
	w := r.Window(high.Start+2*time.Second, high.End)
	if over := float64(w.LimitMax)/high.Limit.SteadyMean - 1; over > 0.2 {
		t.Errorf("limit overshoot %.0f %% (max %d from 2 s on, settled %.1f), want <= 20 %%",
			100*over, w.LimitMax, high.Limit.SteadyMean)
	}
}

// Issue: the backend slows 2x at constant load: the limit settles within 5 s
// to one that meets the SLO, no higher than before. At 1.5 × C the target law
// aims at the knee (issue 27), where the in-flight count is what keeps the
// workers busy, whatever their speed: from there it need not fall (23 before
// and after, p99 within the SLO). Aimed at the target instead, the limit
// that meets the SLO is 0.4 to 0.45 of the old one (the backend's own p99
// doubles too), which the ratio's bound of 0.6 keeps for a law that holds
// far above the knee (issue 27's first law: 35 → 18).
func TestTargetSlowdown(t *testing.T) {
	r := run(t, "slowdown", "target")
	before := r.Window(10*time.Second, 15*time.Second)
	after := r.Window(20*time.Second, 30*time.Second)
	ratio := after.LimitMean / before.LimitMean
	atKnee := before.LimitMean <= 2.5*10 // 10 workers
	if ratio > 1.05 || (!atKnee && (ratio < 0.3 || ratio > 0.6)) {
		t.Errorf("limit %.1f -> %.1f (ratio %.2f), want no higher, and about half (0.3..0.6) from above the knee (2.5 × workers)",
			before.LimitMean, after.LimitMean, ratio)
	}
	if after.LimitCV > 0.15 {
		t.Errorf("limit not settled 5s after the slowdown: cv %.3f (%d..%d)", after.LimitCV, after.LimitMin, after.LimitMax)
	}
	if after.LateRatio > 0.01 {
		t.Errorf("%.2f %% late after settling: p99 above the SLO", 100*after.LateRatio)
	}
	if after.Goodput < 0.9*r.Capacity/2 {
		t.Errorf("goodput %.0f/s after settling, want >= 90 %% of the halved capacity", after.Goodput)
	}
}

// Issue: steady 0.8 x C: limit oscillation (coefficient of variation) <= 10 %.
func TestTargetSteady(t *testing.T) {
	r := run(t, "steady", "target")
	p := phase(t, r, "steady")
	w := r.Window(p.Start, p.End)
	if w.LimitCV > 0.1 {
		t.Errorf("limit cv %.3f (%d..%d), want <= 0.10", w.LimitCV, w.LimitMin, w.LimitMax)
	}
	if p.RejectRate > 0.001 {
		t.Errorf("%.2f %% rejected at 0.8 x C", 100*p.RejectRate)
	}
}

// Issue: constant high latency with no queueing: no collapse to min, no growth
// to max. Also the onset variant: the backend becomes that slow while the
// limit is in use, and the limit must recover.
func TestTargetHighLatency(t *testing.T) {
	r := run(t, "high-latency", "target")
	p := phase(t, r, "steady")
	w := r.Window(p.Start, p.End)
	// About 100 requests are in flight; the limit may not sink below that
	// (rejecting work without helping latency) nor climb toward Max (5000).
	if w.LimitMin < 100 {
		t.Errorf("limit fell to %d with about 100 in flight: collapse", w.LimitMin)
	}
	if w.LimitMax > 1000 {
		t.Errorf("limit rose to %d, toward the max of 5000", w.LimitMax)
	}
	if p.RejectRate > 0.01 {
		t.Errorf("%.2f %% rejected, want < 1 %%", 100*p.RejectRate)
	}

	r = run(t, "high-latency-onset", "target")
	slow := phase(t, r, "slow")
	ws := r.Window(slow.Start, slow.End)
	if ws.LimitMin < 100 || ws.LimitMax > 1000 {
		t.Errorf("onset: limit %d..%d after 5 s, want between 100 and 1000", ws.LimitMin, ws.LimitMax)
	}
	if slow.RejectRate > 0.01 {
		t.Errorf("onset: %.2f %% rejected 5 s after the backend slowed, want < 1 %%", 100*slow.RejectRate)
	}
}

// Issue: retry storm (clients retry 3x), 2x C for 10 s then 0.9 x C: goodput
// back to >= 95 % within 5 s after the trigger ends (no metastable failure).
func TestTargetRetryStorm(t *testing.T) {
	for _, name := range []string{"retry-storm", "retry-after"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := run(t, name, "target")
			before := phase(t, r, "before")
			after := phase(t, r, "after")
			w := r.Window(after.Start+5*time.Second, after.End)
			if w.Goodput < 0.95*before.Goodput {
				t.Errorf("goodput %.0f/s from 5 s after the trigger, want >= 95 %% of %.0f/s before it", w.Goodput, before.Goodput)
			}
			if w.LateRatio > 0.01 {
				t.Errorf("%.2f %% late after recovery", 100*w.LateRatio)
			}
			if trig := phase(t, r, "trigger"); trig.Goodput < 0.9*r.Capacity {
				t.Errorf("goodput %.0f/s during the trigger, want >= 90 %% of C", trig.Goodput)
			}
		})
	}
}

// Issue: 20 % critical / 80 % sheddable at 3x: critical success >= 99 %.
func TestTargetPriority(t *testing.T) {
	r := run(t, "priority", "target")
	p := phase(t, r, "overload")
	if c := p.Priorities[adaptive.Critical]; c.Requests == 0 || c.SuccessRatio() < 0.99 {
		t.Errorf("critical: %d of %d succeeded (%.2f %%), want >= 99 %%", c.Succeeded, c.Requests, 100*c.SuccessRatio())
	}
	if p.Goodput < 0.9*r.Capacity {
		t.Errorf("goodput %.0f/s: the sheddable traffic should still fill the capacity critical leaves", p.Goodput)
	}
}

// Issue: three tenants, one sending 80 % of 2x C: each polite tenant gets >=
// 95 % of its demand.
func TestTargetTenants(t *testing.T) {
	r := run(t, "tenants", "target")
	p := phase(t, r, "overload")
	for i, o := range p.Tenants[1:] {
		if o.GoodRatio() < 0.95 {
			t.Errorf("polite tenant %d: %d of %d served within the SLO (%.1f %%), want >= 95 %%", i+1, o.Good, o.Requests, 100*o.GoodRatio())
		}
	}
	if p.Goodput < 0.9*r.Capacity {
		t.Errorf("goodput %.0f/s: the greedy tenant should get the rest of the capacity", p.Goodput)
	}
}

// Issue: memory target: with memory per queued request, the model never
// exceeds the memory target.
func TestTargetMemory(t *testing.T) {
	r := run(t, "memory", "target")
	for _, p := range r.Phases {
		if p.PeakMemory > 0.85 {
			t.Errorf("%s: memory peaked at %.1f %%, above the 85 %% target", p.Name, 100*p.PeakMemory)
		}
		if p.Goodput < 0.9*r.Capacity {
			t.Errorf("%s: goodput %.0f/s, want >= 90 %% of C", p.Name, p.Goodput)
		}
	}
	// The scenario must bite: without a limit, memory runs far past the target.
	if none := run(t, "memory", "none"); none.Phases[0].PeakMemory < 1 {
		t.Errorf("without a limit memory peaked at only %.2f: the scenario does not test anything", none.Phases[0].PeakMemory)
	}
}

// CPU target with the guard: CPU stays at the target, the sheddable half pays.
// A utilisation target is an average: the law keeps the interval mean at the
// target; single intervals of a bimodal backend swing a few points around it.
func TestTargetCPU(t *testing.T) {
	r := run(t, "bimodal-cpu", "target")
	p := phase(t, r, "overload")
	if w := r.Window(p.Start, p.End); w.CPUMean > 0.8 || w.CPUMax > 0.9 {
		t.Errorf("cpu %.1f %% on average, %.1f %% at most over an interval; target 80 %%", 100*w.CPUMean, 100*w.CPUMax)
	}
	if p.Goodput < 0.6*r.Capacity {
		t.Errorf("goodput %.0f/s, want >= 60 %% of C (CPU is capped at 80 %%)", p.Goodput)
	}
	if d := p.Priorities[adaptive.Default]; d.SuccessRatio() < 3*p.Priorities[adaptive.Sheddable].SuccessRatio() {
		t.Errorf("default %.2f vs sheddable %.2f success: sheddable should be shed first", d.SuccessRatio(), p.Priorities[adaptive.Sheddable].SuccessRatio())
	}
}

// Profiles other than steps: a spike is absorbed without harming what comes
// after, and a ramp plus sine crossing capacity keeps the SLO.
func TestTargetProfiles(t *testing.T) {
	r := run(t, "spike", "target")
	after := phase(t, r, "after")
	if w := r.Window(after.Start+2*time.Second, after.End); w.Goodput < 0.95*phase(t, r, "before").Goodput || w.LateRatio > 0.01 {
		t.Errorf("after the spike: goodput %.0f/s, %.2f %% late", w.Goodput, 100*w.LateRatio)
	}
	// The sine crosses capacity every 2.5 s, and each crossing costs a few late
	// responses while the limit catches up: 1.5 % late is allowed (p99 within a
	// couple of milliseconds of the SLO over 12 seeds tried).
	r = run(t, "ramp-sine", "target")
	p := phase(t, r, "sine")
	if w := r.Window(p.Start, p.End); w.LateRatio > 0.015 || p.Goodput < 0.85*r.Capacity {
		t.Errorf("sine: %.2f %% late (p99 %v, SLO %v), goodput %.0f/s", 100*w.LateRatio, p.P99, r.SLO, p.Goodput)
	}
}

// The comparison of the note: goodput at 3x C and with a static limit gone stale,
// for every law. Target must be the best or tied (within 1 % of capacity).
func TestCompareLaws(t *testing.T) {
	rows := []struct{ scenario, phase string }{{"overload-3x", "overload"}, {"stale-static", "stale"},
		{"lab-overload-1.25x", "overload"}, {"lab-overload-3x", "overload"}}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-14s", "law")
	for _, row := range rows {
		fmt.Fprintf(&b, " | %-28s", row.scenario+" goodput, p99")
	}
	b.WriteString("\n")
	best := make([]float64, len(rows))
	got := map[string][]float64{}
	for _, law := range append([]string{"none"}, LawNames...) {
		fmt.Fprintf(&b, "%-14s", law)
		for i, row := range rows {
			r := run(t, row.scenario, law)
			p := phase(t, r, row.phase)
			c := r.Capacity
			if row.scenario == "stale-static" {
				c /= 2 // the backend runs at half speed in that phase
			}
			share := p.Goodput / c
			got[law] = append(got[law], share)
			if law != "none" {
				best[i] = max(best[i], share)
			}
			fmt.Fprintf(&b, " | %5.1f %% of C, p99 %-9v", 100*share, p.P99.Round(100*time.Microsecond))
		}
		b.WriteString("\n")
	}
	t.Log(b.String())
	for i, row := range rows {
		if got["target"][i] < best[i]-0.01 {
			t.Errorf("%s: target %.1f %% of C, the best law %.1f %%", row.scenario, 100*got["target"][i], 100*best[i])
		}
	}
}

// Runs are deterministic for a seed, and the seed matters.
func TestDeterministic(t *testing.T) {
	sc, err := LoadScenario("testdata/step.scenario")
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = 12 * time.Second
	sc.Phases = nil
	var reports []*Report
	for _, seed := range []uint64{7, 7, 8} {
		sc.Seed = seed
		law, _ := sc.Law("target")
		r, err := Run(sc, law)
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, r)
	}
	if !reflect.DeepEqual(reports[0], reports[1]) {
		t.Error("two runs with the same seed differ")
	}
	if reflect.DeepEqual(reports[0].Series, reports[2].Series) {
		t.Error("two seeds gave the same run")
	}
}

func TestScenarioFilesExplainThemselves(t *testing.T) {
	for _, name := range scenarioNames(t) {
		sc, err := LoadScenario(filepath.Join("testdata", name+".scenario"))
		if err != nil {
			t.Fatal(err)
		}
		if len(sc.Description) < 40 {
			t.Errorf("%s: the # header does not explain the scenario: %q", name, sc.Description)
		}
		if sc.Name != name {
			t.Errorf("%s: named %q", name, sc.Name)
		}
	}
}

// A managed token rate starts below capacity, grows while it turns requests
// away, and follows capacity down when the backend slows.
func TestTargetRate(t *testing.T) {
	r := run(t, "rate", "target")
	fast := phase(t, r, "fast")
	if w := r.Window(fast.Start, fast.End); fast.Goodput < 0.9*r.Capacity || w.LateRatio > 0.01 {
		t.Errorf("fast: goodput %.0f/s, %.2f %% late", fast.Goodput, 100*w.LateRatio)
	}
	slow := phase(t, r, "slow")
	if w := r.Window(slow.Start, slow.End); slow.Goodput < 0.9*r.Capacity/2 || w.LateRatio > 0.01 {
		t.Errorf("slow: goodput %.0f/s, %.2f %% late", slow.Goodput, 100*w.LateRatio)
	}
	if mean := meanRate(r, slow); mean < r.Capacity/2 || mean > 1.5*r.Capacity/2 {
		t.Errorf("slow: rate %.0f/s on average, want near the halved capacity %.0f/s", mean, r.Capacity/2)
	}
	if slow.Rejections[adaptive.RejectRate] == 0 {
		t.Error("slow: the rate turned nothing away")
	}
}

// law returns the law a cached run ended with.
func law(t *testing.T, name, lawName string) adaptive.Law {
	t.Helper()
	r := result(name, lawName, 0)
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.eng.law
}

// reported reports whether some interval of r gave sig as its reason.
func reported(r *Report, sig adaptive.Signal) bool {
	for _, p := range r.Series {
		if p.Reason.Signal == sig {
			return true
		}
	}
	return false
}

// Issue 12: a neighbour holds the host's CPU at 100 % whatever the limit does
// (and the operator set a CPU target on it): goodput >= 95 % of C at 1x and
// 3x, the limit nowhere near its floor, and the reason reported.
func TestTargetCPUNeighbour(t *testing.T) {
	r := run(t, "cpu-neighbour", "target")
	for _, name := range []string{"one", "three"} {
		p := phase(t, r, name)
		w := r.Window(p.Start, p.End)
		if p.Goodput < 0.95*r.Capacity {
			t.Errorf("%s: goodput %.0f/s, want >= 95 %% of C = %.0f", name, p.Goodput, 0.95*r.Capacity)
		}
		if w.LimitMin < 10 {
			t.Errorf("%s: the limit fell to %d: it chased a CPU it cannot move", name, w.LimitMin)
		}
		if w.LateRatio > 0.01 {
			t.Errorf("%s: %.2f %% late", name, 100*w.LateRatio)
		}
	}
	if !reported(r, adaptive.SignalCPUUnmoved) {
		t.Error("no interval said the CPU is not moved by the limit")
	}
	if u := law(t, "cpu-neighbour", "target").(*adaptive.Target).Unmoved(); !u.Has(adaptive.UnmovedCPU) {
		t.Errorf("the law ignores %q at the end, want cpu", u)
	}
}

// Issue 12: a CPU-bound service whose own CPU reaches the target: the limit
// holds CPU at the target (its mean within it, no interval beyond it by more
// than a few points) and serves at least 95 % of what that CPU allows.
func TestTargetCPUOwn(t *testing.T) {
	r := run(t, "cpu-own", "target")
	p := phase(t, r, "overload")
	w := r.Window(p.Start, p.End)
	if w.CPUMean > 0.8 || w.CPUMax > 0.85 {
		t.Errorf("cpu %.1f %% on average, %.1f %% at most; target 80 %%", 100*w.CPUMean, 100*w.CPUMax)
	}
	if allowed := 0.8 * r.Capacity; p.Goodput < 0.95*allowed {
		t.Errorf("goodput %.0f/s, want >= 95 %% of the %.0f/s 80 %% CPU allows", p.Goodput, allowed)
	}
	if reported(r, adaptive.SignalCPUUnmoved) {
		t.Error("the service's own CPU was taken as not moved by the limit")
	}
}

// Issue 12: memory that does not move with the limit (and a resource guard on
// it): goodput >= 95 % of C at 1x and 3x, the reason reported, and the guard
// does not shed on it either.
func TestTargetMemoryUnmoved(t *testing.T) {
	r := run(t, "memory-unmoved", "target")
	for _, name := range []string{"one", "three"} {
		p := phase(t, r, name)
		if p.Goodput < 0.95*r.Capacity {
			t.Errorf("%s: goodput %.0f/s, want >= 95 %% of C", name, p.Goodput)
		}
		if n := p.Rejections[adaptive.RejectMemory]; n > 0 {
			t.Errorf("%s: the guard shed %d requests on memory the limit cannot move", name, n)
		}
	}
	if !reported(r, adaptive.SignalMemoryUnmoved) {
		t.Error("no interval said the memory is not moved by the limit")
	}
	// Without the guard's knowledge of it, memory over its target sheds
	// everything below critical: the scenario bites.
	if v := phase(t, run(t, "memory-unmoved", "vegas"), "three"); v.Goodput > 0.1*r.Capacity {
		t.Errorf("vegas, whose guard sheds on memory, served %.0f/s: the scenario does not test anything", v.Goodput)
	}
}

// Issue 12: CPU pressure caused by a hog at the same nice level does not move
// with the limit (it falls only as the service runs less): the law stops
// cutting on it and serves at least what every peer law serves, over three
// seeds.
func TestTargetCPUPressureHog(t *testing.T) {
	if u := law(t, "cpu-hog", "target").(*adaptive.Target).Unmoved(); !u.Has(adaptive.UnmovedCPUPressure) {
		t.Errorf("the law ignores %q at the end, want cpu_pressure", u)
	}
	if !reported(run(t, "cpu-hog", "target"), adaptive.SignalPressureUnmoved) {
		t.Error("no interval said the CPU pressure is not moved by the limit")
	}
	means := seedMeans(t, "cpu-hog", "hog", 3, "target", "vegas", "gradient", "aimd")
	for _, peer := range []string{"vegas", "gradient", "aimd"} {
		if means["target"] < means[peer]-0.01*1000 {
			t.Errorf("beside the hog target serves %.0f/s, %s %.0f/s", means["target"], peer, means[peer])
		}
	}
}

// seedMeans returns, per law, the mean goodput of phase ph of scenario name
// over seeds 1..n.
func seedMeans(t *testing.T, name, ph string, n int, laws ...string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, ln := range laws {
		for seed := 1; seed <= n; seed++ {
			sc, err := LoadScenario(filepath.Join("testdata", name+".scenario"))
			if err != nil {
				t.Fatal(err)
			}
			sc.Seed = uint64(seed)
			l, err := sc.Law(ln)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Run(sc, l)
			if err != nil {
				t.Fatal(err)
			}
			out[ln] += phase(t, r, ph).Goodput / float64(n)
		}
	}
	return out
}

// Issue 12: the default targets (latency and memory, no CPU target) on a
// CPU-bound service at 2x C reach the goodput of the best peer law within the
// latency target, over three seeds; the old default CPU target of 80 % is
// what made it refuse work the service could do.
func TestTargetCPUBoundDefault(t *testing.T) {
	r := run(t, "cpu-bound-2x", "target")
	p := phase(t, r, "overload")
	if w := r.Window(p.Start, p.End); w.LateRatio > 0.01 {
		t.Errorf("%.2f %% late: p99 over the target", 100*w.LateRatio)
	}
	means := seedMeans(t, "cpu-bound-2x", "overload", 3, "target", "vegas", "gradient", "aimd")
	for _, peer := range []string{"vegas", "gradient", "aimd"} {
		if means["target"] < means[peer]-0.01*r.Capacity {
			t.Errorf("target %.0f/s, %s %.0f/s", means["target"], peer, means[peer])
		}
	}
	sc, err := LoadScenario("testdata/cpu-bound-2x.scenario")
	if err != nil {
		t.Fatal(err)
	}
	sc.Targets.CPU = 0.8
	l, _ := sc.Law("target")
	old, err := Run(sc, l)
	if err != nil {
		t.Fatal(err)
	}
	o := phase(t, old, "overload")
	t.Logf("goodput at 2x C, over 3 seeds: target (default) %.0f/s, vegas %.0f/s, gradient %.0f/s, aimd %.0f/s; "+
		"with the old cpu = 0.8 (seed %d) %.0f/s", means["target"], means["vegas"], means["gradient"], means["aimd"], sc.Seed, o.Goodput)
	if o.Goodput > 0.9*p.Goodput {
		t.Errorf("with a CPU target of 80 %% goodput is %.0f/s against %.0f/s: the scenario does not show what the default avoids", o.Goodput, p.Goodput)
	}
}

// Issue 12: capacity halves under a tight target (service 10 ms, p99 <= 40
// ms, more than 500 completions a second): after the first second past the
// halving, no second's attempts have their p99 over the target (at most 1 %
// of them late), over three seeds.
func TestTargetHalving(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		sc, err := LoadScenario("testdata/halving.scenario")
		if err != nil {
			t.Fatal(err)
		}
		sc.Seed = seed
		l, _ := sc.Law("target")
		r, err := Run(sc, l)
		if err != nil {
			t.Fatal(err)
		}
		p := phase(t, r, "halved")
		for s := p.Start + 2*time.Second; s <= p.End; s += time.Second {
			if w := r.Window(s-time.Second, s); w.SentLateRatio > 0.01 {
				t.Errorf("seed %d: %.2f %% of the attempts sent in the second to %v late: p99 over 40 ms", seed, 100*w.SentLateRatio, s)
			}
		}
		if p.Goodput < 0.9*r.Capacity/2 {
			t.Errorf("seed %d: goodput %.0f/s, want >= 90 %% of the halved capacity", seed, p.Goodput)
		}
	}
}

// Issue 12: after an outage (the breaker open, a failing probe every 5 s) the
// limit is back to at least 90 % of where it was within 5 s of the
// upstream's return, under a steady load that does not press on it.
func TestTargetOutageRecovery(t *testing.T) {
	r := run(t, "outage", "target")
	before := r.LimitAt(10 * time.Second)
	for at := 35 * time.Second; at <= r.Phases[len(r.Phases)-1].End; at += time.Second {
		if got := r.LimitAt(at); float64(got) < 0.9*float64(before) {
			t.Errorf("limit %d at %v, %d before the outage", got, at, before)
		}
	}
	if w := r.Window(30*time.Second, 45*time.Second); w.LateRatio > 0.01 {
		t.Errorf("%.2f %% late after the return", 100*w.LateRatio)
	}
}

// Issue 12: a managed token rate with a ceiling far above capacity comes
// down to about what the service completes under a sustained 3x, so at least
// nine tenths of the refusals are at the rate stage (429 at once), and rises
// back to its ceiling when the demand falls.
func TestTargetRateOverload(t *testing.T) {
	r := run(t, "rate-overload", "target")
	p := phase(t, r, "overload")
	if mean := meanRate(r, p); mean < r.Capacity || mean > 1.3*r.Capacity {
		t.Errorf("overload: rate %.0f/s on average, want between C and 1.3 C (%.0f)", mean, r.Capacity)
	}
	total := 0
	for _, k := range p.Rejections {
		total += k
	}
	if rate := p.Rejections[adaptive.RejectRate]; float64(rate) < 0.9*float64(total) {
		t.Errorf("overload: %d of %d refusals at the rate stage, want >= 90 %%", rate, total)
	}
	if p.Goodput < 0.95*r.Capacity {
		t.Errorf("overload: goodput %.0f/s", p.Goodput)
	}
	if last := r.Series[len(r.Series)-1].Rate; last < 5000 {
		t.Errorf("calm: the rate is %.0f/s at the end, want back at its ceiling 5000/s", last)
	}
}

// meanRate is the managed token rate's mean over the intervals of phase p.
func meanRate(r *Report, p PhaseReport) float64 {
	var sum float64
	n := 0
	for _, pt := range r.Series {
		if pt.T > p.Start && pt.T <= p.End {
			sum += pt.Rate
			n++
		}
	}
	return sum / float64(max(n, 1))
}

// lateSeconds returns the seconds of r from `from` on (by the send time of
// the attempts, as the lab's seconds) in which more than 1 % of the
// completions were late: over the SLO, or given up.
func lateSeconds(r *Report, from time.Duration) []time.Duration {
	per := max(1, int(time.Second/r.Interval))
	var late []time.Duration
	for i := 0; i+per <= len(r.Series); i += per {
		if r.Series[i].T <= from {
			continue
		}
		good, bad := 0, 0
		for _, p := range r.Series[i : i+per] {
			good += p.SentGood
			bad += p.SentLate
		}
		if good+bad > 0 && float64(bad) > 0.01*float64(good+bad) {
			late = append(late, r.Series[i].T-r.Interval)
		}
	}
	return late
}

// Issue 27: 3 x C from cold: at least 0.8 x C served within the SLO in the
// first second, no second late after it, and refusals told at once.
func TestTargetFastCold(t *testing.T) {
	r := run(t, "fast-cold", "target")
	first := phase(t, r, "first")
	if first.Goodput < 0.8*r.Capacity {
		t.Errorf("first second: %.0f good req/s, want >= 0.8 x C = %.0f", first.Goodput, 0.8*r.Capacity)
	}
	if late := lateSeconds(r, time.Second); len(late) > 0 {
		t.Errorf("seconds after the first with p99 over the SLO: %v", late)
	}
	if rest := phase(t, r, "rest"); rest.Goodput < 0.95*r.Capacity || rest.RejectP99 > 10*time.Millisecond {
		t.Errorf("after the first second: goodput %.0f/s, a refusal's p99 wait %v", rest.Goodput, rest.RejectP99)
	}
}

// Issue 27: the service stalls 300 ms every 3 s: the limit never rises while
// nothing completes (or in the interval after), and what arrives meanwhile
// is refused at once rather than queued behind the stall.
func TestTargetFastStalls(t *testing.T) {
	r := run(t, "fast-stalls", "target")
	limit := 0
	for _, p := range r.Series {
		inStall := false
		for s := 3 * time.Second; s < r.Phases[len(r.Phases)-1].End; s += 3 * time.Second {
			// The intervals that end in the stall, and the one after its
			// end (whose latency is the stall's).
			if p.T > s && p.T <= s+300*time.Millisecond+r.Interval {
				inStall = true
			}
		}
		if inStall && p.Limit > limit {
			t.Errorf("at %v, in or just after a stall: the limit rose %d -> %d (%s)", p.T, limit, p.Limit, p.Reason)
		}
		limit = p.Limit
	}
	if !reported(r, adaptive.SignalStalled) {
		t.Error("no interval said completions stalled")
	}
	st := phase(t, r, "stalls")
	if st.RejectP99 > 10*time.Millisecond {
		t.Errorf("a refusal waited %v at p99: queued behind the stall", st.RejectP99)
	}
	// Of the 0.8 x C offered, what arrives in a stall's first 230 ms cannot
	// be served within the SLO (the stall lasts 300 ms), 7.7 % of the time.
	if st.Goodput < 0.88*0.8*r.Capacity {
		t.Errorf("goodput %.0f/s through the stalls, want >= 0.88 x the 0.8 x C offered", st.Goodput)
	}
}

// Issue 27: at 3 x C the law holds the backend near its knee (the limit
// within 2.5 times its 15 workers) with goodput at C, no second's p99 over
// the target, and a refusal waits no longer than the standing queue's bound.
func TestTargetFastSweep(t *testing.T) {
	r := run(t, "fast-sweep", "target")
	for _, name := range []string{"half", "one", "three"} {
		p := phase(t, r, name)
		if want := min(1, map[string]float64{"half": 0.5, "one": 1, "three": 3}[name]) * 0.95 * r.Capacity; p.Goodput < want {
			t.Errorf("%s: goodput %.0f/s, want >= %.0f", name, p.Goodput, want)
		}
	}
	three := phase(t, r, "three")
	if three.Limit.SteadyMean > 2.5*15 || three.RejectP99 > 10*time.Millisecond {
		t.Errorf("3 x C: the limit settled at %.1f (want near the knee, 15 workers), a refusal's p99 wait %v", three.Limit.SteadyMean, three.RejectP99)
	}
	if late := lateSeconds(r, time.Second); len(late) > 0 {
		t.Errorf("seconds with p99 over the SLO: %v", late)
	}
}

// Issue 27: 20 % critical at 3 x C: every critical request served, and the
// sheddable ones refused at once (pushed out of the queue by a critical
// arrival, or refused on arrival), not after a wait.
func TestTargetFastPriority(t *testing.T) {
	r := run(t, "fast-priority", "target")
	p := phase(t, r, "overload")
	if c := p.Priorities[adaptive.Critical]; c.Requests == 0 || c.SuccessRatio() < 0.99 {
		t.Errorf("critical: %d of %d succeeded", c.Succeeded, c.Requests)
	}
	if p.RejectP99 > 10*time.Millisecond || p.Goodput < 0.95*r.Capacity {
		t.Errorf("a refusal's p99 wait %v, goodput %.0f/s", p.RejectP99, p.Goodput)
	}
}
