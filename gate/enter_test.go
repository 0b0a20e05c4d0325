package gate

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

func TestConcurrencyWithoutQueue(t *testing.T) {
	g, _ := newGate(t, `
[[group]]
name = "g"
  [group.concurrency]
  law = "fixed"
  limit = 2
  [group.queue]
  max = 0
`)
	a := mustEnter(t, g, request("/"))
	b := mustEnter(t, g, request("/"))
	rej := mustReject(t, g, request("/"), adaptive.RejectConcurrency)
	if rej.Status() != 503 || rej.Group != "g" || rej.RetryAfter != time.Second {
		t.Errorf("rejection = %+v, want 503 from g retrying after 1s", rej)
	}
	a.Done(Success)
	a.Done(Success) // a second Done is a no-op: no double release
	c := mustEnter(t, g, request("/"))
	mustReject(t, g, request("/"), adaptive.RejectConcurrency)
	b.Done(Dropped)
	c.Done(Ignored)
	if n := g.testGroup(t, "g").conc.InFlight(); n != 0 {
		t.Errorf("in flight after every Done = %d, want 0", n)
	}
	st, _ := g.Group("g")
	if st.Rejected[adaptive.RejectConcurrency] != 2 {
		t.Errorf("concurrency rejections = %d, want 2", st.Rejected[adaptive.RejectConcurrency])
	}
	var zero Pass
	zero.Done(Success) // no-op
}

const queueConfig = `
[[group]]
name = "g"
priority = "header:X-Priority"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 1
  max_wait = "20ms"
  codel_target = "0s"
`

// enterAsync enters r on its own goroutine; the result arrives on the channel.
func enterAsync(r func() (Pass, Rejection, bool)) <-chan enterResult {
	ch := make(chan enterResult, 1)
	go func() {
		p, rej, ok := r()
		ch <- enterResult{p, rej, ok}
	}()
	return ch
}

type enterResult struct {
	p   Pass
	rej Rejection
	ok  bool
}

// watchedCtx is a request's context that reports the first call of its Done
// method on watched. A request that has to wait for a slot calls it as it
// blocks in limits.Concurrency's queue, after joining the queue: nothing on
// the way there (gate.queue, Concurrency.Acquire) asks for Done, only for Err
// and Deadline. So the first call is the event "this request now waits in the
// queue".
type watchedCtx struct {
	context.Context
	once    sync.Once
	watched chan struct{}
}

func (c *watchedCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.watched) })
	return c.Context.Done()
}

// enterQueued enters r on its own goroutine and returns once r waits in gr's
// queue, which must then hold n waiters; the result of the Enter arrives on
// the channel. It fails the test if the Enter returns without having waited.
func enterQueued(t *testing.T, g *Gate, gr *group, n int, r *http.Request) <-chan enterResult {
	t.Helper()
	ctx := &watchedCtx{Context: r.Context(), watched: make(chan struct{})}
	res := enterAsync(func() (Pass, Rejection, bool) { return g.Enter(r.WithContext(ctx)) })
	timeout := time.NewTimer(10 * time.Second) // a failure's bound, not a pace
	defer timeout.Stop()
	select {
	case <-ctx.watched:
	case got := <-res:
		t.Fatalf("Enter returned without queueing: ok=%v reason=%v", got.ok, got.rej.Reason)
	case <-timeout.C:
		t.Fatalf("not queued within 10s; queue length %d", gr.conc.Queued())
	}
	// The waiter updated the length before it unlocked the queue and blocked.
	if q := gr.conc.Queued(); q != n {
		t.Fatalf("queue length %d once the request waits, want %d", q, n)
	}
	return res
}

func TestQueueWaitsAtMostMaxWait(t *testing.T) {
	g := newRealGate(t, queueConfig)
	gr := g.testGroup(t, "g")
	holder := mustEnter(t, g, request("/"))
	start := time.Now()
	res := <-enterAsync(func() (Pass, Rejection, bool) { return g.Enter(request("/")) })
	waited := time.Since(start)
	if res.ok || res.rej.Reason != adaptive.RejectQueueTimeout {
		t.Fatalf("queued request: ok=%v reason=%v, want a queue_timeout", res.ok, res.rej.Reason)
	}
	if waited < 20*time.Millisecond {
		t.Errorf("left the queue after %v, before max_wait (20ms)", waited)
	}
	if s := gr.qwait.Snapshot(gr.tickTime(1)); s.Count != 1 || s.Max < 20*time.Millisecond {
		t.Errorf("queue wait recorded: %d waits, max %v; want one of at least 20ms", s.Count, s.Max)
	}
	holder.Done(Success)
}

func TestQueueBoundIsTheSmallestOfItsLimits(t *testing.T) {
	g := newRealGate(t, queueConfig)
	gr := g.testGroup(t, "g")
	holder := mustEnter(t, g, request("/"))
	defer holder.Done(Success)

	// A deadline that has passed leaves no time to wait: refused at once.
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, rej, ok := g.Enter(request("/").WithContext(ctx))
	if ok || rej.Reason != adaptive.RejectQueueTimeout {
		t.Fatalf("past deadline: ok=%v reason=%v, want queue_timeout", ok, rej.Reason)
	}
	if gr.c.queued.Load() != 0 {
		t.Error("a request without time to wait was queued")
	}

	// The published bound below critical caps the wait; critical has its own.
	gr.bound.Store(&adaptive.QueueBound{Wait: time.Millisecond, Critical: time.Hour})
	if got, _, _ := gr.waitPlan(adaptive.Default, 0); got != time.Millisecond {
		t.Errorf("bound of default = %v, want 1ms", got)
	}
	if got, _, _ := gr.waitPlan(adaptive.Critical, 0); got != time.Hour {
		t.Errorf("bound of critical = %v, want 1h", got)
	}
	_, rej, ok = g.Enter(request("/"))
	if ok || rej.Reason != adaptive.RejectQueueTimeout {
		t.Fatalf("ok=%v reason=%v, want queue_timeout", ok, rej.Reason)
	}
	if s := gr.qwait.Snapshot(gr.tickTime(1)); s.Count != 1 || s.Max < time.Millisecond {
		t.Errorf("queue wait %v (of %d), want one wait of the 1ms bound", s.Max, s.Count)
	}
}

func TestQueueFullEvictsOnlyLowerPriority(t *testing.T) {
	g := newRealGate(t, queueConfig)
	gr := g.testGroup(t, "g")
	gr.bound.Store(&adaptive.QueueBound{Wait: time.Hour, Critical: time.Hour}) // waiters stay until a slot frees
	holder := mustEnter(t, g, request("/"))

	low := enterQueued(t, g, gr, 1, request("/", "X-Priority", "sheddable"))
	// Same priority as the waiter: no eviction, queue_full.
	mustReject(t, g, request("/", "X-Priority", "sheddable"), adaptive.RejectQueueFull)
	// Higher: the sheddable waiter is evicted (queue_full), the critical one waits.
	high := enterQueued(t, g, gr, 1, request("/", "X-Priority", "critical"))
	if r := <-low; r.ok || r.rej.Reason != adaptive.RejectQueueFull {
		t.Fatalf("evicted waiter: ok=%v reason=%v, want queue_full", r.ok, r.rej.Reason)
	}
	holder.Done(Success)
	r := <-high
	if !r.ok {
		t.Fatalf("critical waiter rejected: %v", r.rej.Reason)
	}
	r.p.Done(Success)
	st, _ := g.Group("g")
	if st.Rejected[adaptive.RejectQueueFull] != 2 {
		t.Errorf("queue_full = %d, want 2", st.Rejected[adaptive.RejectQueueFull])
	}
	if gr.c.stage[adaptive.Sheddable].Load() != 2 || gr.c.stage[adaptive.Critical].Load() != 0 {
		t.Errorf("concurrency-stage rejections by priority: sheddable %d, critical %d; want 2, 0",
			gr.c.stage[adaptive.Sheddable].Load(), gr.c.stage[adaptive.Critical].Load())
	}
}

func TestQueuedRequestWhoseClientLeavesIsCanceled(t *testing.T) {
	g := newRealGate(t, queueConfig)
	gr := g.testGroup(t, "g")
	gr.bound.Store(&adaptive.QueueBound{Wait: time.Hour, Critical: time.Hour})
	holder := mustEnter(t, g, request("/"))
	defer holder.Done(Success)
	ctx, cancel := context.WithCancel(context.Background())
	res := enterQueued(t, g, gr, 1, request("/").WithContext(ctx))
	cancel()
	if r := <-res; r.ok {
		t.Fatal("a canceled waiter was admitted")
	}
	st, _ := g.Group("g")
	if st.Canceled != 1 || st.Rejected[adaptive.RejectQueueTimeout] != 0 {
		t.Errorf("canceled = %d, queue_timeout = %d; want 1, 0 (a client leaving is no rejection)",
			st.Canceled, st.Rejected[adaptive.RejectQueueTimeout])
	}
}

// TestRateSteps drives a per-key token bucket through the gate with an
// injected clock: a burst of 2, one token per second.
func TestRateSteps(t *testing.T) {
	g, clk := newGate(t, `
[[group]]
name = "g"
key = "header:X-Key"
  [group.rate]
  algorithm = "token_bucket"
  rate = 1
  burst = 2
  [group.concurrency]
  law = "fixed"
  limit = 100
`)
	steps := []struct {
		at   time.Duration
		key  string
		want bool
	}{
		{0, "a", true},
		{0, "a", true},
		{0, "a", false},
		{0, "b", true}, // another key has its own bucket
		{500 * time.Millisecond, "a", false},
		{time.Second, "a", true},
		{time.Second, "a", false},
		{3 * time.Second, "a", true},
		{3 * time.Second, "a", true},
		{3 * time.Second, "a", false},
	}
	start := clk.Now()
	for i, s := range steps {
		clk.Set(start.Add(s.at))
		p, rej, ok := g.Enter(request("/", "X-Key", s.key))
		if ok != s.want {
			t.Fatalf("step %d: Enter(t0+%v, %s) admitted = %v, want %v (%v)", i, s.at, s.key, ok, s.want, rej.Reason)
		}
		if ok {
			p.Done(Success)
			continue
		}
		if rej.Reason != adaptive.RejectRate || rej.Status() != 429 {
			t.Fatalf("step %d: rejection %v/%d, want rate/429", i, rej.Reason, rej.Status())
		}
		if rej.Policy.Quota != 2 || rej.Policy.Window != 2*time.Second || rej.Rate.Remaining != 0 || rej.RetryAfter <= 0 {
			t.Fatalf("step %d: rejection figures %+v %+v, want quota 2 per 2s, 0 remaining, a retry-after", i, rej.Policy, rej.Rate)
		}
	}
}

func TestLeakyQueuePacesAdmittedRequests(t *testing.T) {
	// The gate's clock stands still, so each request's pacing delay is
	// exactly what the queue says whatever the machine's load: 0, 10ms,
	// 20ms, 30ms. The pacing itself is a real timer, which never fires early.
	g, _ := newGate(t, `
[[group]]
name = "g"
  [group.rate]
  algorithm = "leaky_queue"
  rate = 100
  max_wait = "1s"
  [group.concurrency]
  law = "fixed"
  limit = 100
`)
	// The first goes at once; the second is paced 10 ms behind it.
	first := mustEnter(t, g, request("/"))
	start := time.Now()
	second := mustEnter(t, g, request("/"))
	if waited := time.Since(start); waited < 10*time.Millisecond {
		t.Errorf("second request waited %v, want its 10ms of pacing", waited)
	}
	first.Done(Success)
	second.Done(Success)

	// A deadline shorter than the pacing delay (30ms): refused for the rate
	// at once.
	third := mustEnter(t, g, request("/"))
	third.Done(Success)
	ctx, cancel := context.WithTimeout(context.Background(), time.Microsecond)
	defer cancel()
	if _, rej, ok := g.Enter(request("/").WithContext(ctx)); ok || rej.Reason != adaptive.RejectRate || rej.RetryAfter <= 0 {
		t.Errorf("paced past its deadline: ok=%v %+v, want a rate rejection", ok, rej)
	}
}

func TestRejectCountsOutsideDecisions(t *testing.T) {
	g, _ := newGate(t, routingConfig)
	c := g.Classify(request("/api/x", "X-Priority", "critical"))
	rej := g.Reject(c, adaptive.RejectCircuitOpen, 5*time.Second)
	if rej.Reason != adaptive.RejectCircuitOpen || rej.Status() != 503 || rej.RetryAfter != 5*time.Second || rej.Group != "api" {
		t.Errorf("Reject = %+v", rej)
	}
	st, _ := g.Group("api")
	if st.Rejected[adaptive.RejectCircuitOpen] != 1 {
		t.Errorf("circuit_open rejections = %d, want 1", st.Rejected[adaptive.RejectCircuitOpen])
	}
	if got := g.Reject(Class{}, adaptive.RejectCircuitOpen, 0); got.RetryAfter != time.Second {
		t.Errorf("Reject of a zero class = %+v, want a 1s retry", got)
	}
}

func TestEnterDoesNotAllocate(t *testing.T) {
	g, _ := newGate(t, routingConfig)
	for _, r := range []struct {
		name string
		req  func() Class
	}{
		{"fixed priority", func() Class { return g.Classify(request("/other")) }},
		{"fair share key", func() Class { return g.Classify(request("/api/x", "X-Tenant", "acme", "X-Priority", "critical")) }},
	} {
		c := r.req()
		ctx := context.Background()
		g.EnterClass(ctx, c) // a new key allocates once
		n := testing.AllocsPerRun(1000, func() {
			p, _, ok := g.EnterClass(ctx, c)
			if !ok {
				t.Fatal("rejected")
			}
			p.Done(Success)
		})
		if n != 0 {
			t.Errorf("%s: Enter+Done allocates %v times", r.name, n)
		}
	}
}
