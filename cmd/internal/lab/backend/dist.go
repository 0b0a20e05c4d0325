package backend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// DistKind names a service-time distribution.
type DistKind string

// The service-time distributions the backend offers.
const (
	// Const: every request takes exactly Mean.
	Const DistKind = "const"
	// Exponential with the given Mean (coefficient of variation 1).
	Exponential DistKind = "exp"
	// LogNormal with the given Mean and Sigma, the standard deviation of the
	// underlying normal; mu = ln(Mean) - Sigma²/2 so the mean is Mean.
	LogNormal DistKind = "lognormal"
	// Bimodal: a fraction SlowFraction of requests takes Slow, the rest Mean
	// (both exponential around their mode's mean). Its overall mean is
	// (1-SlowFraction)·Mean + SlowFraction·Slow.
	Bimodal DistKind = "bimodal"
)

// Dist is a service-time distribution. The zero value is invalid; build one
// with ParseDist or a literal and check it with Validate.
//
// String form (flags and scenario files):
//
//	const:40ms
//	exp:40ms
//	lognormal:40ms:0.8       mean, sigma of the underlying normal
//	bimodal:20ms:200ms:0.1   fast mode's mean, slow mode's mean, slow fraction
type Dist struct {
	Kind         DistKind      `json:"kind"`
	Mean         time.Duration `json:"mean"`                    // mean (const, exp, lognormal) or fast mode's mean (bimodal)
	Sigma        float64       `json:"sigma,omitempty"`         // lognormal only
	Slow         time.Duration `json:"slow,omitempty"`          // bimodal only: the slow mode's mean
	SlowFraction float64       `json:"slow_fraction,omitempty"` // bimodal only: share of requests in the slow mode, in (0,1)
}

// ParseDist parses the string form documented on Dist.
func ParseDist(s string) (Dist, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	d := Dist{Kind: DistKind(parts[0])}
	want := map[DistKind]int{Const: 2, Exponential: 2, LogNormal: 3, Bimodal: 4}[d.Kind]
	if want == 0 {
		return Dist{}, fmt.Errorf("backend: service %q: unknown distribution %q (want const, exp, lognormal or bimodal)", s, parts[0])
	}
	if len(parts) != want {
		return Dist{}, fmt.Errorf("backend: service %q: %s takes %d fields separated by ':', got %d", s, d.Kind, want, len(parts))
	}
	var err error
	if d.Mean, err = time.ParseDuration(parts[1]); err != nil {
		return Dist{}, fmt.Errorf("backend: service %q: mean: %v", s, err)
	}
	switch d.Kind {
	case LogNormal:
		if d.Sigma, err = strconv.ParseFloat(parts[2], 64); err != nil {
			return Dist{}, fmt.Errorf("backend: service %q: sigma: %v", s, err)
		}
	case Bimodal:
		if d.Slow, err = time.ParseDuration(parts[2]); err != nil {
			return Dist{}, fmt.Errorf("backend: service %q: slow mean: %v", s, err)
		}
		if d.SlowFraction, err = strconv.ParseFloat(parts[3], 64); err != nil {
			return Dist{}, fmt.Errorf("backend: service %q: slow fraction: %v", s, err)
		}
	}
	if errs := d.Validate(); len(errs) > 0 {
		return Dist{}, fmt.Errorf("backend: service %q: %v", s, errs[0])
	}
	return d, nil
}

// Validate returns every problem with d.
func (d Dist) Validate() []error {
	var errs []error
	switch d.Kind {
	case Const, Exponential, LogNormal, Bimodal:
	default:
		errs = append(errs, fmt.Errorf("backend: unknown distribution %q", d.Kind))
	}
	if d.Mean <= 0 {
		errs = append(errs, fmt.Errorf("backend: service mean must be positive, got %v", d.Mean))
	}
	if d.Kind == LogNormal && !(d.Sigma >= 0 && d.Sigma <= 4) {
		errs = append(errs, fmt.Errorf("backend: lognormal sigma must be in [0,4], got %v", d.Sigma))
	}
	if d.Kind == Bimodal {
		if d.Slow <= 0 {
			errs = append(errs, fmt.Errorf("backend: bimodal slow mean must be positive, got %v", d.Slow))
		}
		if !(d.SlowFraction > 0 && d.SlowFraction < 1) {
			errs = append(errs, fmt.Errorf("backend: bimodal slow fraction must be in (0,1), got %v", d.SlowFraction))
		}
	}
	return errs
}

// String returns the form ParseDist reads.
func (d Dist) String() string {
	switch d.Kind {
	case LogNormal:
		return fmt.Sprintf("%s:%v:%s", d.Kind, d.Mean, strconv.FormatFloat(d.Sigma, 'g', -1, 64))
	case Bimodal:
		return fmt.Sprintf("%s:%v:%v:%s", d.Kind, d.Mean, d.Slow, strconv.FormatFloat(d.SlowFraction, 'g', -1, 64))
	default:
		return fmt.Sprintf("%s:%v", d.Kind, d.Mean)
	}
}

// MeanTime is the distribution's mean service time.
func (d Dist) MeanTime() time.Duration {
	if d.Kind == Bimodal {
		return time.Duration((1-d.SlowFraction)*float64(d.Mean) + d.SlowFraction*float64(d.Slow))
	}
	return d.Mean
}

// Sample draws one service time from r; r nil means the global source
// (safe for concurrent use). A *rand.Rand is not safe for concurrent use.
func (d Dist) Sample(r *rand.Rand) time.Duration {
	exp, norm, unif := rand.ExpFloat64, rand.NormFloat64, rand.Float64
	if r != nil {
		exp, norm, unif = r.ExpFloat64, r.NormFloat64, r.Float64
	}
	mean := float64(d.Mean)
	switch d.Kind {
	case Exponential:
		return time.Duration(mean * exp())
	case LogNormal:
		mu := math.Log(mean) - d.Sigma*d.Sigma/2
		return time.Duration(math.Exp(mu + d.Sigma*norm()))
	case Bimodal:
		if unif() < d.SlowFraction {
			mean = float64(d.Slow)
		}
		return time.Duration(mean * exp())
	default:
		return d.Mean
	}
}
