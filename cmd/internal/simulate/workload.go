package simulate

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
	"github.com/sluicehq/sluice/cmd/internal/lab/load"
	"github.com/sluicehq/sluice/cmd/internal/lab/scenario"
)

// Workload is a service and the load it gets, without a policy: a
// sim.Scenario whose gate, bounds, targets and static limit ForGroup fills
// from a group of the config. Segment multiples are of the service's
// capacity (Scenario.Service.Capacity).
type Workload struct {
	Scenario sim.Scenario
	// Source says where the workload came from, for the output: "lab
	// scenario step", "file x.scenario", "flags".
	Source string
	// Tenants names the scenario's tenants, in the order of
	// Scenario.Tenants; nil for unnamed ones.
	Tenants []string
	// Notes are what of the description the simulator does not model.
	Notes []string
	// ServiceRemark says how the described service's numbers were fitted
	// together (ServiceOf's remark), "" when they were taken as given.
	ServiceRemark string
}

// defaultTimeout is how long a client described by flags waits for an
// answer, as the lab's load generator does by default.
const defaultTimeout = 10 * time.Second

// FromLab describes the lab scenario s (cmd/internal/lab/scenario) to the
// simulator: the same backend (workers, service time, changes of workers
// and slowdown), the same load (phases or sweep, in multiples of the
// starting capacity), the same clients (timeout, retries, tenant and
// priority mix), SLO and seed. Its contenders are ignored: the policy is the
// config's.
func FromLab(s *scenario.Scenario) (Workload, error) {
	p, err := s.BackendParams()
	if err != nil {
		return Workload{}, err
	}
	w := Workload{Source: "lab scenario " + s.Name}
	sc := &w.Scenario
	sc.Name, sc.Description = s.Name, s.Header
	sc.Seed = s.Seed
	sc.SLO = time.Duration(s.SLO)
	if sc.SLO == 0 {
		sc.SLO = labDefaultSLO
	}
	sc.Service = sim.Service{Workers: p.Workers, Cancel: p.DropAbandoned}
	dist, note, err := distOf(p.Service)
	if err != nil {
		return Workload{}, err
	}
	sc.Service.Dist = dist
	if note != "" {
		w.note("%s", note)
	}
	for _, c := range p.Changes {
		if c.Workers > 0 {
			sc.WorkerChanges = append(sc.WorkerChanges, sim.WorkerChange{At: c.At, Workers: c.Workers})
		}
		if c.Slowdown > 0 {
			sc.Slowdowns = append(sc.Slowdowns, sim.Slowdown{At: c.At, Factor: c.Slowdown})
		}
	}
	sc.Stall = p.Stall
	capacity := p.Capacity()
	at := time.Duration(0)
	for _, ph := range s.Schedule() {
		seg := sim.Segment{At: at, X: ph.From / capacity}
		if ph.From != ph.To {
			seg = sim.Segment{At: at, From: ph.From / capacity, To: ph.To / capacity, Ramp: true}
		}
		sc.Load = append(sc.Load, seg)
		sc.Phases = append(sc.Phases, sim.Phase{Name: phaseName(ph.Label, len(sc.Phases)), At: at})
		at += ph.For
	}
	sc.Duration = at
	l := s.Load
	sc.Clients = sim.Clients{Timeout: time.Duration(l.Timeout), Retries: l.Retry.Attempts,
		Backoff: time.Duration(l.Retry.Backoff), RetryAfter: l.Retry.Mode == string(load.RetryAfter),
		AtOnce: l.Retry.Mode == string(load.Immediate)}
	if sc.Clients.Timeout == 0 {
		sc.Clients.Timeout = defaultTimeout
	}
	if err := setPriorities(sc, l.Priorities); err != nil {
		return Workload{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(l.Tenants)) {
		w.Tenants = append(w.Tenants, name)
		sc.Tenants = append(sc.Tenants, l.Tenants[name])
	}

	b := s.Backend
	if b.Queue > 0 {
		w.note("backend queue bound (%d): the model's backend queue is unbounded", b.Queue)
	}
	if b.QueuedMemory > 0 {
		w.note("backend queued_memory and its crash at memory_limit: the model's backend holds no memory")
	}
	if b.CPU {
		w.note("a CPU-bound backend (cpu = true): modelled as a pool of %d workers, whatever the cores", p.Workers)
	}
	if s.Hog != nil {
		w.note("the CPU hog beside the backend")
	}
	if l.MaxInflight > 0 {
		w.note("the generator's max_inflight (%d): the model's clients are unbounded", l.MaxInflight)
	}
	if l.Body > 0 {
		w.note("request bodies (%d bytes)", int64(l.Body))
	}
	switch {
	case l.Retry.Attempts > 0 && l.Retry.Mode == string(load.Immediate):
		w.note("retries: the lab's clients retry 429/503 only; the model's also retry timeouts (both at once)")
	case l.Retry.Attempts > 0:
		w.note("retry timing: the lab's clients retry 429/503 only, after an exponential backoff (or Retry-After); the model's also retry timeouts, after a flat jittered backoff (or 1-2 s)")
	}
	return w, nil
}

// labDefaultSLO is the lab's SLO when a scenario sets none (load.DefaultSLO).
const labDefaultSLO = 200 * time.Millisecond

// distOf maps a lab service-time distribution to the simulator's, with a
// note on what the model draws otherwise ("" when nothing).
func distOf(d backend.Dist) (sim.Dist, string, error) {
	switch d.Kind {
	case backend.Const:
		return sim.Dist{Kind: sim.Lognormal, Mean: d.Mean}, "", nil
	case backend.Exponential:
		return sim.Dist{Kind: sim.Exponential, Mean: d.Mean}, "", nil
	case backend.LogNormal:
		return sim.Dist{Kind: sim.Lognormal, Mean: d.Mean, Sigma: d.Sigma}, "", nil
	case backend.Bimodal:
		return sim.Dist{Kind: sim.Bimodal, Fast: d.Mean, Slow: d.Slow, PSlow: d.SlowFraction, Sigma: expSigma},
			fmt.Sprintf("bimodal service time: each mode is lognormal with the exponential's spread (sigma %.2f) in the model, exponential in the lab", expSigma), nil
	}
	return sim.Dist{}, "", fmt.Errorf("simulate: service time %q: unknown distribution", d.Kind)
}

// expSigma is the sigma of a lognormal with the exponential's coefficient
// of variation (1): sqrt(ln 2).
var expSigma = math.Sqrt(math.Ln2)

// phaseName names phase i of a schedule, unique within the run.
func phaseName(label string, i int) string {
	if label == "" {
		return fmt.Sprintf("phase%d", i+1)
	}
	return fmt.Sprintf("%d:%s", i+1, label)
}

// setPriorities sets the scenario's priority mix from level names.
func setPriorities(sc *sim.Scenario, mix map[string]float64) error {
	sc.Priorities = [adaptive.NumPriorities]float64{}
	for name, weight := range mix {
		p, ok := adaptive.ParsePriority(name)
		if !ok {
			return fmt.Errorf("simulate: priority %q: want critical, default or sheddable", name)
		}
		sc.Priorities[p] += weight
	}
	return nil
}

// policyDirectives are the lines of a simulator scenario that describe the
// policy rather than the service and load: ForGroup replaces them.
var policyDirectives = []string{"gate", "guard", "targets", "limits", "static", "interval"}

// FromSimFile reads a scenario in the simulator's text form
// (sim.ParseScenario). Its policy lines (gate, guard, targets, limits,
// static, interval) are the config's business: each one found is a Note
// saying the group's settings replace it.
func FromSimFile(path string) (Workload, error) {
	sc, err := sim.LoadScenario(path)
	if err != nil {
		return Workload{}, err
	}
	w := Workload{Scenario: sc, Source: "file " + filepath.Base(path)}
	src, err := os.ReadFile(path)
	if err != nil {
		return Workload{}, fmt.Errorf("simulate: %w", err)
	}
	lines := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; lines.Scan(); n++ {
		line, _, _ := strings.Cut(lines.Text(), "#")
		if f := strings.Fields(line); len(f) > 0 && slices.Contains(policyDirectives, f[0]) {
			w.note("%s line %d (%s): replaced by the group's settings", filepath.Base(path), n, f[0])
		}
	}
	if sc.Clients.Timeout == 0 {
		w.Scenario.Clients.Timeout = time.Second // the file's default, kept explicit
	}
	return w, nil
}

func (w *Workload) note(format string, args ...any) {
	w.Notes = append(w.Notes, fmt.Sprintf(format, args...))
}
