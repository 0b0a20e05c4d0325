package simulate

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/internal/defaults"
	"github.com/sluicehq/sluice/limits"
)

// Run is one group of a config in charge of a workload: the scenario the
// simulator runs and the group's law, built as the daemon builds them.
type Run struct {
	Group    string
	Scenario sim.Scenario
	Law      adaptive.Law
	// Notes are what of the group's config (and of the config's shared
	// sections it uses) the simulator does not model or models otherwise.
	Notes []string
}

// ForGroup puts group g of cfg (a config that configs.Load or
// Config.SetDefaults has filled) in charge of w: g's law with its bounds,
// knobs and targets; its queue (size, order, CoDel); its rate when it is
// one group-wide local bucket (the only rate the simulator models, and the
// one the "target" law manages); its priority; fair share across the
// load's tenants when g has a key; the resource guard on its CPU and
// memory targets; cfg's control interval and circuit breaker. slo is the
// goodput SLO; 0 means g's latency target, else the workload's.
func ForGroup(w Workload, cfg *configs.Config, g *spec.Group, slo time.Duration) (Run, error) {
	r := Run{Group: g.Name, Scenario: w.Scenario}
	sc := &r.Scenario
	switch {
	case slo > 0:
		sc.SLO = slo
	case g.Targets.Latency > 0:
		sc.SLO = time.Duration(g.Targets.Latency)
	case sc.SLO == 0:
		return Run{}, fmt.Errorf("group %q has no latency target and the load no SLO: give one", g.Name)
	}
	sc.Interval = time.Duration(cfg.Control.Interval)

	t := g.Targets
	sc.Targets = sim.Targets{Latency: time.Duration(t.Latency), Quantile: adaptive.QuantileAtLeast(t.Quantile),
		CPU: t.CPU, Memory: t.Memory, CPUPressure: t.CPUPressure}
	if t.Latency == 0 && g.Queue.Max > 0 {
		r.note("no latency target: the model's queue bound reads the SLO (%v) as one", sc.SLO)
	}
	if t.CPU > 0 && sc.Service.Cores == 0 {
		r.note("targets.cpu %.2f: the model's CPU is the share of busy workers, not a measured CPU", t.CPU)
	}
	if t.Memory > 0 && sc.Service.MemBase == 0 && sc.Service.MemPerRequest == 0 && sc.Service.MemPerQueued == 0 {
		r.note("targets.memory %.2f: the described service holds no memory, so it never binds", t.Memory)
	}
	if t.CPUPressure > 0 && sc.Service.Cores == 0 {
		r.note("targets.cpu_pressure %.2f: CPU pressure is modelled only for a CPU-bound service (cores= in a .scenario file)", t.CPUPressure)
	}

	cc := g.Concurrency
	sc.Bounds = adaptive.Bounds{Min: cc.Min, Max: cc.Max, Initial: cc.Initial}
	if cc.FixedLimit() {
		sc.Bounds = adaptive.Bounds{Min: cc.Limit, Max: cc.Limit, Initial: cc.Limit}
		sc.Static = cc.Limit
	}

	q := g.Queue
	sc.Gate = sim.Gate{Queue: q.Max, QueueTarget: time.Duration(q.CodelTarget), QueueInterval: time.Duration(q.CodelInterval),
		Guard: adaptive.ResourceGuardParams{CPU: t.CPU, Memory: t.Memory}}
	if q.Max == 0 {
		sc.Gate.Queue = -1
	}
	order, ok := adaptive.ParseOrder(string(q.Order))
	if !ok {
		return Run{}, fmt.Errorf("group %q: queue order %q", g.Name, q.Order)
	}
	sc.Gate.Order = order
	if q.Max > 0 && q.CodelTarget == 0 {
		r.note("queue.codel_target = 0 (CoDel off): the model always runs CoDel, with its defaults (%v, %v)",
			adaptive.DefaultCodelTarget, adaptive.DefaultCodelInterval)
		sc.Gate.QueueTarget, sc.Gate.QueueInterval = 0, 0
	}
	if q.Max > 0 && time.Duration(q.MaxWait) < time.Duration(q.CodelInterval) {
		r.note("queue.max_wait %v: the model bounds a wait by CoDel and the client's timeout only", time.Duration(q.MaxWait))
	}

	r.priorities(g)
	sc.Gate.Fair = g.Key != spec.KeyNone
	switch {
	case sc.Gate.Fair && len(sc.Tenants) < 2:
		r.note("key %q: the load has one client key, so fair share never acts (give tenants)", g.Key)
	case !sc.Gate.Fair && len(sc.Tenants) > 1:
		r.note("the load's tenants: the group has no key, so they are one client to it (no fair share)")
	}

	switch {
	case g.Mode == spec.ModeShadow:
		r.note("mode = \"shadow\": simulated as the group would enforce (the daemon in shadow admits everything and only counts these refusals)")
	case g.Rate != nil && g.Rate.Mode == spec.ModeShadow:
		r.note("rate.mode = \"shadow\": the rate is simulated as it would enforce (the daemon in shadow admits what it refuses)")
	}

	managed := r.rate(g)

	c := cfg.Upstream.Circuit
	sc.Gate.Breaker = !c.Off()
	if sc.Gate.Breaker && len(sc.Outages) > 0 && (c.FailureRatio > 0 || c.ConsecutiveFailures != defaults.BreakerConsecutiveFailures ||
		time.Duration(c.OpenDuration) != defaults.BreakerOpenDuration || c.HalfOpenProbes != defaults.BreakerProbes) {
		r.note("upstream.circuit: the model's breaker opens after %d failures in a row for %v and probes with %d (no failure_ratio)",
			defaults.BreakerConsecutiveFailures, defaults.BreakerOpenDuration, defaults.BreakerProbes)
	}

	if cfg.Control.StateFile != "" && !cc.FixedLimit() {
		r.note("control.state_file: the law starts from its configured initial limit (%d), not from a learned one", cc.Initial)
	}

	law, err := lawOf(g, managed)
	if err != nil {
		return Run{}, fmt.Errorf("group %q: %w", g.Name, err)
	}
	r.Law = law
	if err := sc.Validate(); err != nil {
		return Run{}, fmt.Errorf("group %q: %w", g.Name, err)
	}
	return r, nil
}

// priorities sets the load's priority mix as g ranks its requests: all at
// its fixed priority, or the load's own mix under a header priority (the
// default priority when the load has none).
func (r *Run) priorities(g *spec.Group) {
	sc := &r.Scenario
	level, fixed := g.Priority.Level()
	if fixed {
		p := priorityOf(level)
		if mixed(sc.Priorities) {
			r.note("the load's priority mix: every request of this group is %s (its fixed priority)", level)
		}
		sc.Priorities = [adaptive.NumPriorities]float64{}
		sc.Priorities[p] = 1
	} else if !mixed(sc.Priorities) {
		p := priorityOf(g.DefaultPriority)
		sc.Priorities = [adaptive.NumPriorities]float64{}
		sc.Priorities[p] = 1
	}
}

// rate sets g's rate in the model when the model can run it (one
// group-wide local bucket), else notes why it runs without; it returns the
// rate a law may manage, in requests per second (0: none).
func (r *Run) rate(g *spec.Group) float64 {
	rt := g.Rate
	switch {
	case rt == nil:
		return 0
	case rt.Scope == spec.ScopeGlobal:
		r.note("rate with scope \"global\" (a quota shared in Redis): not modelled, the group runs without its rate")
	case g.Key != spec.KeyNone:
		r.note("rate per key (%s, %s): not modelled, the group runs without its rate", g.Key, rt.Algorithm)
	case !modelledRate(rt.Algorithm):
		r.note("rate algorithm %s: not modelled (%s are), the group runs without its rate", rt.Algorithm,
			strings.Join(limits.AlgorithmNames(func(a *limits.Algorithm) bool { return modelledRate(spec.Algorithm(a.Name)) }), " and "))
	default:
		cost := float64(max(rt.Cost, 1))
		sc := &r.Scenario
		sc.Gate.Rate, sc.Gate.Burst = rt.PerSecond()/cost, float64(rt.Burst)/cost
		if rt.Warmup > 0 {
			r.note("rate.warmup %v: not modelled, the bucket starts full", time.Duration(rt.Warmup))
		}
		return sc.Gate.Rate
	}
	return 0
}

// lawOf builds g's law through the registry of laws, with the settings the
// gate gives it (gate/policy.go), from its configured initial limit (a
// state file's learned one is not read) and, when managed > 0 and the law
// manages a token rate, a rate of at most managed req/s.
func lawOf(g *spec.Group, managed float64) (adaptive.Law, error) {
	k, ok := adaptive.LookupLaw(string(g.Concurrency.Law))
	if !ok {
		return nil, fmt.Errorf("unknown law %q", g.Concurrency.Law)
	}
	s := g.LawSettings()
	if k.ManagesRate {
		s.Rate = adaptive.ManagedRate(managed, 0)
	}
	return k.New(s)
}

// modelledRate reports whether the simulator models a rate of algorithm
// name: a bucket of a rate (limits.ShapeRate with a burst), which it spends
// as limits.TokenBucket.
func modelledRate(name spec.Algorithm) bool {
	a, ok := limits.LookupAlgorithm(string(name))
	return ok && a.Shape == limits.ShapeRate && a.Knobs.Has(limits.KnobBurst)
}

// priorityOf is the simulator's priority of a configured level (that of
// the gate: spec.Level.Priority); an empty one is the default level.
func priorityOf(l spec.Level) adaptive.Priority {
	p, _ := l.Priority()
	return p
}

// mixed reports whether a priority mix is set (some weight given).
func mixed(p [adaptive.NumPriorities]float64) bool {
	return p != [adaptive.NumPriorities]float64{}
}

func (r *Run) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}
