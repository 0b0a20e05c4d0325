package simulate

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/cmd/internal/lab/report"
)

// LoadLabRun reads one contender's run of a lab scenario, the JSON file
// sluice-lab writes (DIR/SCENARIO/CONTENDER.json, report.Run).
func LoadLabRun(path string) (*report.Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	var r report.Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("simulate: %s: %w", path, err)
	}
	switch {
	case r.Skipped != "":
		return nil, fmt.Errorf("simulate: %s: the lab skipped this contender: %s", path, r.Skipped)
	case r.Error != "":
		return nil, fmt.Errorf("simulate: %s: the lab run failed: %s", path, r.Error)
	case len(r.Load.Phases) == 0 || len(r.Load.Seconds) == 0:
		return nil, fmt.Errorf("simulate: %s: no phases or seconds: not a lab run", path)
	}
	return &r, nil
}

// Stretch is one stretch of a run, a phase or a second after a step, as
// the lab measured it and as the simulator predicts it. Both are counted
// the lab's way, by the instant each request was sent.
type Stretch struct {
	Name     string // the phase's, or "3:3C +1s" for a second after a step
	From, To time.Duration
	// Second says the stretch is one of the seconds after a step, not a
	// phase.
	Second                 bool
	LabGoodput, SimGoodput float64 // successes within the SLO per second
	LabP99, SimP99         time.Duration
	// LabLimit and SimLimit are the mean concurrency limit over the
	// stretch, read once a second as the lab polls it (a phase's first 2 s
	// left out: where the limit settles); 0 where the lab knows none.
	LabLimit, SimLimit float64
}

// Tolerance bounds how far the simulator may be from the lab, as the
// relative error of each figure (0.05 is ±5 %).
type Tolerance struct {
	Goodput, P99, Limit float64
}

// Issue28 is issue 28's bound on sluice simulate against the lab: goodput
// within ±5 %, p99 within ±25 %, the limit within ±30 %.
var Issue28 = Tolerance{Goodput: 0.05, P99: 0.25, Limit: 0.30}

// Ratio is sim / lab, NaN when the lab's figure is 0.
func Ratio(simulated, lab float64) float64 {
	if lab == 0 {
		return math.NaN()
	}
	return simulated / lab
}

// Misses names the figures of s outside t ("" when every one is within).
func (s Stretch) Misses(t Tolerance) string {
	var out string
	off := func(name string, sim, lab, tol float64) {
		if r := Ratio(sim, lab); !(math.Abs(r-1) <= tol) && !(sim == 0 && lab == 0) {
			out = join(out, fmt.Sprintf("%s %.2f", name, r))
		}
	}
	off("goodput", s.SimGoodput, s.LabGoodput, t.Goodput)
	off("p99", float64(s.SimP99), float64(s.LabP99), t.P99)
	if s.LabLimit > 0 {
		off("limit", s.SimLimit, s.LabLimit, t.Limit)
	}
	return out
}

// stepSeconds is how many seconds after a step Compare holds one by one.
const stepSeconds = 3

// settle is how much of a phase's start its mean limit leaves out.
const settle = 2 * time.Second

// Compare holds a simulated run of a lab scenario to a lab run of it:
// every phase, and each of the first seconds of a phase that starts with
// a step (its rate 1.5 times the last phase's or more, a run that starts
// beyond C, or the backend changing at its start). rep must come from the
// scenario the lab ran (FromLab of the same scenario: the same schedule).
func Compare(rep *sim.Report, lab *report.Run) ([]Stretch, error) {
	lp := lab.Load.Phases
	if len(lp) != len(rep.Phases) {
		return nil, fmt.Errorf("simulate: the lab run has %d phases, the simulation %d: not the same scenario", len(lp), len(rep.Phases))
	}
	for i, p := range lp {
		if sp := rep.Phases[i]; p.Start != sp.Start || p.Start+p.For != sp.End {
			return nil, fmt.Errorf("simulate: the lab's phase %d %q runs %v..%v, the simulation's %v..%v: not the same scenario",
				i+1, p.Label, p.Start, p.Start+p.For, sp.Start, sp.End)
		}
	}
	var out []Stretch
	for i, p := range lp {
		sp := rep.Phases[i]
		out = append(out, Stretch{Name: sp.Name, From: sp.Start, To: sp.End,
			LabGoodput: float64(p.Good) / p.For.Seconds(), SimGoodput: sp.Sent.Goodput(),
			LabP99: ms(p.Latency.P99), SimP99: sp.Sent.P99,
			LabLimit: labLimit(lab, sp.Start+settle, sp.End), SimLimit: simLimit(rep, sp.Start+settle, sp.End)})
	}
	for i, sp := range rep.Phases {
		if !steps(lab, i) {
			continue
		}
		for k := range stepSeconds {
			t := sp.Start + time.Duration(k)*time.Second
			sec := int(t / time.Second)
			if t+time.Second > sp.End || sec >= len(lab.Load.Seconds) || sec >= len(rep.Seconds) {
				break
			}
			ls, ss := lab.Load.Seconds[sec], rep.Seconds[sec]
			out = append(out, Stretch{Name: fmt.Sprintf("%s +%ds", sp.Name, k), From: t, To: t + time.Second, Second: true,
				LabGoodput: float64(ls.Good), SimGoodput: ss.Goodput(), LabP99: ms(ls.P99), SimP99: ss.P99,
				LabLimit: labLimit(lab, t, t+time.Second), SimLimit: simLimit(rep, t, t+time.Second)})
		}
	}
	return out, nil
}

// steps reports whether phase i of the lab run starts with a step up or a
// change of the backend.
func steps(lab *report.Run, i int) bool {
	s := lab.Schedule
	if i >= len(s) {
		return false
	}
	start := lab.Load.Phases[i].Start
	for _, c := range lab.Params.Changes {
		if c.At == start {
			return true
		}
	}
	if i == 0 {
		return s[0].From > lab.Capacity
	}
	return s[i].From >= 1.5*s[i-1].To
}

// labLimit is the mean of the limits the lab polled at the whole seconds
// in (from, to] (a poll comes a little after its second), 0 when it
// polled none.
func labLimit(lab *report.Run, from, to time.Duration) float64 {
	sum, n := 0.0, 0
	for _, s := range lab.Samples {
		t := time.Duration(s.T * float64(time.Second))
		if s.Limit != nil && t > from+time.Second/2 && t <= to+time.Second/2 {
			sum += *s.Limit
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// simLimit is the mean of the simulated limit read once a second, at the
// whole seconds in (from, to] as the lab polls it.
func simLimit(rep *sim.Report, from, to time.Duration) float64 {
	sum, n := 0.0, 0
	for t := from.Truncate(time.Second) + time.Second; t <= to; t += time.Second {
		sum += float64(rep.LimitAt(t))
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// ms converts the lab's milliseconds.
func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
