package sim

import (
	"fmt"

	"github.com/sluicehq/sluice/adaptive"
)

// LawNames lists the laws Scenario.Law builds, in the order reports compare them.
var LawNames = []string{"fixed", "aimd", "vegas", "gradient", "target"}

// Law builds the named law ("fixed", "aimd", "vegas", "gradient", "target", or
// "none": a Fixed limit at 1<<20, i.e. no limit) configured from the scenario as an
// operator would configure it for this service: every law gets the scenario's
// Bounds; Fixed holds Static (a limit hand-tuned at nominal capacity); AIMD
// backs off above the latency target; Target gets every target and the gate's
// managed rate (and CPU pressure averaged as Service.PSI says).
func (sc Scenario) Law(name string) (adaptive.Law, error) {
	sc = sc.withDefaults()
	b := sc.Bounds
	switch name {
	case "none":
		return adaptive.NewFixed(adaptive.FixedParams{Bounds: adaptive.Bounds{Min: 1, Max: 1 << 20, Initial: 1 << 20}})
	case "fixed":
		b.Initial = sc.Static
		if b.Max != 0 && b.Max < sc.Static {
			b.Max = sc.Static
		}
		return adaptive.NewFixed(adaptive.FixedParams{Bounds: b})
	case "aimd":
		return adaptive.NewAIMD(adaptive.AIMDParams{Bounds: b, Latency: sc.Targets.Latency, Quantile: sc.Targets.Quantile})
	case "vegas":
		return adaptive.NewVegas(adaptive.VegasParams{Bounds: b})
	case "gradient":
		return adaptive.NewGradient(adaptive.GradientParams{Bounds: b})
	case "target":
		p := adaptive.TargetParams{Bounds: b, Latency: sc.Targets.Latency,
			Quantile: sc.Targets.Quantile, CPU: sc.Targets.CPU, Memory: sc.Targets.Memory,
			CPUPressure: sc.Targets.CPUPressure, Rate: adaptive.RateParams{Initial: sc.Gate.Rate}}
		if sc.Service.PSI == PSIInterval {
			p.PressureWindow = sc.Interval
		}
		return adaptive.NewTarget(p)
	}
	return nil, fmt.Errorf("sim: unknown law %q", name)
}

// LawName returns the short name of one of the adaptive package's laws, or its
// Go type for others.
func LawName(l adaptive.Law) string {
	switch x := l.(type) {
	case *adaptive.Fixed:
		if x.Limit() >= 1<<20 {
			return "none"
		}
		return "fixed"
	case *adaptive.AIMD:
		return "aimd"
	case *adaptive.Vegas:
		return "vegas"
	case *adaptive.Gradient:
		return "gradient"
	case *adaptive.Target:
		return "target"
	}
	return fmt.Sprintf("%T", l)
}
