package adaptive

import (
	"math"
	"time"
)

// resource indexes the resource targets of Target.
type resource uint8

const (
	resCPU resource = iota
	resMemory
	resPressure
	numResources
)

// resourceOf maps a resource target's signals to the resource.
func resourceOf(s Signal) (resource, bool) {
	switch s {
	case SignalCPU:
		return resCPU, true
	case SignalMemory, SignalMemoryBudget:
		return resMemory, true
	case SignalCPUPressure:
		return resPressure, true
	}
	return 0, false
}

// unmovedRetry is how long a resource found not to move with the limit is
// ignored while it stays over its aim, before it is judged afresh: a
// neighbour's load may end without the reading falling under the aim (the
// service's own work may keep it there), and then the target should guard
// again. Judging again costs one episode of cuts, which are restored if the
// resource still does not move.
const unmovedRetry = 2 * time.Minute

// resourceState is what Target knows of one resource beyond an interval.
type resourceState struct {
	// unmoved: cutting did not move the resource; since when, and its last
	// reading.
	unmoved bool
	since   time.Time
	value   float64
}

// Unmoved is a set of resource signals a Target law found its limit does not
// move and therefore ignores (see the package doc, "The target law").
// The zero value is the empty set.
type Unmoved uint8

// The members of Unmoved.
const (
	UnmovedCPU Unmoved = 1 << iota
	UnmovedMemory
	UnmovedCPUPressure
)

// UnmovedMembers lists the members of Unmoved, in the order String names them.
var UnmovedMembers = [...]Unmoved{UnmovedCPU, UnmovedMemory, UnmovedCPUPressure}

var unmovedNames = [...]string{"cpu", "memory", "cpu_pressure"}

// String names the members, space separated ("cpu memory"), "" for none: the
// names of the targets in the config ([group.targets]).
func (u Unmoved) String() string {
	var b []byte
	for i, m := range UnmovedMembers {
		if u.Has(m) {
			if len(b) > 0 {
				b = append(b, ' ')
			}
			b = append(b, unmovedNames[i]...)
		}
	}
	return string(b)
}

// Has reports whether u holds every member of x.
func (u Unmoved) Has(x Unmoved) bool { return u&x == x }

// Mask returns s with the signals of u unknown: what a ResourceGuard should
// see, since shedding priorities cannot move them either.
func (u Unmoved) Mask(s Sample) Sample {
	if u.Has(UnmovedCPU) {
		s.CPUKnown = false
	}
	if u.Has(UnmovedMemory) {
		s.MemoryKnown = false
	}
	if u.Has(UnmovedCPUPressure) {
		s.CPUPressureKnown = false
	}
	return s
}

// Unmoved returns the resources the law ignores now.
func (t *Target) Unmoved() Unmoved {
	var u Unmoved
	for r := range t.res {
		if t.res[r].unmoved {
			u |= 1 << r
		}
	}
	return u
}

// target returns the operator's target for r, 0 when off.
func (t *Target) target(r resource) float64 {
	switch r {
	case resCPU:
		return t.p.CPU
	case resMemory:
		return t.p.Memory
	}
	return t.p.CPUPressure
}

var unmovedSignals = [numResources]Signal{SignalCPUUnmoved, SignalMemoryUnmoved, SignalPressureUnmoved}

// unmovedReason returns the reason of the first resource the law ignores
// while it is over its target.
func (t *Target) unmovedReason() (Reason, bool) {
	for r := range t.res {
		st := &t.res[r]
		if target := t.target(resource(r)); st.unmoved && st.value > target {
			return Reason{Signal: unmovedSignals[r], Observed: st.value, Bound: target}, true
		}
	}
	return Reason{}, false
}

// watch records reading u of r and reports whether the law acts on r this
// interval: not while r is ignored, unless u is back under aim or the
// resource has been ignored for unmovedRetry, which ends its being ignored.
func (t *Target) watch(pr *proposal, r resource, u, aim float64, now time.Time) bool {
	pr.u[r] = u
	st := &t.res[r]
	if !st.unmoved {
		return true
	}
	st.value = u
	if u <= aim || now.Sub(st.since) >= unmovedRetry {
		*st = resourceState{}
		return true
	}
	return false
}

// cpuJudgeShare: cuts CPU drove are judged once the throughput, which CPU
// follows, has fallen to this share of where it was: by 15 %.
const cpuJudgeShare = 0.85

// minReading is the least resource reading (a utilisation or a share of
// time, in [0, 1]) a proportional estimate divides by, so that an idle
// resource proposes a large limit rather than an infinite one.
const minReading = 0.01

// pressureLoss is the fall of throughput after pressure cuts that shows the
// pressure did not come from the service's own concurrency.
const pressureLoss = 0.1

// reading returns the current reading of r.
func reading(r resource, s *Sample) (float64, bool) {
	switch r {
	case resCPU:
		return s.cpu()
	case resMemory:
		return s.memory()
	}
	return s.cpuPressure()
}

// judge decides whether the cuts r drove moved it (see the package doc). It
// waits until the in-flight count has fallen by a fifth (judgeShare) from
// r's snapshot and the driver of r (throughput for CPU, work held for
// memory, the in-flight count for pressure) has fallen enough to compare
// with; then, from the part of r no limit could move (unmovable), it either
// forgets the
// snapshot (r moves with the limit: keep acting on it) or marks r ignored and
// returns the reason to restore the limit.
func (t *Target) judge(r resource, s *Sample, n, x float64) (Reason, bool) {
	sn := &t.cut.res[r]
	if !sn.on || n > judgeShare*sn.n {
		return Reason{}, false
	}
	u, ok := reading(r, s)
	if !ok {
		return Reason{}, false
	}
	v0, v, shown := sn.n, n, 1.0
	switch r {
	case resCPU:
		if x > cpuJudgeShare*sn.x {
			return Reason{}, false // the throughput, which CPU follows, has not fallen yet
		}
		v0, v = sn.x, x
	case resMemory:
		v0, v = sn.w, float64(max(0, s.InFlight)+max(0, s.QueueLength))
		if v > judgeShare*v0 {
			return Reason{}, false
		}
	case resPressure:
		e := s.Now.Sub(sn.at)
		if e < t.p.PressureWindow/2 {
			return Reason{}, false // the average cannot show the cut yet
		}
		shown = averaged(e, t.p.PressureWindow)
	}
	sn.on = false
	// Pressure is waiting for a core: when it comes from the service's own
	// runnable work, fewer requests in flight wait less and complete as many;
	// when a competitor for the cores causes it, pressure falls only as the
	// service runs less, and throughput falls with it.
	lost := r == resPressure && x < (1-pressureLoss)*sn.x
	if !lost && unmovable(sn.u, u, v0, v, shown) <= t.target(r) {
		return Reason{}, false
	}
	t.res[r] = resourceState{unmoved: true, since: s.Now, value: u}
	return Reason{Signal: unmovedSignals[r], Observed: u, Bound: t.target(r)}, true
}

// unmovable is the part of a resource reading the limit cannot move: the
// reading at no work at all, extrapolated from a fall from u0 to u while its
// driver fell from v0 to v (proportional control assumes all of u0 moves,
// so a resource that moves with its driver extrapolates to 0, one that does
// not move at all stays at u). shown is the share of the fall an average
// over a window has had time to show (1 for a reading of the interval).
func unmovable(u0, u, v0, v, shown float64) float64 {
	if !(v0 > v) || !(shown > 0) {
		return u
	}
	return u0 - (u0-u)/shown*v0/(v0-v)
}

// pressurePending reports whether CPU pressure snapshot sn is still within
// the window its judgement may take.
func (t *Target) pressurePending(sn cutSnapshot, now time.Time) bool {
	return sn.on && now.Sub(sn.at) <= t.p.PressureWindow
}

// averaged is the share of a step change that an exponential average over
// window shows e after the step, when the average is updated every window/5
// (PSI's 2 s for avg10): the last update may be that much stale.
func averaged(e, window time.Duration) float64 {
	seen := max(0, e-window/5)
	return 1 - math.Exp(-seen.Seconds()/window.Seconds())
}

// aim returns the level the law aims r at: target × (1 − Headroom/2) for
// memory, which must never pass its target; target × (1 − Headroom/5) for CPU
// and CPU pressure, averages that may touch their targets now and then, so
// that a CPU target does not leave more than a few per cent of the CPU it
// allows unused.
func (t *Target) aim(r resource) float64 {
	if r == resMemory {
		return t.p.Memory * (1 - t.p.Headroom/2)
	}
	return t.target(r) * (1 - t.p.Headroom/5)
}

// observeResources records the CPU, memory and CPU pressure readings (the
// memory model learns, an ignored resource may be judged afresh, see watch)
// and adds their targets' proposals.
func (t *Target) observeResources(pr *proposal, s *Sample, x, n, mean float64) {
	if u, ok := s.cpu(); ok && t.p.CPU > 0 && t.watch(pr, resCPU, u, t.aim(resCPU), s.Now) {
		aim := t.aim(resCPU)
		why := Reason{Signal: SignalCPU, Observed: u, Bound: t.p.CPU}
		switch {
		case u > t.p.CPU:
			w := mean
			if t.base.v > 0 {
				w = min(mean, t.base.v*(1+t.p.Tolerance))
			}
			pr.violate(x*aim/u*w, x*aim/u, why)
		case u < aim:
			pr.allow(n*aim/max(u, minReading), why)
		default:
			pr.allow(float64(t.limit), why)
		}
	}
	if u, ok := s.memory(); ok && t.p.Memory > 0 {
		held := float64(max(0, s.InFlight) + max(0, s.QueueLength))
		t.mem.add(held, u)
		if aim := t.aim(resMemory); t.watch(pr, resMemory, u, aim, s.Now) {
			t.proposeMemory(pr, s, u, aim, held, x)
		}
	}
	if p, ok := s.cpuPressure(); ok && t.p.CPUPressure > 0 {
		target, aim := t.p.CPUPressure, t.aim(resPressure)
		if !t.watch(pr, resPressure, p, aim, s.Now) {
			return
		}
		why := Reason{Signal: SignalCPUPressure, Observed: p, Bound: target}
		switch {
		case p > target && s.Now.Sub(t.pressureCut) < t.p.PressureWindow/4:
			// The last pressure cut cannot show in the average yet.
			pr.allow(float64(t.limit), why)
		case p > target:
			pr.violate(n*aim/p, x*aim/p, why)
		case p < aim:
			pr.allow(n*aim/max(p, minReading), why)
		default:
			pr.allow(float64(t.limit), why)
		}
	}
}

// proposeMemory adds the memory target's proposal for reading u with held work held.
func (t *Target) proposeMemory(pr *proposal, s *Sample, u, aim, held, x float64) {
	lim := float64(t.limit)
	if slots, proj, ok := t.mem.budget(aim, u, held, t.limit, max(0, s.QueueCapacity)); ok {
		why := Reason{Signal: SignalMemoryBudget, Observed: proj, Bound: t.p.Memory}
		switch {
		case u > t.p.Memory:
			pr.severe = true // memory over its target must not wait for a second look
			pr.violate(min(slots, lim*aim/u), x*aim/u, Reason{Signal: SignalMemory, Observed: u, Bound: t.p.Memory})
		case proj > t.p.Memory:
			pr.violate(slots, x*aim/proj, why)
		case proj < aim:
			pr.allow(slots, why)
		default:
			pr.allow(lim, why)
		}
		return
	}
	why := Reason{Signal: SignalMemory, Observed: u, Bound: t.p.Memory}
	switch {
	case u > t.p.Memory:
		pr.severe = true
		pr.violate(lim*aim/u, x*aim/u, why)
	case u < aim:
		pr.allow(lim*aim/max(u, minReading), why)
	default:
		pr.allow(lim, why)
	}
}
