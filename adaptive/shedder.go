package adaptive

import (
	"math"
	"time"
)

// ShedderParams configures a PriorityShedder. Zero fields mean the defaults.
type ShedderParams struct {
	// Suffer is the share of a level's arrivals turned away at the concurrency
	// stage above which that level counts as suffering, in [0, 1); default 0.01.
	Suffer float64
	// Hold is how long no admitted level may suffer before the highest shed level
	// is restored; default 5 s.
	Hold time.Duration
}

// Validate reports every problem with the params.
func (p ShedderParams) Validate() error {
	var pr problems
	pr.ratio("shedder suffer ratio", p.Suffer, 0, 1)
	if p.Hold < 0 {
		pr.add("shedder hold %v must be positive", p.Hold)
	}
	return pr.err()
}

// PriorityShedder sheds whole priority levels, lowest first, while a more
// important level is being turned away. The queue already serves higher
// priorities first and evicts lower ones; the shedder steps in when that is not
// enough, and stops lower levels from entering the gate at all.
//
// Each interval, among the levels not shed and with traffic, the lowest may be
// turned away at the concurrency stage (that is the queue's job); if any level
// above it has more than Suffer of its arrivals turned away in two consecutive
// intervals (one unlucky interval is noise), the lowest is shed (one level per
// interval). A level is therefore shed only when every lower level already is,
// and Critical is never shed. After Hold without any admitted level suffering,
// the highest shed level with traffic is restored (one per Hold).
//
// Not safe for concurrent use; publish the Floor it returns.
type PriorityShedder struct {
	p        ShedderParams
	floor    Priority
	calm     time.Time // since when no admitted level suffered
	suffered bool      // an admitted level suffered in the last interval
}

// NewPriorityShedder returns a shedder that sheds nothing yet.
func NewPriorityShedder(p ShedderParams) (*PriorityShedder, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.Suffer = orDefault(p.Suffer, 0.01)
	if p.Hold == 0 {
		p.Hold = 5 * time.Second
	}
	return &PriorityShedder{p: p}, nil
}

// Floor returns the current floor (RejectPriority below it).
func (ps *PriorityShedder) Floor() Floor {
	return Floor{Priority: ps.floor, Reason: RejectPriority}
}

// Update applies one interval's sample and returns the new floor.
func (ps *PriorityShedder) Update(s Sample) Floor {
	lowest, suffering := -1, false
	for l := int(ps.floor); l < NumPriorities; l++ {
		c := s.ByPriority[l]
		if c.Arrived <= 0 {
			continue
		}
		if lowest < 0 {
			lowest = l
			continue
		}
		if c.Rejected > 0 && float64(c.Rejected) > ps.p.Suffer*float64(c.Arrived) {
			suffering = true
		}
	}
	again := suffering && ps.suffered
	ps.suffered = suffering && !again
	switch {
	case suffering:
		ps.calm = s.Now
		if again && lowest >= 0 && lowest < int(Critical) {
			ps.floor = Priority(lowest + 1)
		}
	case ps.calm.IsZero():
		ps.calm = s.Now
	case ps.floor > 0 && s.Now.Sub(ps.calm) >= ps.p.Hold:
		next := Priority(0)
		for l := int(ps.floor) - 1; l >= 0; l-- {
			if s.ByPriority[l].Arrived > 0 {
				next = Priority(l)
				break
			}
		}
		ps.floor = next
		ps.calm = s.Now
	}
	return ps.Floor()
}

// ResourceGuardParams configures a ResourceGuard. Zero fields mean the defaults.
type ResourceGuardParams struct {
	// CPU and Memory are the utilisations in (0, 1] beyond which the guard acts;
	// zero turns that guard off. Use the operator's targets.
	CPU, Memory float64
	// Hysteresis is how far below its threshold a utilisation must fall before the
	// guard releases, in [0, 0.5); default 0.05.
	Hysteresis float64
}

// Validate reports every problem with the params.
func (p ResourceGuardParams) Validate() error {
	var pr problems
	pr.utilTarget("guard cpu", p.CPU)
	pr.utilTarget("guard memory", p.Memory)
	pr.ratio("guard hysteresis", p.Hysteresis, 0, 0.5)
	return pr.err()
}

// ResourceGuard protects the process or container from running out of memory or
// CPU: beyond the memory threshold only Critical is admitted (RejectMemory);
// beyond the CPU threshold priorities below Default are shed (RejectCPU). It acts
// on the interval's utilisation, with hysteresis on release; an unknown
// utilisation releases its guard (fail open). The control law, aiming below the
// same targets, normally keeps the guard idle; the guard is the backstop.
//
// Not safe for concurrent use; publish the Floor it returns.
type ResourceGuard struct {
	p        ResourceGuardParams
	cpu, mem bool
}

// NewResourceGuard returns a guard that is not engaged.
func NewResourceGuard(p ResourceGuardParams) (*ResourceGuard, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.Hysteresis = orDefault(p.Hysteresis, 0.05)
	return &ResourceGuard{p: p}, nil
}

// Update applies one interval's sample and returns the new floor.
func (g *ResourceGuard) Update(s Sample) Floor {
	g.mem = g.engaged(g.mem, g.p.Memory, s.Memory, s.MemoryKnown)
	g.cpu = g.engaged(g.cpu, g.p.CPU, s.CPU, s.CPUKnown)
	return g.Floor()
}

func (g *ResourceGuard) engaged(on bool, threshold, v float64, known bool) bool {
	u, ok := utilisation(v, known)
	if threshold == 0 || !ok {
		return false
	}
	if on {
		return u > threshold-g.p.Hysteresis
	}
	return u > threshold
}

// Floor returns the current floor.
func (g *ResourceGuard) Floor() Floor {
	switch {
	case g.mem:
		return Floor{Priority: Critical, Reason: RejectMemory}
	case g.cpu:
		return Floor{Priority: Default, Reason: RejectCPU}
	}
	return Floor{}
}

// FairShare decides, when a group is at its limit, which keys (tenants, clients)
// give way first without any configured quota: a key already holding its fair
// share of the slots, limit / active keys × (1 + Slack), is turned away
// (RejectFairShare) instead of queueing, so the next free slots go to keys
// holding less and one greedy key cannot starve polite ones. Below the limit
// every key may take a slot (work conserving).
//
// The zero value is ready to use; FairShare is stateless and safe for concurrent
// use.
type FairShare struct {
	// Slack lets a key hold up to (1 + Slack) × its share; default 0.
	Slack float64
}

// Share returns a key's fair share of limit slots among activeKeys keys.
func (f FairShare) Share(limit, activeKeys int) float64 {
	return float64(limit) / float64(max(1, activeKeys)) * (1 + math.Max(0, f.Slack))
}

// Allow reports whether a key holding keyInFlight slots may take (or queue for)
// one more, in a group holding groupInFlight of limit slots, with activeKeys keys
// active (holding slots or queued, the asking key included).
func (f FairShare) Allow(keyInFlight, groupInFlight, limit, activeKeys int) bool {
	if groupInFlight < limit || activeKeys <= 1 {
		return true
	}
	return float64(keyInFlight) < f.Share(limit, activeKeys)
}
