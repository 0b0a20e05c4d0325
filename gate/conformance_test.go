package gate

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/internal/conformance"
)

// The gate runs every admission trace of testdata/conformance and must
// decide as each expects; adaptive/sim's gate model runs the same traces
// (see internal/conformance). The gate is the truth: -rewrite writes its
// decisions into the files.
var rewriteTraces = flag.Bool("rewrite", false, "rewrite the expected outcomes of ../testdata/conformance/*.trace from the gate's")

func TestConformance(t *testing.T) {
	traces, err := conformance.Glob("../testdata/conformance/*.trace")
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range traces {
		t.Run(tr.Name, func(t *testing.T) {
			log := runTrace(t, tr)
			if *rewriteTraces {
				if err := tr.Rewrite(log); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := tr.Check(log); err != nil {
				t.Error(err)
			}
		})
	}
}

// traceCtx is a traced request's context. Its first Done call is the event
// "the request now waits in the queue" (see watchedCtx), and the runner ends
// it with context.DeadlineExceeded at the instant the request's wait bound
// ends on the injected clock: limits.Concurrency times waits with real
// timers, which the trace's wait bounds (seconds) keep far away.
type traceCtx struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
	done    chan struct{}
	expired atomic.Bool
}

func newTraceCtx() *traceCtx {
	return &traceCtx{Context: context.Background(), waiting: make(chan struct{}), done: make(chan struct{})}
}

func (c *traceCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.done
}

func (c *traceCtx) Err() error {
	if c.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *traceCtx) expire() {
	c.expired.Store(true)
	close(c.done)
}

// traceReq is a request of a trace in the gate.
type traceReq struct {
	name   string
	group  *group
	seq    int // order of arrival
	ctx    *traceCtx
	pass   Pass
	held   bool          // it holds a slot
	queued bool          // it waits in the queue
	ends   time.Duration // with queued: the instant its wait bound ends; 0: none
	wait   time.Duration // the wait bound it arrived with
}

type traceResult struct {
	r *traceReq
	enterResult
}

// gateTrace runs one trace on a gate with an injected clock.
type gateTrace struct {
	t       *testing.T
	g       *Gate
	clk     *fakeClock
	groups  []*group
	reqs    map[string]*traceReq
	results chan traceResult // waiters' results
	log     conformance.Log
}

func runTrace(t *testing.T, tr *conformance.Trace) *conformance.Log {
	// CPU and memory are known and idle, as the simulator's backend reports
	// them with nothing set to load them.
	clk, res := newFakeClock(), &fakeSampler{}
	res.set(0, 0)
	g, err := New(Params{Config: config(t, tr.Config), Clock: clk, Resources: res})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	run := &gateTrace{t: t, g: g, clk: clk, reqs: map[string]*traceReq{}, results: make(chan traceResult, 64)}
	for _, gc := range g.Config().Groups {
		run.groups = append(run.groups, g.testGroup(t, gc.Name))
	}
	for i := range tr.Steps {
		s := &tr.Steps[i]
		run.endWaits(s.At)
		clk.Set(t0.Add(s.At))
		run.log.Begin(s)
		switch s.Kind {
		case conformance.Arrive:
			run.arrive(s)
		case conformance.Done:
			run.done(s)
		case conformance.Tick:
			run.tick(s.At)
		}
	}
	for _, r := range run.reqs { // let no waiter outlive the test
		if r.queued {
			r.ctx.expire()
			<-run.results
		}
	}
	return &run.log
}

// queued is the number of waiters in the trace's groups.
func (run *gateTrace) queued() int {
	n := 0
	for _, gr := range run.groups {
		n += gr.conc.Queued()
	}
	return n
}

func (run *gateTrace) arrive(s *conformance.Step) {
	t := run.t
	if run.reqs[s.Request] != nil {
		t.Fatalf("line %d: request %q arrived before", s.Line, s.Request)
	}
	name := s.Group
	if name == "" {
		name = run.groups[0].name
	}
	p, ok := adaptive.ParsePriority(s.Priority)
	if !ok {
		t.Fatalf("line %d: priority %q", s.Line, s.Priority)
	}
	c, ok := run.g.ClassOf(name, s.Key, p)
	if !ok {
		t.Fatalf("line %d: no group %q", s.Line, name)
	}
	r := &traceReq{name: s.Request, group: c.g, seq: len(run.reqs), ctx: newTraceCtx()}
	run.reqs[r.name] = r
	before := run.queued()
	// The wait it gets if it must queue, as the gate reads its bound on
	// arrival (the clock stands still meanwhile).
	r.wait, _, _ = r.group.waitPlan(p, run.g.nanos())
	res := enterAsync(func() (Pass, Rejection, bool) { return run.g.EnterClassCost(r.ctx, c, s.Cost) })
	select {
	case got := <-res:
		run.decided(s.At, r, got, false)
		run.collect(s.At, before-run.queued()) // waiters it pushed out
		return
	case <-r.ctx.waiting:
	case <-time.After(10 * time.Second): // a failure's bound, not a pace
		t.Fatalf("line %d: %s neither decided nor queued within 10s", s.Line, r.name)
	}
	r.queued = true
	if b := r.wait; b > 0 {
		r.ends = s.At + b
	} else if b = r.group.conc.MaxWait(); b > 0 {
		r.ends = s.At + b
	}
	go func() { run.results <- traceResult{r, <-res} }()
	run.log.Own(s.At, "queue %s", r.name)
	run.collect(s.At, before+1-run.queued())
}

// decided logs what became of r: admitted or rejected, on its own arrival
// or (caused) as a waiter.
func (run *gateTrace) decided(at time.Duration, r *traceReq, got enterResult, caused bool) {
	r.queued = false
	var what string
	if got.ok {
		r.pass, r.held = got.p, true
		what = "admit " + r.name
	} else {
		what = fmt.Sprintf("reject %s %s", r.name, got.rej.Reason)
	}
	if caused {
		run.log.Caused(at, r.name, "%s", what)
	} else {
		run.log.Own(at, "%s", what)
	}
}

// collect waits for the results of the n waiters that left the queue during
// the current action.
func (run *gateTrace) collect(at time.Duration, n int) {
	for range n {
		select {
		case got := <-run.results:
			run.decided(at, got.r, got.enterResult, true)
		case <-time.After(10 * time.Second): // a failure's bound, not a pace
			run.t.Fatalf("at %v: a waiter left the queue but its Enter did not return within 10s", at)
		}
	}
}

func (run *gateTrace) done(s *conformance.Step) {
	r := run.reqs[s.Request]
	if r == nil || !r.held {
		run.t.Fatalf("line %d: %q holds no slot", s.Line, s.Request)
	}
	o := map[string]Outcome{"success": Success, "dropped": Dropped, "ignored": Ignored}[s.Outcome]
	before := run.queued()
	r.held = false
	r.pass.Done(o)
	run.collect(s.At, before-run.queued())
}

func (run *gateTrace) tick(at time.Duration) {
	before := run.queued()
	run.g.Tick(t0.Add(at))
	for _, gr := range run.groups {
		st, _ := run.g.Group(gr.name)
		run.log.Own(at, "limit %s %d", gr.name, st.Limit)
		if st.RateManaged {
			run.log.Own(at, "rate %s %.6g", gr.name, st.TokenRate)
		}
		if st.Floor.Priority > adaptive.Sheddable {
			run.log.Own(at, "floor %s %s %s", gr.name, st.Floor.Priority, st.Floor.Reason)
		}
	}
	run.collect(at, before-run.queued())
}

// endWaits refuses, in order, the waiters whose wait bound ends by until,
// each at the instant it ends.
func (run *gateTrace) endWaits(until time.Duration) {
	for {
		var next *traceReq
		for _, r := range run.reqs {
			if r.queued && r.ends > 0 && r.ends <= until &&
				(next == nil || r.ends < next.ends || r.ends == next.ends && r.seq < next.seq) {
				next = r
			}
		}
		if next == nil {
			return
		}
		run.log.Action()
		run.clk.Set(t0.Add(next.ends))
		before := run.queued()
		next.ctx.expire()
		select {
		case got := <-run.results:
			if got.r != next {
				run.t.Fatalf("at %v: %s's wait ended, but %s left the queue", next.ends, next.name, got.r.name)
			}
			run.decided(next.ends, next, got.enterResult, false)
		case <-time.After(10 * time.Second): // a failure's bound, not a pace
			run.t.Fatalf("at %v: %s's wait ended but its Enter did not return within 10s", next.ends, next.name)
		}
		if left := before - run.queued(); left != 1 {
			run.t.Fatalf("at %v: %d waiters left the queue when %s's wait ended, want 1", next.ends, left, next.name)
		}
	}
}
