package sim

import (
	"fmt"
	"math"
	"time"
)

// Host is the machine the proxy and the load's clients share with the
// service, when they share one (Cores > 0), as the lab's do on its two
// cores: every request costs CPU there at each hop, the trip of a request
// that is served takes a fixed time besides (Wake), and while the cores
// are busy each hop waits its turn.
//
// The model keeps the service's workers as they are: a worker is held for
// the service time only. A served request's answer then takes the trip
// back, holding its gate slot but no worker (as the proxy holds a slot
// until the service's answer is read): Wake plus the CPU of the proxy's
// forwarding and of the service's own handling, stretched by 1/(1 − ρ),
// ρ the cores' utilisation in the last control interval (at most 0.9),
// plus the wait for what the cores could not do in earlier intervals
// (their backlog, when the demand was more than the cores). The client's
// own CPU (sending, reading the answer) is stretched alike and counts in
// the latency end to end, not in the gate slot. A refusal costs the
// proxy's Refuse and the client's Send; it is answered at once. A
// CPU-bound service's own work (Service.Cores) is modelled apart and not
// counted in the host's demand.
type Host struct {
	// Cores is how many CPUs the service, the proxy and the clients
	// share; 0: they do not share (nothing of this is modelled).
	Cores float64
	// Send is the clients' CPU per attempt, Forward the proxy's per
	// admitted request, Refuse the proxy's per refusal, Handle the
	// service's per request beside its service time.
	Send, Forward, Refuse, Handle time.Duration
	// Wake is the time a served request's trip takes on idle cores beside
	// its service: loopback hops, the service's timer waking late.
	Wake time.Duration
}

// On reports whether the host is modelled.
func (h Host) On() bool { return h.Cores > 0 }

// Validate reports what is wrong with h.
func (h Host) Validate() error {
	switch {
	case !(h.Cores >= 0) || h.Cores > 1024:
		return fmt.Errorf("sim: host cores %v must be in [0, 1024]", h.Cores)
	case h.Send < 0 || h.Forward < 0 || h.Refuse < 0 || h.Handle < 0 || h.Wake < 0:
		return fmt.Errorf("sim: host costs %+v must not be negative", h)
	}
	return nil
}

// maxUtil caps the utilisation a hop is stretched by: beyond it the cores'
// backlog, not the stretch, says how late a hop is.
const maxUtil = 0.9

// hostState is the host model's account.
type hostState struct {
	demand  float64 // CPU ns asked of the cores in the current interval
	stretch float64 // 1 / (1 − ρ) of the last interval
	backlog float64 // CPU ns the cores are behind
	util    float64 // ρ of the last interval, for the report
}

// hostCharge counts CPU ns asked of the host.
func (e *engine) hostCharge(d time.Duration) {
	e.h.demand += float64(d)
}

// hostTick ends an interval of the host: its utilisation and backlog.
func (e *engine) hostTick() {
	h := &e.h
	capacity := e.sc.Host.Cores * float64(e.sc.Interval)
	h.util = h.demand / capacity
	h.backlog = math.Max(0, h.backlog+h.demand-capacity)
	h.stretch = 1 / (1 - math.Min(h.util, maxUtil))
	h.demand = 0
}

// tripBack is how long a served request's answer takes to reach the proxy
// after its worker is done, in ns.
func (e *engine) tripBack() int64 {
	hs := &e.sc.Host
	return int64(float64(hs.Wake) + float64(hs.Forward+hs.Handle)*e.h.stretch + e.h.backlog/hs.Cores)
}

// clientTrip is how long the client's own hops add to a request's latency
// end to end, in ns.
func (e *engine) clientTrip() int64 {
	return int64(float64(e.sc.Host.Send) * e.h.stretch)
}
