package adaptive

import "time"

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
