package gate

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// fixedGroup is a config of one group "g" on /g/ with a fixed limit, no
// queue, and the latency target given (the setting the tests change to make
// a reload rebuild the group).
func fixedGroup(limit int, latency string) string {
	return fmt.Sprintf(`
[[group]]
name = "g"
match = { path_prefix = "/g/" }
  [group.concurrency]
  law = "fixed"
  limit = %d
  [group.targets]
  latency = %q
  [group.queue]
  max = 0
`, limit, latency)
}

// reloadChanged reloads toml and fails the test unless it rebuilt group g.
func reloadChanged(t *testing.T, g *Gate, toml string) {
	t.Helper()
	res, err := g.Reload(config(t, toml), ReloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Changed, []string{"g"}) {
		t.Fatalf("Reload = %+v, want g changed", res)
	}
}

// TestReloadCountsInFlightOfReplacedGroup: the requests a group admitted
// before a reload rebuilt it hold slots of the new group until they are done,
// so the new group admits nothing beyond its limit: neither when only a
// target changed nor when the limit was lowered below what is in flight.
func TestReloadCountsInFlightOfReplacedGroup(t *testing.T) {
	g, _ := newGate(t, fixedGroup(3, "100ms"))
	var held []Pass
	for range 3 {
		held = append(held, mustEnter(t, g, request("/g/x")))
	}
	mustReject(t, g, request("/g/x"), adaptive.RejectConcurrency)

	// Same limit, another target: still 3 in flight, no room.
	reloadChanged(t, g, fixedGroup(3, "200ms"))
	mustReject(t, g, request("/g/x"), adaptive.RejectConcurrency)
	if gr := g.testGroup(t, "g"); gr.conc.InFlight() != 3 {
		t.Errorf("rebuilt group: %d in flight, want the old group's 3", gr.conc.InFlight())
	}
	if st, _ := g.Group("g"); st.InFlight != 3 || st.Limit != 3 {
		t.Errorf("read-out after the reload: in flight %d, limit %d; want 3, 3", st.InFlight, st.Limit)
	}

	// The limit lowered to 2 below the 3 in flight: nothing is admitted
	// until fewer than 2 are.
	reloadChanged(t, g, fixedGroup(2, "200ms"))
	held[0].Done(Success)
	mustReject(t, g, request("/g/x"), adaptive.RejectConcurrency)
	held[1].Done(Success)
	p := mustEnter(t, g, request("/g/x"))
	mustReject(t, g, request("/g/x"), adaptive.RejectConcurrency)

	held[2].Done(Success)
	p.Done(Success)
	if gr := g.testGroup(t, "g"); gr.conc.InFlight() != 0 {
		t.Errorf("after every Done: %d in flight, want 0", gr.conc.InFlight())
	}
}

// TestOverrideCountsInFlight: an override changes the running group in
// place, so the requests in flight keep counting against its limit, also
// when the override lowers it below them.
func TestOverrideCountsInFlight(t *testing.T) {
	g, _ := newGate(t, fixedGroup(3, "100ms"))
	var held []Pass
	for range 3 {
		held = append(held, mustEnter(t, g, request("/g/x")))
	}
	c := g.Config().Group("g").Clone()
	c.Targets.Latency = 200 * time.Millisecond
	if err := g.Override(c); err != nil {
		t.Fatal(err)
	}
	mustReject(t, g, request("/g/x"), adaptive.RejectConcurrency)

	c.Concurrency.Limit = 2
	if err := g.Override(c); err != nil {
		t.Fatal(err)
	}
	held[0].Done(Success)
	mustReject(t, g, request("/g/x"), adaptive.RejectConcurrency)
	held[1].Done(Success)
	p := mustEnter(t, g, request("/g/x"))
	mustReject(t, g, request("/g/x"), adaptive.RejectConcurrency)
	held[2].Done(Success)
	p.Done(Success)
}

// queuedGroup is a config of one group "g" with a fixed limit, a queue of 10
// with no time bound worth the name and CoDel off, keyed by X-Tenant, with
// the queue's max_wait given.
func queuedGroup(limit int, maxWait string) string {
	return fmt.Sprintf(`
[[group]]
name = "g"
key = "header:X-Tenant"
  [group.concurrency]
  law = "fixed"
  limit = %d
  [group.queue]
  max = 10
  max_wait = %q
  codel_target = "0s"
`, limit, maxWait)
}

// TestReloadKeepsQueuedWaiters: a request waiting in the queue of a group a
// reload rebuilds keeps its place; requests arriving at the new group queue
// behind it, and each freed slot goes to exactly one waiter, in order.
func TestReloadKeepsQueuedWaiters(t *testing.T) {
	g := newRealGate(t, queuedGroup(1, "1h"))
	holder := mustEnter(t, g, request("/", "X-Tenant", "a"))
	w1 := enterQueued(t, g, g.testGroup(t, "g"), 1, request("/", "X-Tenant", "a"))

	reloadChanged(t, g, queuedGroup(1, "59m"))
	gr := g.testGroup(t, "g")
	if gr.conc.MaxWait() != 59*time.Minute {
		t.Errorf("max wait after the reload %v, want 59m", gr.conc.MaxWait())
	}
	w2 := enterQueued(t, g, gr, 2, request("/", "X-Tenant", "a"))

	holder.Done(Success) // to w1, the older waiter
	r1 := <-w1
	if !r1.ok {
		t.Fatalf("the waiter from before the reload: rejected %v", r1.rej.Reason)
	}
	if gr.conc.InFlight() != 1 || gr.conc.Queued() != 1 {
		t.Fatalf("after the first release: %d in flight, %d queued; want 1, 1", gr.conc.InFlight(), gr.conc.Queued())
	}
	r1.p.Done(Success) // to w2
	r2 := <-w2
	if !r2.ok {
		t.Fatalf("the waiter from after the reload: rejected %v", r2.rej.Reason)
	}
	r2.p.Done(Success)
	if n := gr.c.queued.Load(); n != 2 {
		t.Errorf("the rebuilt group counts %d requests that waited, want both", n)
	}
	if gr.conc.InFlight() != 0 || gr.conc.Queued() != 0 || gr.keys.active.Load() != 0 {
		t.Errorf("after every Done: %d in flight, %d queued, %d keys active; want 0",
			gr.conc.InFlight(), gr.conc.Queued(), gr.keys.active.Load())
	}
}

// TestReloadKeepsFairShare: the slots a greedy tenant held before a reload
// count as its own in the rebuilt group, so the fair share still turns it
// away once another tenant waits, and the freed slot goes to that tenant.
func TestReloadKeepsFairShare(t *testing.T) {
	g := newRealGate(t, queuedGroup(4, "1h"))
	greedy := &httpReq{g, "greedy"}
	var held []Pass
	for range 4 {
		held = append(held, greedy.mustEnter(t))
	}

	reloadChanged(t, g, queuedGroup(4, "59m"))
	gr := g.testGroup(t, "g")
	if ks, _ := gr.keys.enter("greedy"); ks.held.Load() != 4 {
		t.Errorf("greedy holds %d slots of the rebuilt group, want 4", ks.held.Load())
	} else {
		gr.keys.leave(ks)
	}
	polite := enterQueued(t, g, gr, 1, (&httpReq{g, "polite"}).request())
	greedy.mustReject(t, adaptive.RejectFairShare)

	held[0].Done(Success)
	r := <-polite
	if !r.ok {
		t.Fatalf("polite tenant rejected: %v", r.rej.Reason)
	}
	r.p.Done(Success)
	for _, p := range held[1:] {
		p.Done(Success)
	}
	if gr.conc.InFlight() != 0 || gr.keys.active.Load() != 0 {
		t.Errorf("after every Done: %d in flight, %d keys active; want 0, 0", gr.conc.InFlight(), gr.keys.active.Load())
	}
}

// TestReloadFirstTickSeesTheOldRequests: the first control interval of a
// rebuilt group continues the old group's: it covers the requests admitted
// before the reload (their arrivals, their completions after it, those still
// in flight) and the old group's counters go on.
func TestReloadFirstTickSeesTheOldRequests(t *testing.T) {
	g, clk := newGate(t, fixedGroup(3, "100ms"))
	g.Tick(clk.Advance(250 * time.Millisecond))
	a := mustEnter(t, g, request("/g/x"))
	b := mustEnter(t, g, request("/g/x"))

	reloadChanged(t, g, fixedGroup(3, "200ms"))
	a.Done(Success) // into the rebuilt group
	c := mustEnter(t, g, request("/g/x"))
	d := mustEnter(t, g, request("/g/x"))
	mustReject(t, g, request("/g/x"), adaptive.RejectConcurrency) // b, c, d hold the 3 slots
	g.Tick(clk.Advance(250 * time.Millisecond))

	st, _ := g.Group("g")
	s := st.Sample
	if s.Successes != 1 || s.InFlight != 3 || s.ByPriority[adaptive.Default].Arrived != 5 {
		t.Errorf("first tick after the reload: %d successes, %d in flight, %d arrived; want 1, 3, 5 (a to d, the rejected one)",
			s.Successes, s.InFlight, s.ByPriority[adaptive.Default].Arrived)
	}
	if st.Completed[Success] != 1 || st.Arrived != 5 || st.Rejected[adaptive.RejectConcurrency] != 1 {
		t.Errorf("read-out: %d completed, %d arrived, %d rejected; want 1, 5, 1",
			st.Completed[Success], st.Arrived, st.Rejected[adaptive.RejectConcurrency])
	}
	for _, p := range []Pass{b, c, d} {
		p.Done(Success)
	}
}

// TestReloadReaddedGroupCountsInFlight: a group removed by one reload while
// requests are in flight and added again by the next counts those requests
// against its limit until they are done; a removed group with nothing left
// in flight is forgotten.
func TestReloadReaddedGroupCountsInFlight(t *testing.T) {
	g, clk := newGate(t, fixedGroup(2, "100ms"))
	a := mustEnter(t, g, request("/g/x"))
	b := mustEnter(t, g, request("/g/x"))

	res, err := g.Reload(config(t, ""), ReloadOptions{})
	if err != nil || !slices.Equal(res.Removed, []string{"g"}) {
		t.Fatalf("Reload = %+v, %v; want g removed", res, err)
	}
	res, err = g.Reload(config(t, fixedGroup(2, "100ms")), ReloadOptions{})
	if err != nil || !slices.Equal(res.Added, []string{"g"}) {
		t.Fatalf("Reload = %+v, %v; want g added", res, err)
	}
	mustReject(t, g, request("/g/x"), adaptive.RejectConcurrency)
	a.Done(Success)
	p := mustEnter(t, g, request("/g/x"))
	mustReject(t, g, request("/g/x"), adaptive.RejectConcurrency)
	// The first tick of the group added again sees a's completion, b and p
	// in flight, and three arrivals (p and the two turned away): a and b
	// were in it already.
	g.Tick(clk.Advance(250 * time.Millisecond))
	s := g.testGroup(t, "g").info.Load().sample
	if s.Successes != 1 || s.InFlight != 2 || s.ByPriority[adaptive.Default].Arrived != 3 {
		t.Errorf("first tick: %d successes, %d in flight, %d arrived; want 1, 2, 3",
			s.Successes, s.InFlight, s.ByPriority[adaptive.Default].Arrived)
	}
	b.Done(Success)
	p.Done(Success)

	// Removed with nothing in flight: nothing to carry.
	if _, err := g.Reload(config(t, ""), ReloadOptions{}); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	n := len(g.retired)
	g.mu.Unlock()
	if n != 0 {
		t.Errorf("%d removed groups kept with nothing in flight, want 0", n)
	}

	// Removed with one in flight: kept until it is done, then dropped by
	// the next tick.
	if _, err := g.Reload(config(t, fixedGroup(2, "100ms")), ReloadOptions{}); err != nil {
		t.Fatal(err)
	}
	p = mustEnter(t, g, request("/g/x"))
	if _, err := g.Reload(config(t, ""), ReloadOptions{}); err != nil {
		t.Fatal(err)
	}
	g.Tick(clk.Advance(time.Second))
	g.mu.Lock()
	n = len(g.retired)
	g.mu.Unlock()
	if n != 1 {
		t.Errorf("%d removed groups kept with one in flight, want 1", n)
	}
	p.Done(Success)
	g.Tick(clk.Advance(time.Second))
	g.mu.Lock()
	n = len(g.retired)
	g.mu.Unlock()
	if n != 0 {
		t.Errorf("%d removed groups kept after their last Done and a tick, want 0", n)
	}
}

// TestReloadUnderLoadNeverOvershoots hammers a group with a fixed limit of 4
// while it is rebuilt by reloads over and over (the limit stays, a target
// changes): the requests holding a slot are never more than 4. Run it with
// -race: Reload, Enter and Done share the group's slots.
func TestReloadUnderLoadNeverOvershoots(t *testing.T) {
	const limit = 4
	g := newRealGate(t, fixedGroup(limit, "100ms"))
	cfgs := [2]Config{config(t, fixedGroup(limit, "200ms")), config(t, fixedGroup(limit, "100ms"))}

	var holding, peak, admitted atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, _, ok := g.Enter(request("/g/x"))
				if !ok {
					runtime.Gosched()
					continue
				}
				admitted.Add(1)
				n := holding.Add(1)
				for q := peak.Load(); n > q && !peak.CompareAndSwap(q, n); q = peak.Load() {
				}
				runtime.Gosched() // hold the slot across other goroutines' turns
				holding.Add(-1)
				p.Done(Success)
			}
		}()
	}
	for i := range 300 {
		if _, err := g.Reload(cfgs[i%2], ReloadOptions{}); err != nil {
			t.Error(err)
			break
		}
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	if p := peak.Load(); p > limit {
		t.Errorf("%d requests held slots at once across reloads, limit %d", p, limit)
	}
	if admitted.Load() == 0 {
		t.Error("no request admitted: the test proved nothing")
	}
	if gr := g.testGroup(t, "g"); gr.conc.InFlight() != 0 {
		t.Errorf("after every Done: %d in flight, want 0", gr.conc.InFlight())
	}
}
