package gate

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLimitNeverOvershot hammers a group from many goroutines while the
// control loop moves its limit between 1 and 8, then pins it at 3: the
// requests holding a slot are never more than the largest limit in force
// (8), and once the limit is 3 and the earlier requests have drained, never
// more than 3. Run it with -race: Tick, Enter and Done share the group.
func TestLimitNeverOvershot(t *testing.T) {
	g := newRealGate(t, `
[[group]]
name = "g"
key = "header:X-Key"
priority = "header:X-Priority"
  [group.concurrency]
  law = "fixed"
  limit = 8
  [group.queue]
  max = 4
  max_wait = "1ms"
  codel_target = "0s"
`)
	gr := g.testGroup(t, "g")
	law := &scriptLaw{limits: []int{8}}
	for range 400 {
		law.limits = append(law.limits, 1+rand.IntN(8))
	}
	g.mu.Lock()
	gr.pol.law = law
	g.mu.Unlock()

	var holding, peak atomic.Int64
	var pinned atomic.Bool
	var peakPinned atomic.Int64
	observe := func() {
		n := holding.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if pinned.Load() {
			for p := peakPinned.Load(); n > p && !peakPinned.CompareAndSwap(p, n); p = peakPinned.Load() {
			}
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var admitted atomic.Int64
	workers := 4 * runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys := []string{"a", "b", "c"}
			prios := []string{"critical", "default", "sheddable"}
			for i := 0; ctx.Err() == nil; i++ {
				r := request("/", "X-Key", keys[(w+i)%3], "X-Priority", prios[i%3])
				p, _, ok := g.Enter(r)
				if !ok {
					runtime.Gosched()
					continue
				}
				admitted.Add(1)
				observe()
				runtime.Gosched()
				holding.Add(-1)
				p.Done(Success)
			}
		}()
	}
	now := time.Now()
	for range len(law.limits) {
		now = now.Add(10 * time.Millisecond)
		g.Tick(now)
		runtime.Gosched()
	}
	// Pin the limit at 3 and let the requests admitted under higher limits
	// drain before watching again.
	g.mu.Lock()
	law.limits, law.i = []int{3}, 0
	g.mu.Unlock()
	g.Tick(now.Add(10 * time.Millisecond))
	for gr.conc.InFlight() > 3 {
		runtime.Gosched()
	}
	pinned.Store(true)
	for range 200 {
		now = now.Add(10 * time.Millisecond)
		g.Tick(now)
		runtime.Gosched()
	}
	stop()
	wg.Wait()

	if admitted.Load() == 0 {
		t.Fatal("nothing was admitted")
	}
	if p := peak.Load(); p > 8 {
		t.Errorf("%d requests held slots at once, above every limit set (8)", p)
	}
	if p := peakPinned.Load(); p > 3 {
		t.Errorf("%d requests held slots at once under a limit of 3", p)
	}
	if n := gr.conc.InFlight(); n != 0 {
		t.Errorf("in flight after every Done: %d", n)
	}
	if n := gr.keys.active.Load(); n != 0 {
		t.Errorf("keys active after every Done: %d", n)
	}
	t.Logf("admitted %d, peak %d, peak at limit 3: %d", admitted.Load(), peak.Load(), peakPinned.Load())
}
