package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// Segment is one stretch of the open-loop load profile, from At until the next
// segment (or the end of the run). Load is in multiples of the backend's
// capacity C, so 1.5 means 1.5 × C new requests per second.
//
//   - constant: X
//   - ramp: From at At, linearly to To at the next segment's start
//   - sine: X + Amp × sin(2π (t − At) / Period)
//
// A step is two constant segments; a spike is a short constant segment between
// two others.
type Segment struct {
	At     time.Duration
	X      float64
	From   float64 // ramp, when Ramp
	To     float64
	Ramp   bool
	Amp    float64 // sine, when Period > 0
	Period time.Duration
}

// at returns the load multiple at offset t into a segment of length span.
func (s *Segment) at(t, span time.Duration) float64 {
	switch {
	case s.Ramp:
		if span <= 0 {
			return s.To
		}
		return s.From + (s.To-s.From)*float64(t)/float64(span)
	case s.Period > 0:
		return s.X + s.Amp*math.Sin(2*math.Pi*float64(t)/float64(s.Period))
	}
	return s.X
}

// peak returns the segment's highest load multiple.
func (s *Segment) peak() float64 {
	switch {
	case s.Ramp:
		return math.Max(s.From, s.To)
	case s.Period > 0:
		return s.X + math.Abs(s.Amp)
	}
	return s.X
}

// arrivals generates a non-homogeneous Poisson process following the profile,
// by thinning (Lewis & Shedler 1979) within each segment: candidates at the
// segment's peak rate, each kept with probability rate(t)/peak. Crossing a
// segment boundary restarts at the boundary, which is exact for a Poisson process.
type arrivals struct {
	segs     []Segment
	end      time.Duration
	capacity float64 // requests per second at load 1
	idx      int
	rng      *rand.Rand
}

// segEnd returns where segment i ends.
func (a *arrivals) segEnd(i int) time.Duration {
	if i+1 < len(a.segs) {
		return a.segs[i+1].At
	}
	return a.end
}

// next returns the time of the first arrival after t, or false past the end.
func (a *arrivals) next(t time.Duration) (time.Duration, bool) {
	for a.idx < len(a.segs) {
		s := &a.segs[a.idx]
		end := a.segEnd(a.idx)
		if t < s.At {
			t = s.At
		}
		peak := s.peak() * a.capacity
		if peak <= 0 || t >= end {
			t = end
			a.idx++
			continue
		}
		t += time.Duration(a.rng.ExpFloat64() / peak * float64(time.Second))
		if t >= end {
			t = end
			a.idx++
			continue
		}
		if a.rng.Float64()*peak <= s.at(t-s.At, end-s.At)*a.capacity {
			return t, true
		}
	}
	return 0, false
}
