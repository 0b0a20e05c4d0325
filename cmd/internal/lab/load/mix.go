package load

import (
	"fmt"
	"math/rand/v2"
	"regexp"
)

// Share is one class of a Mix and its weight.
type Share struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
}

// Mix assigns each request a class (a tenant, a priority) at random in
// proportion to the weights. A nil Mix assigns none.
type Mix []Share

// headerValue is what a class name may be: it goes into a request header.
var headerValue = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Validate returns every problem with m; what names it in errors.
func (m Mix) Validate(what string) []error {
	var errs []error
	seen := map[string]bool{}
	for _, s := range m {
		if !headerValue.MatchString(s.Name) {
			errs = append(errs, fmt.Errorf("load: %s %q: name must be 1-64 of A-Z a-z 0-9 . _ -", what, s.Name))
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("load: %s %q listed twice", what, s.Name))
		}
		seen[s.Name] = true
		if !(s.Weight > 0 && s.Weight < 1e9) {
			errs = append(errs, fmt.Errorf("load: %s %q: weight must be positive, got %v", what, s.Name, s.Weight))
		}
	}
	return errs
}

// Fraction is class i's share of the requests.
func (m Mix) Fraction(i int) float64 {
	var total float64
	for _, s := range m {
		total += s.Weight
	}
	return m[i].Weight / total
}

// pick returns the index of a class drawn from rng, or -1 for an empty mix.
func (m Mix) pick(rng *rand.Rand) int {
	if len(m) == 0 {
		return -1
	}
	var total float64
	for _, s := range m {
		total += s.Weight
	}
	x := rng.Float64() * total
	for i, s := range m {
		if x < s.Weight {
			return i
		}
		x -= s.Weight
	}
	return len(m) - 1
}
