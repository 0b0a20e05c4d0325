package report

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
	"github.com/sluicehq/sluice/cmd/internal/lab/load"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestMaxMinFair(t *testing.T) {
	for _, tc := range []struct {
		demand []float64
		cap    float64
		want   []float64
	}{
		{[]float64{10, 10, 100}, 60, []float64{10, 10, 40}},
		{[]float64{30, 30, 30}, 60, []float64{20, 20, 20}},
		{[]float64{5, 100, 5}, 300, []float64{5, 100, 5}},
		{[]float64{0, 50}, 20, []float64{0, 20}},
	} {
		got := maxMinFair(tc.demand, tc.cap)
		for i := range got {
			if !near(got[i], tc.want[i], 1e-9) {
				t.Errorf("maxMinFair(%v, %v) = %v, want %v", tc.demand, tc.cap, got, tc.want)
				break
			}
		}
	}
}

func class(name string, offered, good int64) load.Class {
	return load.Class{Name: name, Counts: load.Counts{Offered: offered, Good: good}}
}

func TestFairness(t *testing.T) {
	// Fair: a and b get all they asked, greedy the rest.
	fair := Fairness([]load.Class{class("a", 100, 100), class("b", 100, 100), class("greedy", 600, 200)})
	if fair == nil || !near(*fair, 1, 1e-9) {
		t.Fatalf("fair split: %v", fair)
	}
	// Unfair: 400 of goodput, fair shares 100/100/200; a and b got 50
	// each, greedy 300: x = 0.5, 0.5, 1.5 → J = 2.5² / (3 · 2.75).
	unfair := Fairness([]load.Class{class("a", 100, 50), class("b", 100, 50), class("greedy", 600, 300)})
	if unfair == nil || !near(*unfair, 6.25/8.25, 1e-9) {
		t.Fatalf("unfair split: %v, want %v", deref(unfair), 6.25/8.25)
	}
	if Fairness([]load.Class{class("only", 10, 10)}) != nil || Fairness([]load.Class{class("a", 1, 0), class("b", 1, 0)}) != nil {
		t.Fatal("fairness of one tenant or of no goodput should be unknown")
	}
}

// synthetic builds a run whose load steps at 10 s and whose goodput
// settles 3 s later.
func synthetic() Run {
	r := Run{
		Capacity: 100, SLO: 200 * time.Millisecond,
		Schedule: load.Schedule{{Label: "low", For: 10 * time.Second, From: 50, To: 50}, {Label: "high", For: 10 * time.Second, From: 200, To: 200}},
		Params:   backend.Params{Workers: 4, Service: backend.Dist{Kind: backend.Const, Mean: 40 * time.Millisecond}},
	}
	for s := 0; s < 20; s++ {
		sec := load.Second{T: s, Offered: 50, OK: 50, Good: 50, P99: 100}
		if s >= 10 {
			sec.Offered, sec.OK, sec.Good, sec.Rejected = 200, 100, 100, 100
			if s < 13 { // overshoot: the limiter is still finding its way
				sec.OK, sec.Good, sec.P99 = 180, 20, 900
			}
		}
		r.Load.Seconds = append(r.Load.Seconds, sec)
		r.Load.Totals.Offered += sec.Offered
		r.Load.Totals.Sent += sec.Offered
		r.Load.Totals.Attempts += sec.Offered
		r.Load.Totals.OK += sec.OK
		r.Load.Totals.Good += sec.Good
		r.Load.Totals.Rejected += sec.Rejected
		limit := 4.0
		if s >= 10 {
			limit = []float64{3.6, 4.4}[s%2]
		}
		rss, cpu := int64(1000+s), float64(s)*0.01
		r.Samples = append(r.Samples, Sample{T: float64(s) + 1, Limit: &limit, ContenderRSS: &rss, ContenderCPU: &cpu})
	}
	var begin time.Duration
	for i, ph := range r.Schedule {
		pr := load.PhaseResult{Label: ph.Label, Start: begin, For: ph.For}
		for _, sec := range r.Load.Seconds[i*10 : i*10+10] {
			pr.Offered += sec.Offered
			pr.OK += sec.OK
			pr.Good += sec.Good
			pr.Rejected += sec.Rejected
		}
		r.Load.Phases = append(r.Load.Phases, pr)
		begin += ph.For
	}
	return r
}

func TestCompute(t *testing.T) {
	r := synthetic()
	Compute(&r)
	m := r.Metrics
	if !near(m.OfferedRate, 125, 1e-9) || !near(m.Goodput, (10*50+3*20+7*100)/20.0, 1e-9) {
		t.Errorf("rates: offered %v goodput %v", m.OfferedRate, m.Goodput)
	}
	// Possible: 50/s for 10 s, then min(200, C=100) for 10 s.
	if !near(m.GoodputShare, 1260.0/1500, 1e-9) {
		t.Errorf("goodput share %v", m.GoodputShare)
	}
	if len(m.Convergence) != 1 || !m.Convergence[0].Converged || m.Convergence[0].Seconds != 3 || m.Convergence[0].Label != "high" {
		t.Fatalf("convergence %+v", m.Convergence)
	}
	if m.ConvergenceMax == nil || *m.ConvergenceMax != 3 {
		t.Errorf("convergence max %v", deref(m.ConvergenceMax))
	}
	// Limit alternates 3.6/4.4 in the second half of the high phase: CV about 0.1.
	if m.LimitOscillation == nil || !near(*m.LimitOscillation, 0.1, 0.005) {
		t.Errorf("oscillation %v", deref(m.LimitOscillation))
	}
	if m.PeakRSSContender == nil || *m.PeakRSSContender != 1019 || m.PeakRSSBackend != nil {
		t.Errorf("peak RSS %v %v", m.PeakRSSContender, m.PeakRSSBackend)
	}
	// 0.19 s of CPU over 2500 tries = 76 µs each.
	if m.CPUPerReqProxy == nil || !near(*m.CPUPerReqProxy, 0.19e6/2500, 1e-6) {
		t.Errorf("cpu per request %v", deref(m.CPUPerReqProxy))
	}
	if !near(m.RejectRate, 1000.0/2500, 1e-9) || m.Amplification != 1 || m.Fairness != nil {
		t.Errorf("reject rate %v amplification %v fairness %v", m.RejectRate, m.Amplification, m.Fairness)
	}
	// The worst second after the first is one of the step's (p99 900 ms);
	// the first second served 50.
	if m.WorstSecondP99 != 900 || m.FirstSecondGood != 50 {
		t.Errorf("worst second's p99 %v, first second's goodput %v", m.WorstSecondP99, m.FirstSecondGood)
	}
	// The first second does not count: a cold start's first second alone
	// over the target is not "a second after the first".
	r.Load.Seconds[0].P99 = 5000
	Compute(&r)
	if r.Metrics.WorstSecondP99 != 900 {
		t.Errorf("worst second's p99 %v counts the first second", r.Metrics.WorstSecondP99)
	}
}

// TestConvergenceNeedsTheSLO: a run that settles into collapse (goodput
// steady at zero, p99 far past the SLO) has not converged.
func TestConvergenceNeedsTheSLO(t *testing.T) {
	r := synthetic()
	for s := 10; s < 20; s++ {
		r.Load.Seconds[s].Good, r.Load.Seconds[s].P99 = 0, 3000
	}
	Compute(&r)
	c := r.Metrics.Convergence
	if len(c) != 1 || c[0].Converged || c[0].Seconds != 10 {
		t.Fatalf("convergence of a collapse: %+v", c)
	}
}

func TestBackendChangesMakeSegments(t *testing.T) {
	r := synthetic()
	r.Params.Changes = []backend.Change{{At: 15 * time.Second, Slowdown: 2}}
	segs := segments(&r)
	if len(segs) != 3 || segs[2].start != 15 || segs[2].end != 20 || segs[1].end != 15 || segs[2].label != "backend 15s:slow=2" {
		t.Fatalf("segments %+v", segs)
	}
	// C halves at 15 s: possible goodput is 50·10 + 100·5 + 50·5.
	Compute(&r)
	if !near(r.Metrics.GoodputShare, float64(r.Load.Totals.Good)/1250, 1e-9) {
		t.Errorf("goodput share %v with a slowdown", r.Metrics.GoodputShare)
	}
}
