package adaptive

import (
	"testing"
	"time"
)

// benchSamples alternates overloaded and healthy intervals so every branch of
// a law runs, not just its hold path.
func benchSamples() []Sample {
	ms := time.Millisecond
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []Sample
	for i := 0; i < 64; i++ { // 64: the benchmarks index with i&63
		lat := Latency{Min: 2 * ms, Mean: 20 * ms, P50: 18 * ms, P90: 40 * ms, P95: 50 * ms, P99: 70 * ms, P999: 90 * ms}
		drops := 0
		cpu := 0.5
		if i%4 == 3 {
			lat = Latency{Min: 40 * ms, Mean: 90 * ms, P50: 85 * ms, P90: 120 * ms, P95: 130 * ms, P99: 160 * ms, P999: 200 * ms}
			drops = 3
			cpu = 0.95
		}
		out = append(out, Sample{Now: base.Add(time.Duration(i+1) * 250 * time.Millisecond), Limit: 60, InFlight: 55,
			MaxInFlight: 60, Successes: 250, Drops: drops, Rejected: 20, RateRejected: 5, Queued: 30, QueueLength: 10,
			QueueCapacity: 100, Latency: lat, MinRTT: 2 * ms, CPU: cpu, CPUKnown: true, Memory: 0.6, MemoryKnown: true})
	}
	return out
}

// nextSample returns the i-th sample of the cycle; each time the cycle wraps,
// the samples move 16 s on so time never goes backwards.
func nextSample(samples []Sample, i int) *Sample {
	if i > 0 && i&63 == 0 {
		for j := range samples {
			samples[j].Now = samples[j].Now.Add(16 * time.Second)
		}
	}
	return &samples[i&63]
}

// BenchmarkUpdate measures one control step of every law (issue target:
// at most 1 µs/op and 0 allocs/op).
func BenchmarkUpdate(b *testing.B) {
	samples := benchSamples()
	for _, lm := range lawMakers {
		b.Run(lm.name, func(b *testing.B) {
			law, err := lm.make(Bounds{Min: 2, Max: 1000, Initial: 60})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				law.Update(*nextSample(samples, i))
				i++
			}
		})
	}
}

// BenchmarkPolicy measures the per-interval policy pieces and the per-request
// checks the gate makes.
func BenchmarkPolicy(b *testing.B) {
	samples := benchSamples()
	b.Run("interval", func(b *testing.B) {
		sh, _ := NewPriorityShedder(ShedderParams{})
		g, _ := NewResourceGuard(ResourceGuardParams{CPU: 0.8, Memory: 0.85})
		q, _ := NewQueueWait(QueueWaitParams{Latency: 100 * time.Millisecond})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s := nextSample(samples, i)
			q.Update(*s)
			g.Update(*s).Max(sh.Update(*s))
			i++
		}
	})
	b.Run("request", func(b *testing.B) {
		f := Floor{Priority: Default, Reason: RejectCPU}.Pack()
		fs := FairShare{}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			ok, _ := UnpackFloor(f).Admit(Priority(i & 7))
			if ok {
				fs.Allow(i&63, 100, 100, 3)
			}
			i++
		}
	})
}
