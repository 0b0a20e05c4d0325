package load

import (
	"math/rand/v2"
	"time"
)

// Arrivals yields the intended send offsets of a Poisson process that
// follows a Schedule. Not safe for concurrent use.
type Arrivals struct {
	s   Schedule
	rng *rand.Rand
	t   time.Duration
}

// NewArrivals returns the arrivals of s drawn from rng.
func NewArrivals(s Schedule, rng *rand.Rand) *Arrivals {
	return &Arrivals{s: s, rng: rng}
}

// Next returns the next arrival's offset from the schedule's start, and
// false once the schedule has ended.
func (a *Arrivals) Next() (time.Duration, bool) {
	t, ok := a.s.Next(a.t, a.rng.ExpFloat64())
	if ok {
		a.t = t
	}
	return t, ok
}
