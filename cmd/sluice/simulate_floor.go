//go:build !nodemo

package main

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/gate/spec"
)

// targetBelowService says why a group's latency target cannot be met by
// the described service at any load, "" when it can: a request that never
// waits takes its service time, so a target under the service time's own
// quantile is missed by that share of requests whatever the limit, and the
// law keeps cutting for it. (The embedded default's p99 of 200ms is under
// the p99 of an exponential service of mean 50ms, 230ms.)
func targetBelowService(g *spec.Group, svc *sim.Service) string {
	t := g.Targets
	if t.Latency <= 0 || g.Concurrency.FixedLimit() {
		return ""
	}
	floor, ok := serviceQuantile(svc.Dist, t.Quantile)
	if !ok || time.Duration(t.Latency) >= floor {
		return ""
	}
	q := "p" + fmt.Sprint(math.Round(t.Quantile*1e4)/1e2)
	return fmt.Sprintf("targets.latency %v at %s is below the service's own %s, %v (its service time alone, before any wait): "+
		"no limit meets it, and the law refuses requests the service could serve while it tries; set the target above %v, or the quantile lower",
		t.Latency, q, q, ms(floor), ms(floor))
}

// serviceQuantile is the q-quantile of the service times of d, read as
// package sim draws them (Dist, in adaptive/sim/dist.go): exponential of
// mean Mean; lognormal of mean Mean whose underlying normal has σ = Sigma
// (μ = ln Mean − σ²/2), Sigma 0 a constant; bimodal, Fast or (with
// probability PSlow) Slow, each with that lognormal noise.
// TestServiceQuantile holds it to the simulator's own latencies.
func serviceQuantile(d sim.Dist, q float64) (time.Duration, bool) {
	if q <= 0 || q >= 1 {
		return 0, false
	}
	logn := func(mean time.Duration, x float64) float64 { // P(T ≤ x) of a lognormal of that mean
		if d.Sigma == 0 {
			if x >= float64(mean) {
				return 1
			}
			return 0
		}
		mu := math.Log(float64(mean)) - d.Sigma*d.Sigma/2
		return 0.5 * math.Erfc(-(math.Log(x)-mu)/(d.Sigma*math.Sqrt2))
	}
	var cdf func(x float64) float64
	hi := float64(d.Mean)
	switch d.Kind {
	case sim.Exponential:
		return time.Duration(-math.Log1p(-q) * float64(d.Mean)), d.Mean > 0
	case sim.Bimodal:
		cdf = func(x float64) float64 { return (1-d.PSlow)*logn(d.Fast, x) + d.PSlow*logn(d.Slow, x) }
		hi = float64(max(d.Fast, d.Slow))
	default:
		cdf = func(x float64) float64 { return logn(d.Mean, x) }
	}
	if hi <= 0 {
		return 0, false
	}
	for cdf(hi) < q { // the quantile is below hi
		hi *= 2
	}
	lo := 0.0
	for range 100 { // bisection to well under a nanosecond's worth
		mid := (lo + hi) / 2
		if cdf(mid) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return time.Duration(hi), true
}
