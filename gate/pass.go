package gate

import "time"

// Waited returns how long the request waited between arriving at the gate
// and being admitted, in the queue or paced by a leaky_queue, rounded down
// to the microsecond; 0 for the zero Pass. A caller that read the clock
// before EnterClass knows the admission instant from it (before + Waited,
// within a microsecond; Admitted gives it exactly) without reading the
// clock again.
func (p *Pass) Waited() time.Duration { return p.waited() }

// Admitted returns the instant the request was admitted (its wait, if any,
// over), on the gate's clock (Params.Clock; the real one by default): a
// caller that times what follows on the same clock needs no reading of its
// own at admission. The zero time for the zero Pass.
func (p *Pass) Admitted() time.Time {
	if p.g == nil {
		return time.Time{}
	}
	return p.g.gate.at(p.t0)
}

// HoldsSlot reports whether the request holds a slot of its group's
// concurrency limit, given back at Done: false for the zero Pass and for a
// request a shadowed group admitted (its model of enforcement takes no real
// slot). A proxy holds an abandoned request's slot until the upstream's work
// ends only where there is one to hold; elsewhere it cancels the upstream's
// work at once, as the caller's going would without it.
func (p *Pass) HoldsSlot() bool { return p.g != nil && !p.how.shadow.slotless }
