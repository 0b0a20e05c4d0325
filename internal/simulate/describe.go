package simulate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/internal/lab/backend"
)

// ServiceOf describes a backend by what an operator knows of it: its
// capacity C in requests per second and either its mean latency unloaded
// (a request's own service time) or its concurrency (workers), from which
// the other follows (workers = C × latency, at least 1). dist is the shape
// of the service time: "exp" (exponential, the default), "const", or
// "lognormal:SIGMA".
func ServiceOf(capacity float64, latency time.Duration, workers int, dist string) (sim.Service, error) {
	switch {
	case !(capacity > 0) || capacity > 1e6:
		return sim.Service{}, fmt.Errorf("capacity %v: want requests per second in (0, 1e6]", capacity)
	case latency < 0 || workers < 0:
		return sim.Service{}, errors.New("latency and workers must be positive")
	case latency > 0 && workers > 0:
		return sim.Service{}, errors.New("give the latency or the workers, not both: with the capacity either gives the other")
	case latency == 0 && workers == 0:
		return sim.Service{}, errors.New("give the service's latency (its mean service time unloaded) or its workers (how many requests it serves at once)")
	}
	if workers == 0 {
		workers = max(1, int(math.Round(capacity*latency.Seconds())))
	}
	if workers > 100000 {
		return sim.Service{}, fmt.Errorf("%d workers: at most 100000", workers)
	}
	mean := time.Duration(float64(workers) / capacity * float64(time.Second))
	if mean <= 0 {
		return sim.Service{}, fmt.Errorf("capacity %v with %d workers: a service time under a nanosecond", capacity, workers)
	}
	s := sim.Service{Workers: workers}
	kind, arg, _ := strings.Cut(dist, ":")
	switch kind {
	case "", "exp":
		s.Dist = sim.Dist{Kind: sim.Exponential, Mean: mean}
	case "const":
		s.Dist = sim.Dist{Kind: sim.Lognormal, Mean: mean}
	case "lognormal":
		sigma, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(sigma > 0 && sigma <= 3) {
			return sim.Service{}, fmt.Errorf("service time %q: want lognormal:SIGMA with SIGMA in (0, 3]", dist)
		}
		s.Dist = sim.Dist{Kind: sim.Lognormal, Mean: mean, Sigma: sigma}
	default:
		return sim.Service{}, fmt.Errorf("service time %q: want exp, const or lognormal:SIGMA", dist)
	}
	if (kind == "exp" || kind == "const") && arg != "" {
		return sim.Service{}, fmt.Errorf("service time %q: %s takes no parameter", dist, kind)
	}
	return s, nil
}

// SetService replaces the workload's backend's workers and service time by
// s's (the rest of a scenario file's service, its CPU and memory model,
// stays). The load keeps its multiples of capacity, so it scales with the
// new capacity; a change of the worker count keeps its ratio to the
// starting workers.
func (w *Workload) SetService(s sim.Service) {
	sc := &w.Scenario
	old := sc.Service.Workers
	for i, c := range sc.WorkerChanges {
		if old > 0 {
			sc.WorkerChanges[i].Workers = max(1, int(math.Round(float64(c.Workers)*float64(s.Workers)/float64(old))))
		}
	}
	sc.Service.Workers, sc.Service.Dist = s.Workers, s.Dist
}

// Load parses a load profile: segments separated by commas, each
//
//	RATE [for DURATION]
//
// where RATE is a multiple of the capacity ("3x", or "3C" as the lab
// writes it), requests per second ("1200" or "1200/s"), or a ramp between
// two of them ("0.5x..3x"). A segment without "for" lasts rest. Segments
// run back to back from 0; each is a phase of the report, named after its
// rate. capacity converts requests per second into multiples.
func Load(spec string, capacity float64, rest time.Duration) ([]sim.Segment, []sim.Phase, time.Duration, error) {
	var (
		segs   []sim.Segment
		phases []sim.Phase
		at     time.Duration
	)
	for i, part := range strings.Split(spec, ",") {
		f := strings.Fields(part)
		length := rest
		switch {
		case len(f) == 3 && f[1] == "for":
			d, err := time.ParseDuration(f[2])
			if err != nil || d <= 0 {
				return nil, nil, 0, fmt.Errorf("load segment %d %q: bad duration %q", i+1, strings.TrimSpace(part), f[2])
			}
			length = d
		case len(f) != 1:
			return nil, nil, 0, fmt.Errorf("load segment %d %q: want RATE or RATE for DURATION (e.g. 3x for 30s)", i+1, strings.TrimSpace(part))
		}
		seg := sim.Segment{At: at}
		if from, to, ok := strings.Cut(f[0], ".."); ok {
			a, err1 := multiple(from, capacity)
			b, err2 := multiple(to, capacity)
			if err := errors.Join(err1, err2); err != nil {
				return nil, nil, 0, fmt.Errorf("load segment %d: %w", i+1, err)
			}
			seg.From, seg.To, seg.Ramp = a, b, true
		} else {
			x, err := multiple(f[0], capacity)
			if err != nil {
				return nil, nil, 0, fmt.Errorf("load segment %d: %w", i+1, err)
			}
			seg.X = x
		}
		segs = append(segs, seg)
		phases = append(phases, sim.Phase{Name: phaseName(f[0], i), At: at})
		at += length
	}
	if at > 24*time.Hour {
		return nil, nil, 0, fmt.Errorf("load lasts %v: at most 24h", at)
	}
	return segs, phases, at, nil
}

// multiple reads one rate as a multiple of capacity.
func multiple(s string, capacity float64) (float64, error) {
	num, perC := strings.CutSuffix(s, "x")
	if !perC {
		num, perC = strings.CutSuffix(s, "C")
	}
	if !perC {
		num = strings.TrimSuffix(s, "/s")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v >= 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("rate %q: want a multiple of capacity (3x) or requests per second (1200/s)", s)
	}
	if !perC {
		v /= capacity
	}
	if v > 1000 {
		return 0, fmt.Errorf("rate %q: at most 1000 times the capacity", s)
	}
	return v, nil
}

// Changes parses changes of the backend over time, in the lab's form
// ("30s:slow=2", "1m:workers=8,slow=1": backend.ParseChange), into the
// scenario: the worker count, and the service time's multiplier relative
// to the base.
func (w *Workload) Changes(specs []string) error {
	sc := &w.Scenario
	for _, s := range specs {
		c, err := backend.ParseChange(s)
		if err != nil {
			return err
		}
		if c.Workers > 0 {
			sc.WorkerChanges = append(sc.WorkerChanges, sim.WorkerChange{At: c.At, Workers: c.Workers})
		}
		if c.Slowdown > 0 {
			sc.Slowdowns = append(sc.Slowdowns, sim.Slowdown{At: c.At, Factor: c.Slowdown})
		}
	}
	return nil
}

// Mix parses "NAME=WEIGHT,NAME=WEIGHT" into names and weights, in the
// order given.
func Mix(spec string) ([]string, []float64, error) {
	var names []string
	var weights []float64
	for _, part := range strings.Split(spec, ",") {
		name, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || name == "" || err != nil || !(x >= 0) || math.IsInf(x, 0) {
			return nil, nil, fmt.Errorf("%q: want NAME=WEIGHT with a non-negative weight", part)
		}
		for _, n := range names {
			if n == name {
				return nil, nil, fmt.Errorf("%q given twice", name)
			}
		}
		names, weights = append(names, name), append(weights, x)
	}
	return names, weights, nil
}

// SetPriorities sets the load's priority mix from "LEVEL=WEIGHT,..." with
// levels critical, default and sheddable.
func (w *Workload) SetPriorities(spec string) error {
	names, weights, err := Mix(spec)
	if err != nil {
		return err
	}
	m := make(map[string]float64, len(names))
	for i, n := range names {
		m[n] = weights[i]
	}
	return setPriorities(&w.Scenario, m)
}

// SetTenants sets the load's tenants (the keys of a group keyed by client)
// from "NAME=WEIGHT,...".
func (w *Workload) SetTenants(spec string) error {
	names, weights, err := Mix(spec)
	if err != nil {
		return err
	}
	if len(names) > 255 {
		return fmt.Errorf("%d tenants: at most 255", len(names))
	}
	w.Tenants, w.Scenario.Tenants = names, weights
	return nil
}
