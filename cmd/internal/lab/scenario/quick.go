package scenario

import (
	"slices"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
	"github.com/sluicehq/sluice/cmd/internal/lab/load"
)

// Shortened returns the -quick version of s: every phase (or sweep step)
// and the client timeout last Quick times as long, but at least a second
// (or as long as before, if that was shorter), and each backend change
// moves with the phase it falls in, so it happens at the same point of the
// load pattern.
func (s *Scenario) Shortened() *Scenario {
	q := s.Quick
	if q == 0 {
		q = DefaultQuick
	}
	scale := func(d Duration) Duration {
		v := time.Duration(float64(d) * q)
		return Duration(max(v, min(time.Duration(d), time.Second)))
	}
	old := s.Schedule()
	c := *s
	if c.Load.Timeout != 0 {
		c.Load.Timeout = scale(c.Load.Timeout)
	}
	c.Load.Phases = slices.Clone(s.Load.Phases)
	for i := range c.Load.Phases {
		c.Load.Phases[i].For = scale(c.Load.Phases[i].For)
	}
	if s.Load.Sweep != nil {
		sw := *s.Load.Sweep
		sw.Each = scale(sw.Each)
		c.Load.Sweep = &sw
	}
	shortened := c.Schedule()
	c.Backend.Changes = nil
	for _, cs := range s.Backend.Changes {
		ch, err := backend.ParseChange(cs)
		if err != nil {
			c.Backend.Changes = append(c.Backend.Changes, cs) // validated already; keep as is
			continue
		}
		ch.At = warp(old, shortened, ch.At, q)
		c.Backend.Changes = append(c.Backend.Changes, ch.String())
	}
	return &c
}

// warp maps offset t of schedule from to the same relative point of the
// matching phase of schedule to (same number of phases); past the end it
// scales the overshoot by q.
func warp(from, to load.Schedule, t time.Duration, q float64) time.Duration {
	var b0, b1 time.Duration
	for i, p := range from {
		if t < b0+p.For {
			frac := float64(t-b0) / float64(p.For)
			return b1 + time.Duration(frac*float64(to[i].For)).Round(time.Millisecond)
		}
		b0 += p.For
		b1 += to[i].For
	}
	return b1 + time.Duration(float64(t-b0)*q).Round(time.Millisecond)
}
