package probe

import (
	"math"
	"runtime/metrics"
	"time"
)

// goRuntime reads the Go runtime's own figures through runtime/metrics,
// keeping the previous GC pause histogram to report what happened between
// samples. After the first read it does not allocate.
type goRuntime struct {
	samples    [5]metrics.Sample
	prevPauses []uint64
	prevCycles uint64
}

func (g *goRuntime) init() {
	for i, name := range [...]string{
		"/memory/classes/heap/objects:bytes",
		"/gc/heap/goal:bytes",
		"/sched/goroutines:goroutines",
		"/gc/cycles/total:gc-cycles",
		"/sched/pauses/total/gc:seconds",
	} {
		g.samples[i].Name = name
	}
}

func (g *goRuntime) read() Runtime {
	metrics.Read(g.samples[:])
	var r Runtime
	r.HeapBytes = g.uint(0)
	r.HeapGoal = g.uint(1)
	r.Goroutines = int(g.uint(2))
	cycles := g.uint(3)
	r.GCCycles = cycles - min(g.prevCycles, cycles)
	g.prevCycles = cycles
	if g.samples[4].Value.Kind() != metrics.KindFloat64Histogram {
		return r
	}
	h := g.samples[4].Value.Float64Histogram()
	if len(g.prevPauses) != len(h.Counts) {
		g.prevPauses = make([]uint64, len(h.Counts))
	}
	for i, c := range h.Counts {
		if c > g.prevPauses[i] && i+1 < len(h.Buckets) {
			upper := h.Buckets[i+1]
			if math.IsInf(upper, 1) {
				upper = h.Buckets[i]
			}
			r.GCPauseMax = time.Duration(upper * 1e9)
		}
		g.prevPauses[i] = c
	}
	return r
}

// uint returns sample i, or 0 if this Go does not offer it.
func (g *goRuntime) uint(i int) uint64 {
	if g.samples[i].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return g.samples[i].Value.Uint64()
}
