package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// DistKind names a service-time distribution.
type DistKind uint8

// Service-time distributions.
const (
	// Lognormal with the given Mean and Sigma (of the underlying normal); Sigma 0
	// is a constant service time.
	Lognormal DistKind = iota
	// Exponential with the given Mean.
	Exponential
	// Bimodal: Slow with probability PSlow, else Fast, each with lognormal noise
	// of Sigma (a cache hit or miss, a fast or slow path).
	Bimodal
)

// Dist is a service-time distribution of the model backend.
type Dist struct {
	Kind  DistKind
	Mean  time.Duration // Lognormal, Exponential
	Sigma float64       // Lognormal, Bimodal
	Fast  time.Duration // Bimodal
	Slow  time.Duration // Bimodal
	PSlow float64       // Bimodal
}

// mean returns the distribution's mean in seconds.
func (d Dist) mean() float64 {
	if d.Kind == Bimodal {
		return (1-d.PSlow)*d.Fast.Seconds() + d.PSlow*d.Slow.Seconds()
	}
	return d.Mean.Seconds()
}

// draw returns one service time in nanoseconds.
func (d Dist) draw(r *rand.Rand) float64 {
	switch d.Kind {
	case Exponential:
		return r.ExpFloat64() * float64(d.Mean)
	case Bimodal:
		m := d.Fast
		if r.Float64() < d.PSlow {
			m = d.Slow
		}
		return lognormal(r, float64(m), d.Sigma)
	}
	return lognormal(r, float64(d.Mean), d.Sigma)
}

// lognormal draws from a lognormal distribution with the given mean: the
// underlying normal has μ = ln(mean) − σ²/2 and σ.
func lognormal(r *rand.Rand, mean, sigma float64) float64 {
	if sigma == 0 {
		return mean
	}
	return mean * math.Exp(sigma*r.NormFloat64()-sigma*sigma/2)
}
