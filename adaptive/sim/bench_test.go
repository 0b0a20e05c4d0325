package sim

import (
	"testing"
	"time"
)

// hourScenario is one simulated hour of the canonical backend (C = 1000 req/s)
// at 1000 req/s offered on average: 0.8 x C and 1.2 x C alternating every 10
// minutes, so the law, the queue and the shedder all work.
func hourScenario() Scenario {
	sc := Scenario{Name: "hour", Seed: 1, Duration: time.Hour, SLO: 100 * time.Millisecond}
	for i := 0; i < 6; i++ {
		x := 0.8
		if i%2 == 1 {
			x = 1.2
		}
		sc.Load = append(sc.Load, Segment{At: time.Duration(i) * 10 * time.Minute, X: x})
	}
	return sc
}

// BenchmarkSimHour measures the wall time of one simulated hour at about
// 1,000 req/s (the target: at most 2 s per op).
func BenchmarkSimHour(b *testing.B) {
	sc := hourScenario()
	for b.Loop() {
		law, err := sc.Law("target")
		if err != nil {
			b.Fatal(err)
		}
		r, err := Run(sc, law)
		if err != nil {
			b.Fatal(err)
		}
		if p := r.Phases[0]; p.Offered < 950 || p.Offered > 1050 || p.Throughput < 850 {
			b.Fatalf("offered %.0f/s, throughput %.0f/s; want about 1000 and 900", p.Offered, p.Throughput)
		}
	}
}
