package simulate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
)

// ServiceDesc is a backend as an operator (or the lab's backend, whose
// -service takes a mean) describes it: any two of its capacity, its
// workers and one request's own service time unloaded (a mean or a
// median), and the shape of that time. A field left zero is derived from
// the others or, where they do not tell it, from the base service
// ServiceOf is given.
type ServiceDesc struct {
	// Capacity is C, the requests per second the service completes at most.
	Capacity float64
	// Workers is how many requests it serves at once.
	Workers int
	// Mean or Median (at most one) is one request's service time unloaded.
	Mean, Median time.Duration
	// Shape is the service time's distribution: "exp", "const",
	// "lognormal:SIGMA", or the lab backend's form that carries the mean
	// too ("exp:40ms", "const:40ms", "lognormal:10ms:0.5",
	// "bimodal:20ms:200ms:0.1": backend.ParseDist). "" keeps the base's
	// shape, else exponential.
	Shape string
}

// ServiceOf builds the model backend d describes. base is the service d
// changes (a scenario's), nil when there is none: what d leaves unsaid —
// the service time's shape, then its mean, then the workers — is base's,
// in that order, until two of capacity, workers and mean are known. Then
// workers = C × mean (rounded, at least 1) or C = workers / mean. Given
// all three, they must agree within 2 %. A workers count rounded by more
// than 1 % keeps C and stretches the mean to workers / C; the returned
// remark says so ("" when nothing was rounded).
func ServiceOf(d ServiceDesc, base *sim.Service) (sim.Service, string, error) {
	switch {
	case d.Capacity < 0 || d.Capacity > 1e6 || math.IsNaN(d.Capacity):
		return sim.Service{}, "", fmt.Errorf("capacity %v: want requests per second in (0, 1e6]", d.Capacity)
	case d.Mean < 0 || d.Median < 0 || d.Workers < 0:
		return sim.Service{}, "", errors.New("the service time and the workers must be positive")
	case d.Mean > 0 && d.Median > 0:
		return sim.Service{}, "", errors.New("give the service time once: its mean or its median")
	case d.Workers > 100000:
		return sim.Service{}, "", fmt.Errorf("%d workers: at most 100000", d.Workers)
	}
	dist, timed, remark, err := shapeOf(d.Shape, base)
	if err != nil {
		return sim.Service{}, "", err
	}
	if timed && (d.Mean > 0 || d.Median > 0) {
		return sim.Service{}, "", fmt.Errorf("service time %q gives the mean already: give -mean or -median, or the time in it, not both", d.Shape)
	}
	var mean time.Duration
	switch {
	case timed:
		mean = meanOf(dist)
	case d.Mean > 0:
		mean = d.Mean
	case d.Median > 0:
		if mean, err = meanFromMedian(dist, d.Median); err != nil {
			return sim.Service{}, "", err
		}
	}
	capacity, workers := d.Capacity, d.Workers
	known := func() int { return b2i(capacity > 0) + b2i(workers > 0) + b2i(mean > 0) }
	if known() < 2 && base != nil && mean == 0 {
		mean = meanOf(base.Dist)
	}
	if known() < 2 && base != nil && workers == 0 {
		workers = base.Workers
	}
	if known() < 2 {
		return sim.Service{}, "", errors.New("give two of the service's capacity, its workers (how many requests it serves at once) " +
			"and its service time unloaded (-mean or -median)")
	}
	switch {
	case mean == 0:
		mean = time.Duration(float64(workers) / capacity * float64(time.Second))
	case workers == 0:
		exact := capacity * mean.Seconds()
		workers = max(1, int(math.Round(exact)))
		if fit := time.Duration(float64(workers) / capacity * float64(time.Second)); math.Abs(float64(fit-mean)) > 0.01*float64(mean) {
			remark = join(remark, fmt.Sprintf("capacity %g × mean %v = %.3g workers, rounded to %d: the mean is %v so that C stays %g req/s",
				capacity, mean, exact, workers, fit.Round(time.Microsecond), capacity))
			mean = fit
		}
	case capacity > 0:
		if got := float64(workers) / mean.Seconds(); math.Abs(got-capacity) > 0.02*capacity {
			return sim.Service{}, "", fmt.Errorf("%d workers at a mean of %v serve %.0f req/s, not the capacity %g: give two of the three", workers, mean, got, capacity)
		}
	}
	if workers > 100000 {
		return sim.Service{}, "", fmt.Errorf("%d workers: at most 100000", workers)
	}
	if mean <= 0 {
		return sim.Service{}, "", fmt.Errorf("capacity %v with %d workers: a service time under a nanosecond", capacity, workers)
	}
	return sim.Service{Workers: workers, Dist: withMean(dist, mean)}, remark, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shapeOf reads a service time's shape; timed says that it carried its
// mean (the lab backend's form), note what the model draws otherwise. ""
// is base's shape, else exponential.
func shapeOf(shape string, base *sim.Service) (d sim.Dist, timed bool, note string, err error) {
	kind, arg, _ := strings.Cut(shape, ":")
	switch {
	case shape == "" && base != nil:
		return base.Dist, false, "", nil
	case shape == "" || shape == "exp":
		return sim.Dist{Kind: sim.Exponential}, false, "", nil
	case shape == "const":
		return sim.Dist{Kind: sim.Lognormal}, false, "", nil
	case kind == "lognormal" && !strings.Contains(arg, ":"):
		sigma, perr := strconv.ParseFloat(arg, 64)
		if perr != nil || !(sigma > 0 && sigma <= 3) {
			return sim.Dist{}, false, "", fmt.Errorf("service time %q: want lognormal:SIGMA with SIGMA in (0, 3], or the lab's lognormal:MEAN:SIGMA", shape)
		}
		return sim.Dist{Kind: sim.Lognormal, Sigma: sigma}, false, "", nil
	}
	bd, perr := backend.ParseDist(shape)
	if perr != nil {
		return sim.Dist{}, false, "", fmt.Errorf("service time %q: want exp, const or lognormal:SIGMA, or the lab backend's form with its mean "+
			"(exp:40ms, const:40ms, lognormal:10ms:0.5, bimodal:20ms:200ms:0.1)", shape)
	}
	d, note, err = distOf(bd)
	return d, true, note, err
}

// join joins two remarks with "; ", either possibly empty.
func join(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// meanOf is d's mean service time.
func meanOf(d sim.Dist) time.Duration {
	if d.Kind == sim.Bimodal {
		return time.Duration((1-d.PSlow)*float64(d.Fast) + d.PSlow*float64(d.Slow))
	}
	return d.Mean
}

// withMean is d scaled to the mean m (a bimodal's two modes in proportion).
func withMean(d sim.Dist, m time.Duration) sim.Dist {
	if d.Kind != sim.Bimodal {
		d.Mean = m
		return d
	}
	if old := meanOf(d); old > 0 && old != m {
		k := float64(m) / float64(old)
		d.Fast, d.Slow = time.Duration(k*float64(d.Fast)), time.Duration(k*float64(d.Slow))
	}
	return d
}

// meanFromMedian is the mean of the shape d whose median is med: a
// lognormal's is med·e^(σ²/2), an exponential's med/ln 2, a constant's med.
func meanFromMedian(d sim.Dist, med time.Duration) (time.Duration, error) {
	switch {
	case d.Kind == sim.Exponential:
		return time.Duration(float64(med) / math.Ln2), nil
	case d.Kind == sim.Lognormal:
		return time.Duration(float64(med) * math.Exp(d.Sigma*d.Sigma/2)), nil
	}
	return 0, errors.New("a bimodal service time has no median to give: give its modes' means (bimodal:FAST:SLOW:FRACTION)")
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

// LabHost is what a request costs on the lab's machine (two cores shared
// by sluice, the load generator and the lab's backend), as the lab
// measured it at C = 1,500 req/s (BENCHMARKS.md, "sluice simulate against
// the lab"): the host a config is simulated on when the user says the
// proxy and the load share the service's cores (HostOf).
var LabHost = sim.Host{Send: 90 * time.Microsecond, Forward: 100 * time.Microsecond,
	Refuse: 30 * time.Microsecond, Handle: 90 * time.Microsecond, Wake: 1500 * time.Microsecond}

// HostOf describes the cores the service shares with the proxy and the
// load: cores of them, each request costing LabHost's CPU unless costs
// ("send=90us,forward=100us,refuse=30us,handle=90us,wake=1.5ms", any of
// them) says otherwise.
func HostOf(cores float64, costs string) (sim.Host, error) {
	if !(cores > 0 && cores <= 1024) {
		return sim.Host{}, fmt.Errorf("%v shared cores: want a number in (0, 1024]", cores)
	}
	h := LabHost
	h.Cores = cores
	if costs == "" {
		return h, nil
	}
	for _, part := range strings.Split(costs, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		d, err := time.ParseDuration(v)
		if !ok || err != nil || d < 0 || d > time.Second {
			return sim.Host{}, fmt.Errorf("%q: want KEY=DURATION (send, forward, refuse, handle, wake), e.g. forward=90us", part)
		}
		switch k {
		case "send":
			h.Send = d
		case "forward":
			h.Forward = d
		case "refuse":
			h.Refuse = d
		case "handle":
			h.Handle = d
		case "wake":
			h.Wake = d
		default:
			return sim.Host{}, fmt.Errorf("%q: unknown cost %q (send, forward, refuse, handle, wake)", part, k)
		}
	}
	return h, nil
}
