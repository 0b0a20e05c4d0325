package probe_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/probe"
)

// The gate records each finished request on the hot path; the control loop
// snapshots the window once per tick, passing the time in.
func ExampleRecorder() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lat, err := probe.NewRecorder(probe.RecorderParams{Window: 5 * time.Second, Start: start})
	if err != nil {
		panic(err)
	}

	// Hot path, from any goroutine.
	for i := 1; i <= 1000; i++ {
		lat.ObserveInflight(i % 40)
		lat.Record(time.Duration(i) * time.Millisecond / 10) // 0.1 ms … 100 ms
	}
	lat.Drop()
	lat.Ignore()

	// Control loop, every interval.
	s := lat.Snapshot(start.Add(time.Second))
	fmt.Println("count", s.Count, "successes", s.Successes, "drops", s.Drops, "per second", s.Throughput)
	fmt.Println("min", s.Min, "max", s.Max, "max in flight", s.MaxInflight)
	fmt.Println("p50 ≈ 50ms:", near(s.P50, 50*time.Millisecond), "p99 ≈ 99ms:", near(s.P99, 99*time.Millisecond))
	fmt.Println("p99.5 ≈ 99.5ms:", near(lat.Quantile(0.995), 99500*time.Microsecond))
	// Output:
	// count 1002 successes 1000 drops 1 per second 1002
	// min 100µs max 100ms max in flight 39
	// p50 ≈ 50ms: true p99 ≈ 99ms: true
	// p99.5 ≈ 99.5ms: true
}

func near(got, want time.Duration) bool {
	d := got - want
	return max(d, -d) <= want/100
}

// The control loop samples what it guards once per tick; CPU figures need
// two samples, and every figure says whether it is known and, if not, why.
func ExampleSampler() {
	s, err := probe.NewSampler(probe.SamplerParams{}) // this process, its cgroup, the host
	if err != nil {
		panic(err)
	}
	defer s.Close()
	s.Sample(time.Now())
	r := s.Sample(time.Now().Add(250 * time.Millisecond))
	if r.CPU.Known {
		fmt.Printf("CPU %.0f%% of the %s's capacity\n", 100*r.CPU.Value, r.CPUFrom)
	} else {
		fmt.Println("CPU unknown:", r.CPU.Reason)
	}
	if !r.Cgroup.MemoryLimit.Known {
		fmt.Println("no cgroup memory limit:", r.Cgroup.MemoryLimit.Reason)
	}
}
