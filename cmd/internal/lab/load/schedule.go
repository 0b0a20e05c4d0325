// Package load is the lab's open-loop load generator: arrivals of a
// non-homogeneous Poisson process whose rate follows a schedule, each
// request fired at its intended instant whatever happened to the ones
// before it, and its latency measured from that instant, so a stalled
// server cannot hide its stall by slowing the generator down (no
// coordinated omission, after Gil Tene's "How NOT to Measure Latency").
package load

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Phase is one stretch of a Schedule: the arrival rate goes linearly from
// From to To requests per second over For. From == To is a constant rate.
type Phase struct {
	Label string        `json:"label,omitempty"` // for reports, e.g. "1.4C"
	For   time.Duration `json:"for"`
	From  float64       `json:"from"` // req/s at the phase's start
	To    float64       `json:"to"`   // req/s at its end
}

// Schedule is a sequence of phases run back to back from offset 0. Its
// methods are pure; a Schedule is safe for concurrent reads.
type Schedule []Phase

// MaxRate bounds a schedule's rates: far beyond what one generator can send.
const MaxRate = 1e6

// Validate returns every problem with s.
func (s Schedule) Validate() []error {
	var errs []error
	if len(s) == 0 {
		errs = append(errs, errors.New("load: schedule has no phases"))
	}
	for i, p := range s {
		if p.For <= 0 {
			errs = append(errs, fmt.Errorf("load: phase %d: duration must be positive, got %v", i+1, p.For))
		}
		for _, r := range []float64{p.From, p.To} {
			if !(r >= 0 && r <= MaxRate) {
				errs = append(errs, fmt.Errorf("load: phase %d: rate must be in [0,%g] req/s, got %v", i+1, float64(MaxRate), r))
			}
		}
	}
	return errs
}

// Duration is the schedule's total length.
func (s Schedule) Duration() time.Duration {
	var d time.Duration
	for _, p := range s {
		d += p.For
	}
	return d
}

// PhaseAt returns the index of the phase running at offset t and the
// offset at which it began; -1 past the end.
func (s Schedule) PhaseAt(t time.Duration) (int, time.Duration) {
	var begin time.Duration
	for i, p := range s {
		if t < begin+p.For {
			return i, begin
		}
		begin += p.For
	}
	return -1, begin
}

// RateAt is the scheduled rate at offset t, in req/s; 0 outside the schedule.
func (s Schedule) RateAt(t time.Duration) float64 {
	i, begin := s.PhaseAt(t)
	if i < 0 || t < 0 {
		return 0
	}
	p := s[i]
	return p.From + (p.To-p.From)*float64(t-begin)/float64(p.For)
}

// Expected is the expected number of arrivals in [a, b): the integral of
// the rate over that interval.
func (s Schedule) Expected(a, b time.Duration) float64 {
	var sum float64
	var begin time.Duration
	for _, p := range s {
		lo, hi := max(a, begin), min(b, begin+p.For)
		if lo < hi {
			sum += p.area((lo - begin).Seconds(), (hi - begin).Seconds())
		}
		begin += p.For
	}
	return sum
}

// area is the integral of p's rate between u0 and u1 seconds into p.
func (p Phase) area(u0, u1 float64) float64 {
	a, k := p.From, p.slope()
	return a*(u1-u0) + k/2*(u1*u1-u0*u0)
}

// slope is the rate's change per second within p.
func (p Phase) slope() float64 { return (p.To - p.From) / p.For.Seconds() }

// Next returns the offset after t at which the integral of the rate from t
// reaches e, and false if the schedule ends first. With e drawn from
// Exp(1), successive calls give the arrivals of a Poisson process of the
// scheduled rate (the time-change theorem: a unit-rate Poisson process
// read through the integrated rate).
func (s Schedule) Next(t time.Duration, e float64) (time.Duration, bool) {
	var begin time.Duration
	for _, p := range s {
		end := begin + p.For
		if t >= end {
			begin = end
			continue
		}
		u0 := max(t-begin, 0).Seconds()
		left := p.area(u0, p.For.Seconds())
		if e > left {
			e -= left
			begin = end
			continue
		}
		u1 := p.solve(u0, e)
		at := begin + time.Duration(u1*float64(time.Second))
		return min(max(at, t), end), true
	}
	return 0, false
}

// solve returns u1 >= u0 with area(u0, u1) = e, for 0 <= e <= the area left
// in the phase. It solves k/2·u1² + a·u1 - c = 0 with c = a·u0 + k/2·u0² + e
// in the form 2c / (a + √(a² + 2kc)), which is stable for either sign of k.
func (p Phase) solve(u0, e float64) float64 {
	a, k := p.From, p.slope()
	if k == 0 {
		if a == 0 {
			return u0
		}
		return u0 + e/a
	}
	c := a*u0 + k/2*u0*u0 + e
	disc := max(a*a+2*k*c, 0)
	den := a + math.Sqrt(disc)
	if den <= 0 {
		return p.For.Seconds()
	}
	return 2 * c / den
}
