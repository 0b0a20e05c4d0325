package gate

import "time"

// Waited returns how long the request waited between arriving at the gate
// and being admitted: in the queue, or paced by a leaky_queue; 0 for the
// zero Pass. A caller that read the clock before EnterClass knows the
// admission instant from it (before + Waited) without reading the clock
// again.
func (p *Pass) Waited() time.Duration { return p.waited() }
