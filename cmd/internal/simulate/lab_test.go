package simulate

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/cmd/internal/lab"
	"github.com/sluicehq/sluice/cmd/internal/lab/report"
	"github.com/sluicehq/sluice/configs"
)

// recordedLab holds lab runs of shipped scenarios, each as sluice-lab
// wrote it (SCENARIO/CONTENDER.json, the contender's config in
// SCENARIO/CONTENDER/sluice.toml), on the lab's two cores; BENCHMARKS.md,
// "sluice simulate against the lab", names the commands and the binary.
const recordedLab = "testdata/lab"

// recorded reads the one lab run in dir.
func recorded(t *testing.T, dir string) *report.Run {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("%s: %d runs, want one", dir, len(files))
	}
	run, err := LoadLabRun(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// heldRun simulates the recorded lab run in dir as "sluice simulate -lab"
// does, on the lab's shared cores, and compares the two.
func heldRun(t *testing.T, dir string) []Stretch {
	t.Helper()
	run := recorded(t, dir)
	s, err := lab.LoadScenario(run.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	if run.Quick {
		s = s.Shortened()
	}
	w, err := FromLab(s)
	if err != nil {
		t.Fatal(err)
	}
	if w.Scenario.Host, err = HostOf(2, ""); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(filepath.Join(dir, run.Contender, "sluice.toml"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ForGroup(w, cfg, &cfg.Groups[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(r.Scenario, r.Law)
	if err != nil {
		t.Fatal(err)
	}
	held, err := Compare(rep, run)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// TestHeldToTheLab holds the simulator to recorded lab runs: in every
// phase of each, goodput within ±5 %, p99 within ±25 % and the limit
// within ±30 % of the lab's (issue 28), counted as the lab counts. The
// simulation is deterministic and the recordings fixed, so the test
// fails exactly when a change to the model (or to a law or a shipped
// scenario) takes the simulator away from what the lab measured.
func TestHeldToTheLab(t *testing.T) {
	dirs, err := os.ReadDir(recordedLab)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		n++
		t.Run(d.Name(), func(t *testing.T) {
			for _, s := range heldRun(t, filepath.Join(recordedLab, d.Name())) {
				if s.Second {
					continue // TestHeldToTheLabAfterASteps
				}
				if miss := s.Misses(Issue28); miss != "" {
					t.Errorf("%s: %s (lab %.0f/s %v limit %.0f, simulated %.0f/s %v limit %.0f)", s.Name, miss,
						s.LabGoodput, s.LabP99, s.LabLimit, s.SimGoodput, s.SimP99, s.SimLimit)
				}
			}
		})
	}
	if n == 0 {
		t.Fatalf("no recorded lab runs in %s", recordedLab)
	}
}

// TestHeldToTheLabAfterASteps holds the simulator to the recorded lab
// runs second by second after a step into overload (a phase offered more
// than 1.2 × C after one offered less, or from the start): goodput within
// ±5 % and the limit within ±30 % in each of the 3 seconds, p99 within
// ±25 % in the seconds after the step's own, and in the step's own second
// the transient, p99 at least 1.25 times what it is two seconds later, in
// the lab and in the simulation alike. (The step's own second's p99 is
// not held to ±25 %: from cold the simulator's is 1.34 times the lab's,
// BENCHMARKS.md.) Held are services of C ≥ 1,000 req/s: a second's goodput
// at 400 req/s has a Poisson noise of ±5 % (1/√400) by itself, the whole
// bound. The seconds after a step to exactly 1 × C are shown by "sluice
// simulate -lab" but not held either: at ρ = 1 a second's p99 is the
// length of a queue's random walk, which two draws of the arrivals do not
// share.
func TestHeldToTheLabAfterASteps(t *testing.T) {
	dirs, err := os.ReadDir(recordedLab)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(recordedLab, d.Name())
		run := recorded(t, dir)
		over := func(from time.Duration) (time.Duration, bool) {
			at := time.Duration(0)
			for i, p := range run.Schedule {
				if from >= at && from < at+p.For {
					return at, p.From > 1.2*run.Capacity && (i == 0 || run.Schedule[i-1].To < 1.2*run.Capacity)
				}
				at += p.For
			}
			return 0, false
		}
		t.Run(d.Name(), func(t *testing.T) {
			var step []Stretch
			for _, s := range heldRun(t, dir) {
				if start, ok := over(s.From); s.Second && ok && run.Capacity >= 1000 {
					if s.From == start && len(step) > 0 {
						t.Fatalf("two steps into overload in %s: the test knows one", d.Name())
					}
					step = append(step, s)
				}
			}
			if len(step) == 0 {
				return
			}
			held++
			for i, s := range step {
				tol := Issue28
				if i == 0 {
					tol.P99 = math.Inf(1)
				}
				if miss := s.Misses(tol); miss != "" {
					t.Errorf("%s: %s (lab %.0f/s %v limit %.0f, simulated %.0f/s %v limit %.0f)", s.Name, miss,
						s.LabGoodput, s.LabP99, s.LabLimit, s.SimGoodput, s.SimP99, s.SimLimit)
				}
			}
			if len(step) < 3 {
				t.Fatalf("%d seconds after the step, want 3", len(step))
			}
			first, later := step[0], step[2]
			if first.LabP99 < later.LabP99*5/4 || first.SimP99 < later.SimP99*5/4 {
				t.Errorf("the step's second: p99 %v in the lab, %v simulated; two seconds later %v and %v: want the transient in both",
					first.LabP99, first.SimP99, later.LabP99, later.SimP99)
			}
		})
	}
	if held == 0 {
		t.Fatal("no step into overload at C >= 1,000 in the recorded runs")
	}
}
