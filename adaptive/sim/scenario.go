package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/internal/pause"
)

// Scenario describes one simulated run: the model backend, the traffic, the
// clients and the gate's policy configuration. The control law under test is
// passed to Run separately, so one scenario runs every law. Scenarios are usually
// read from a file with ParseScenario; zero fields mean the defaults documented
// on each field.
type Scenario struct {
	Name        string // file name without extension
	Description string // the file's leading # comment block

	Seed     uint64        // random seed; the same seed gives the same run
	Duration time.Duration // simulated length; required
	Interval time.Duration // control interval; default 250 ms
	// SLO is the end-to-end latency (queue wait + backend) a success must meet to
	// count as goodput; required.
	SLO time.Duration

	Service   Service
	Slowdowns []Slowdown // changes of the backend's speed over time
	// WorkerChanges change the backend's worker count over time.
	WorkerChanges []WorkerChange
	// Outages are spans in which the backend fails every request at once.
	Outages []Outage
	// Stall pauses every worker periodically: no request in service makes
	// progress during a pause (it resumes where it was when the pause
	// ends), as the lab backend's stall. Zero: never. Not with Cores.
	Stall pause.Periodic
	// Hogs are changes of a CPU hog beside a CPU-bound backend (Service.Cores).
	Hogs []Hog
	// Host is the machine the proxy and the clients share with the
	// service, if they share one; zero: they do not.
	Host    Host
	Load    []Segment // the open-loop load profile, in order of At; required
	Clients Clients

	// Priorities are the weights of each priority level among new requests;
	// all zero means every request is Default.
	Priorities [adaptive.NumPriorities]float64
	// Tenants are the weights of each tenant (key) among new requests; empty
	// means one tenant.
	Tenants []float64

	Gate Gate

	// Targets are the operator's targets, given to the laws that take them
	// (Target; AIMD uses the latency as its bound). Latency defaults to SLO.
	Targets Targets
	// Bounds are every law's min, max and initial limit.
	Bounds adaptive.Bounds
	// Static is the Fixed law's limit: a hand-tuned number for the backend at
	// its nominal capacity; default Bounds.Initial.
	Static int

	// Phases split the report; each runs from At to the next phase or the end.
	// Default: one phase "all" from 0.
	Phases []Phase
}

// Service is the model backend: a pool of Workers fed from a FIFO queue, so
// latency grows with concurrency once more than Workers requests are in it.
type Service struct {
	Workers int  // default 10
	Dist    Dist // service time; default lognormal, mean 10 ms, sigma 0.5
	// Contention stretches each service time by (1 + Contention × busy/Workers),
	// for backends that slow down as they get busier; default 0.
	Contention float64
	// CPU is CPUBase + CPUPerWorker × busy workers (averaged over the interval);
	// CPUPerWorker defaults to 1/Workers (all busy = 100 %).
	CPUBase, CPUPerWorker float64
	// Memory is MemBase + MemPerRequest × requests in the backend (working or
	// queued there) + MemPerQueued × requests waiting in the gate queue, as a
	// fraction of the memory available.
	MemBase, MemPerRequest, MemPerQueued float64
	// Cancel makes the backend drop a request whose client gave up before a worker
	// took it; by default it still serves it (wasted work, as most backends do).
	Cancel bool

	// Cores, when > 0, makes the backend CPU-bound: a service time is CPU work,
	// and the busy workers share Cores CPUs with the threads of a CPU hog (see
	// Hog) by processor sharing weighted by nice level, as Linux's CFS shares
	// them (each runnable thread gets at most one core). CPU is then measured
	// rather than modelled by CPUPerWorker: CPUBase plus the busy share of the
	// cores (CPUFrom), and the CPU pressure (PSI) is known. Default 0: workers
	// run in parallel whatever else runs, and CPU pressure is unknown.
	Cores float64
	// CPUFrom says what Sample.CPU measures with Cores: CPUFromHost (every
	// thread on the cores, the hog's included; the default) or CPUFromService
	// (the backend's own threads against the cores).
	CPUFrom string
	// PSI is how the CPU pressure the law sees is averaged: PSIAvg10 (the
	// kernel's avg10, updated every 2 s with a 10 s time constant; the
	// default) or PSIInterval (the share of the control interval itself).
	PSI string
}

// What Service.CPUFrom and Service.PSI name.
const (
	CPUFromHost    = "host"
	CPUFromService = "service"
	PSIAvg10       = "avg10"
	PSIInterval    = "interval"
)

// Capacity returns the backend's nominal capacity C in requests per second:
// Workers / mean service time, with Cores at most min(Workers, Cores) / mean
// (the quiet machine's).
func (s Service) Capacity() float64 {
	w := float64(s.Workers)
	if s.Cores > 0 {
		w = math.Min(w, s.Cores)
	}
	return w / s.Dist.mean()
}

// WorkerChange sets the backend's worker count from At on (capacity changes in
// proportion, service times do not).
type WorkerChange struct {
	At      time.Duration
	Workers int
}

// Outage makes the backend fail from At for For: every request in it fails at
// once and every request sent to it fails after a millisecond (a refused
// connection), which the gate counts as a drop.
type Outage struct {
	At, For time.Duration
}

// Hog sets, from At on, a CPU hog beside a CPU-bound backend: Threads busy
// loops at nice level Nice (−20..19), which get CPU in proportion to their
// weight (1.25 to the power −Nice of a nice-0 thread, as CFS's weight table).
// Threads 0 stops it.
type Hog struct {
	At      time.Duration
	Threads int
	Nice    int
}

// Slowdown multiplies every service time by Factor from At on (2 halves capacity).
type Slowdown struct {
	At     time.Duration
	Factor float64
}

// Clients are the open-loop clients' behaviour.
type Clients struct {
	// Timeout is how long a client waits for an attempt before giving up (a drop);
	// default 1 s.
	Timeout time.Duration
	// Retries is how many times a client retries a rejected or dropped request;
	// default 0.
	Retries int
	// Backoff is the delay before a retry when no Retry-After is honoured,
	// jittered ×[0.5, 1.5); default 10 ms.
	Backoff time.Duration
	// AtOnce makes clients retry at once, with no backoff (a retry storm's
	// clients); Retry-After is then ignored.
	AtOnce bool
	// RetryAfter makes clients honour the gate's Retry-After (1 s + up to 1 s of
	// jitter) on rejections.
	RetryAfter bool
}

// Gate is the gate's configuration apart from the law.
type Gate struct {
	Queue int // maximum waiters; default 100; negative means no queue
	Order adaptive.Order
	// QueueTarget and QueueInterval configure adaptive.QueueWait (5 ms, 100 ms).
	QueueTarget, QueueInterval time.Duration
	// NoCoDel turns adaptive.QueueWait off (the gate's queue.codel_target =
	// 0): every waiter may wait MaxWait, served in Order (Adaptive is then
	// FIFO). It needs a MaxWait.
	NoCoDel bool
	// MaxWait caps every waiter's wait bound (the gate's queue.max_wait); 0:
	// no cap but QueueWait's.
	MaxWait time.Duration
	// Fair enables adaptive.FairShare across tenants.
	Fair bool
	// Rate, when > 0, is the initial managed token rate (req/s) given to the
	// Target law (Rate.Initial); Burst is the bucket size, default Rate/10.
	Rate, Burst float64
	// NoShedder disables the adaptive.PriorityShedder.
	NoShedder bool
	// Breaker puts the proxy's circuit breaker, with its default settings, in
	// front of the gate: it opens after 5 upstream failures in a row (requests
	// failed by an outage; a client giving up is not one), turns every request
	// away (RejectCircuitOpen, counted in no Sample field, as the proxy's are)
	// for 5 s, then lets 3 probes through and closes when all succeed.
	Breaker bool
	// Guard configures the adaptive.ResourceGuard (off by default).
	Guard adaptive.ResourceGuardParams
}

// Targets are the operator's targets.
type Targets struct {
	Latency     time.Duration
	Quantile    adaptive.Quantile
	CPU, Memory float64
	CPUPressure float64
}

// Phase names a part of the run in the report.
type Phase struct {
	Name string
	At   time.Duration
}

// withDefaults returns the scenario with zero fields filled.
func (sc Scenario) withDefaults() Scenario {
	if sc.Interval == 0 {
		sc.Interval = adaptive.DefaultInterval
	}
	s := &sc.Service
	if s.Workers == 0 {
		s.Workers = 10
	}
	if s.Dist == (Dist{}) {
		s.Dist = Dist{Kind: Lognormal, Mean: 10 * time.Millisecond, Sigma: 0.5}
	}
	if s.CPUPerWorker == 0 {
		s.CPUPerWorker = 1 / float64(s.Workers)
	}
	if s.CPUFrom == "" {
		s.CPUFrom = CPUFromHost
	}
	if s.PSI == "" {
		s.PSI = PSIAvg10
	}
	if sc.Clients.Timeout == 0 {
		sc.Clients.Timeout = time.Second
	}
	if sc.Clients.Backoff == 0 {
		sc.Clients.Backoff = 10 * time.Millisecond
	}
	if sc.Gate.Queue == 0 {
		sc.Gate.Queue = 100
	}
	if sc.Gate.Rate > 0 && sc.Gate.Burst == 0 {
		sc.Gate.Burst = math.Max(1, sc.Gate.Rate/10)
	}
	if len(sc.Tenants) == 0 {
		sc.Tenants = []float64{1}
	}
	if sc.Priorities == ([adaptive.NumPriorities]float64{}) {
		sc.Priorities[adaptive.Default] = 1
	}
	if sc.Targets.Latency == 0 {
		sc.Targets.Latency = sc.SLO
	}
	if sc.Static == 0 {
		sc.Static = sc.Bounds.Clamp(sc.Bounds.Initial)
		if sc.Bounds.Initial == 0 {
			sc.Static = sc.Bounds.Clamp(adaptive.DefaultInitialLimit)
		}
	}
	if len(sc.Phases) == 0 {
		sc.Phases = []Phase{{Name: "all"}}
	}
	return sc
}

// Validate reports every problem with the scenario.
func (sc Scenario) Validate() error {
	var ps problems
	if sc.Duration <= 0 {
		ps.bad("duration %v must be positive", sc.Duration)
	}
	if sc.Interval < 0 {
		ps.bad("interval %v must be positive", sc.Interval)
	}
	if sc.SLO <= 0 {
		ps.bad("slo %v must be positive", sc.SLO)
	}
	sc.Service.validate(&ps)
	sc.validateChanges(&ps)
	sc.validateLoad(&ps)
	sc.validateGate(&ps)
	return errors.Join(ps...)
}

// problems collects what Validate finds, each error prefixed "sim: ".
type problems []error

func (ps *problems) bad(format string, args ...any) {
	*ps = append(*ps, fmt.Errorf("sim: "+format, args...))
}

// add adds err, if any, as it is.
func (ps *problems) add(err error) {
	if err != nil {
		*ps = append(*ps, err)
	}
}

// validate checks the described service.
func (s Service) validate(ps *problems) {
	if s.Workers < 0 {
		ps.bad("service workers %d must be positive", s.Workers)
	}
	if s.Dist != (Dist{}) {
		d := s.Dist
		switch {
		case d.Kind == Bimodal && (d.Fast <= 0 || d.Slow <= 0):
			ps.bad("service bimodal fast %v and slow %v must be positive", d.Fast, d.Slow)
		case d.Kind == Bimodal && !(d.PSlow >= 0 && d.PSlow <= 1):
			ps.bad("service bimodal p_slow %v must be in [0, 1]", d.PSlow)
		case d.Kind != Bimodal && d.Mean <= 0:
			ps.bad("service mean %v must be positive", d.Mean)
		}
		if !(d.Sigma >= 0 && d.Sigma <= 3) {
			ps.bad("service sigma %v must be in [0, 3]", d.Sigma)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"contention", s.Contention}, {"cpu_base", s.CPUBase}, {"cpu_worker", s.CPUPerWorker},
		{"mem_base", s.MemBase}, {"mem_request", s.MemPerRequest}, {"mem_queued", s.MemPerQueued}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			ps.bad("service %s %v must be a non-negative number", f.name, f.v)
		}
	}
	if !(s.Cores >= 0) || math.IsInf(s.Cores, 0) || s.Cores > 1024 {
		ps.bad("service cores %v must be in [0, 1024]", s.Cores)
	}
	switch s.CPUFrom {
	case "", CPUFromHost, CPUFromService:
	default:
		ps.bad("service cpu_from %q: want %q or %q", s.CPUFrom, CPUFromHost, CPUFromService)
	}
	switch s.PSI {
	case "", PSIAvg10, PSIInterval:
	default:
		ps.bad("service psi %q: want %q or %q", s.PSI, PSIAvg10, PSIInterval)
	}
}

// validateChanges checks what changes during the run: slowdowns, worker
// changes, outages, the stall, hogs and the host.
func (sc Scenario) validateChanges(ps *problems) {
	for _, sl := range sc.Slowdowns {
		if sl.At < 0 || !(sl.Factor > 0) || math.IsInf(sl.Factor, 0) {
			ps.bad("slowdown at %v by %v: time must be non-negative and factor positive", sl.At, sl.Factor)
		}
	}
	for _, w := range sc.WorkerChanges {
		if w.At < 0 || w.Workers < 1 {
			ps.bad("workers at %v: %d: time must be non-negative and workers at least 1", w.At, w.Workers)
		}
	}
	for _, o := range sc.Outages {
		if o.At < 0 || o.For <= 0 {
			ps.bad("outage at %v for %v: time must be non-negative and length positive", o.At, o.For)
		}
	}
	if err := sc.Stall.Validate(); err != nil {
		ps.bad("stall: %v", err)
	}
	if sc.Stall.On() && sc.Service.Cores > 0 {
		ps.bad("stall: not modelled with a CPU-bound service (service cores=N)")
	}
	for _, h := range sc.Hogs {
		if h.At < 0 || h.Threads < 0 || h.Threads > 1024 || h.Nice < -20 || h.Nice > 19 {
			ps.bad("hog at %v: %d threads at nice %d: want a non-negative time, 0..1024 threads, nice -20..19", h.At, h.Threads, h.Nice)
		}
		if sc.Service.Cores == 0 {
			ps.bad("hog at %v: a hog needs a CPU-bound service (service cores=N)", h.At)
		}
	}
	ps.add(sc.Host.Validate())
}

// validateLoad checks the load profile, the clients and the mix of
// priorities and tenants.
func (sc Scenario) validateLoad(ps *problems) {
	if len(sc.Load) == 0 {
		ps.bad("no load profile")
	}
	for i, g := range sc.Load {
		if g.At < 0 || (i > 0 && g.At < sc.Load[i-1].At) {
			ps.bad("load at %v: segments must start at non-negative, non-decreasing times", g.At)
		}
		for _, v := range []float64{g.X, g.From, g.To, math.Abs(g.Amp)} {
			if !(v >= 0 && v <= 1000) {
				ps.bad("load at %v: multiple %v must be in [0, 1000]", g.At, v)
			}
		}
		if g.Period < 0 {
			ps.bad("load at %v: period %v must be positive", g.At, g.Period)
		}
	}
	c := sc.Clients
	if c.Timeout < 0 || c.Backoff < 0 {
		ps.bad("clients timeout %v and backoff %v must be positive", c.Timeout, c.Backoff)
	}
	if c.Retries < 0 || c.Retries > 100 {
		ps.bad("clients retries %d must be in [0, 100]", c.Retries)
	}
	for p, w := range sc.Priorities {
		if !(w >= 0) || math.IsInf(w, 0) {
			ps.bad("priority %d weight %v must be non-negative", p, w)
		}
	}
	if len(sc.Tenants) > 255 {
		ps.bad("%d tenants: at most 255", len(sc.Tenants))
	}
	sum := 0.0
	for i, w := range sc.Tenants {
		if !(w >= 0) || math.IsInf(w, 0) {
			ps.bad("tenant %d weight %v must be non-negative", i, w)
		}
		sum += w
	}
	if len(sc.Tenants) > 0 && !(sum > 0) {
		ps.bad("tenant weights must not all be zero")
	}
}

// validateGate checks the model of the gate, the targets, the bounds and
// the phases.
func (sc Scenario) validateGate(ps *problems) {
	g := sc.Gate
	if !(g.Rate >= 0) || !(g.Burst >= 0) || math.IsInf(g.Rate, 0) || math.IsInf(g.Burst, 0) {
		ps.bad("gate rate %v and burst %v must be non-negative", g.Rate, g.Burst)
	}
	if g.QueueTarget < 0 || g.QueueInterval < 0 || g.MaxWait < 0 {
		ps.bad("gate queue wait bounds %v, %v and max_wait %v must be positive", g.QueueTarget, g.QueueInterval, g.MaxWait)
	}
	if g.NoCoDel && g.Queue >= 0 && g.MaxWait <= 0 {
		ps.bad("gate codel=false needs a max_wait")
	}
	ps.add(g.Guard.Validate())
	ps.add(sc.Bounds.Validate())
	if sc.Static < 0 {
		ps.bad("static limit %d must be positive", sc.Static)
	}
	t := sc.Targets
	if t.Latency < 0 || !(t.CPU >= 0 && t.CPU <= 1) || !(t.Memory >= 0 && t.Memory <= 1) ||
		!(t.CPUPressure >= 0 && t.CPUPressure <= 1) {
		ps.bad("targets: latency must be positive and cpu, memory, cpu_pressure in [0, 1]")
	}
	for i, p := range sc.Phases {
		if p.At < 0 || (i > 0 && p.At <= sc.Phases[i-1].At) {
			ps.bad("phase %q at %v: phases must start at increasing, non-negative times", p.Name, p.At)
		}
	}
}
