package sim

import (
	"fmt"

	"github.com/sluicehq/sluice/adaptive"
)

// LawNames lists the laws Scenario.Law builds, in the order reports compare
// them: the registry's (adaptive.Laws).
var LawNames = adaptive.LawNames()

// Law builds the named law (one of LawNames, or "none": a Fixed limit at
// 1<<20, i.e. no limit) configured from the scenario as an operator would
// configure it for this service: every law gets the scenario's Bounds and
// targets, as a group gives them (adaptive.LawSettings); a law with a
// constant limit (Fixed) holds Static, a limit hand-tuned at nominal
// capacity; a law that manages a token rate gets the gate's rate; CPU
// pressure is averaged as Service.PSI says.
func (sc Scenario) Law(name string) (adaptive.Law, error) {
	sc = sc.withDefaults()
	if name == noLaw {
		return adaptive.NewFixed(adaptive.FixedParams{Bounds: adaptive.Bounds{Min: 1, Max: noLimit, Initial: noLimit}})
	}
	k, ok := adaptive.LookupLaw(name)
	if !ok {
		return nil, fmt.Errorf("sim: unknown law %q", name)
	}
	s := adaptive.LawSettings{Bounds: sc.Bounds, Latency: sc.Targets.Latency,
		Quantile: sc.Targets.Quantile, CPU: sc.Targets.CPU, Memory: sc.Targets.Memory,
		CPUPressure: sc.Targets.CPUPressure}
	if k.FixedLimit {
		s.Limit = sc.Static
	}
	if k.ManagesRate {
		s.Rate = adaptive.ManagedRate(sc.Gate.Rate, 0)
	}
	if sc.Service.PSI == PSIInterval {
		s.PressureWindow = sc.Interval
	}
	return k.New(s)
}

// noLaw is the name of no limit at all, and noLimit that limit.
const (
	noLaw   = "none"
	noLimit = 1 << 20
)

// LawName returns the registry's name of l's law ("none" for no limit), or
// its Go type for a law of no registered kind.
func LawName(l adaptive.Law) string {
	if _, ok := l.(*adaptive.Fixed); ok && l.Limit() >= noLimit {
		return noLaw
	}
	if name := adaptive.LawName(l); name != "" {
		return name
	}
	return fmt.Sprintf("%T", l)
}
