package sim_test

import (
	"fmt"

	"github.com/sluicehq/sluice/adaptive/sim"
)

// Try a law offline: a backend of capacity 1000 req/s offered 3x that, with a
// p99 SLO of 100 ms.
func ExampleRun() {
	sc, err := sim.ParseScenario([]byte(`# 3x overload
seed 1
duration 20s
slo 100ms
service workers=10 dist=lognormal mean=10ms sigma=0.5
load at=0s x=3
phase warmup at=0s
phase overload at=5s
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	law, err := sc.Law("target")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := sim.Run(sc, law)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := r.Phase("overload")
	w := r.Window(p.Start, p.End)
	fmt.Printf("capacity %.0f req/s\n", r.Capacity)
	fmt.Printf("goodput at least 90%% of capacity: %v\n", p.Goodput >= 0.9*r.Capacity)
	fmt.Printf("p99 within the SLO: %v\n", w.LateRatio <= 0.01)
	// Output:
	// capacity 1000 req/s
	// goodput at least 90% of capacity: true
	// p99 within the SLO: true
}
