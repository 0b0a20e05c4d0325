package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/internal/conformance"
)

// TestConformance runs the gate model on every admission trace of
// testdata/conformance, which the real gate runs too (gate's
// TestConformance): the model must decide as the trace expects, decision for
// decision. A trace marked "sim: skip" exercises what the model leaves out on
// purpose; the mark says what.
func TestConformance(t *testing.T) {
	traces, err := conformance.Glob("../../testdata/conformance/*.trace")
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range traces {
		t.Run(tr.Name, func(t *testing.T) {
			if tr.SimSkip != "" {
				t.Skip("not modelled: " + tr.SimSkip)
			}
			if err := tr.Check(runTrace(t, tr)); err != nil {
				t.Error(err)
			}
		})
	}
}

// traceScenario is the scenario of the gate model configured as the trace's
// group, with a backend that never finishes a request on its own (the trace
// says when) and clients that never give up or retry.
func traceScenario(t *testing.T, tr *conformance.Trace) (Scenario, adaptive.Law, *spec.Group) {
	t.Helper()
	cfg, err := configs.Parse(tr.Name+".toml", []byte("[upstream]\nurl = \"http://127.0.0.1:9\"\n"+tr.Config))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if len(cfg.Groups) != 1 {
		t.Fatalf("the gate model has one group, the trace %d: mark it sim: skip", len(cfg.Groups))
	}
	g := &cfg.Groups[0]
	unmodelled := func(what string) {
		t.Helper()
		t.Fatalf("the gate model does not model %s: mark the trace sim: skip", what)
	}
	const never = 1000 * time.Hour
	end := tr.Steps[len(tr.Steps)-1].At + time.Second // the report's series are as long as the run
	sc := Scenario{Seed: 1, Duration: end, SLO: never, Load: []Segment{{X: 0}},
		Service: Service{Workers: 1 << 20, Dist: Dist{Kind: Lognormal, Mean: never}},
		Clients: Clients{Timeout: never}, Interval: time.Duration(cfg.Control.Interval)}

	q := g.Queue
	sc.Gate.Queue = q.Max
	if q.Max == 0 {
		sc.Gate.Queue = -1
	}
	sc.Gate.QueueTarget, sc.Gate.QueueInterval = time.Duration(q.CodelTarget), time.Duration(q.CodelInterval)
	sc.Gate.MaxWait, sc.Gate.NoCoDel = time.Duration(q.MaxWait), q.CodelTarget == 0
	switch q.Order {
	case spec.OrderLIFO:
		sc.Gate.Order = adaptive.OrderLIFO
	case spec.OrderAdaptive:
		sc.Gate.Order = adaptive.OrderAdaptive
	default:
		sc.Gate.Order = adaptive.OrderFIFO
	}
	sc.Gate.Fair = g.Key != spec.KeyNone
	if r := g.Rate; r != nil {
		if r.Algorithm != spec.AlgorithmTokenBucket || g.Key != spec.KeyNone || r.Cost != 1 || r.Warmup != 0 {
			unmodelled("a rate other than one token bucket for the whole group at cost 1")
		}
		sc.Gate.Rate, sc.Gate.Burst = r.PerSecond(), float64(r.Burst)
	}
	cc := g.Concurrency
	sc.Bounds = adaptive.Bounds{Min: cc.Min, Max: cc.Max, Initial: cc.Initial}
	if cc.Law == spec.LawFixed {
		sc.Bounds = adaptive.Bounds{Min: cc.Limit, Max: cc.Limit, Initial: cc.Limit}
		sc.Static = cc.Limit
	}
	sc.Targets = Targets{Latency: time.Duration(g.Targets.Latency), CPU: g.Targets.CPU,
		Memory: g.Targets.Memory, CPUPressure: g.Targets.CPUPressure}
	switch g.Targets.Quantile {
	case 0.5:
		sc.Targets.Quantile = adaptive.P50
	case 0.9:
		sc.Targets.Quantile = adaptive.P90
	case 0.99:
		sc.Targets.Quantile = adaptive.P99
	default:
		unmodelled(fmt.Sprintf("quantile %v in this test's mapping", g.Targets.Quantile))
	}
	if cc.Law == spec.LawAIMD && cc.Backoff != 0.9 {
		unmodelled("an aimd backoff other than the default")
	}
	law, err := sc.Law(string(cc.Law))
	if err != nil {
		t.Fatal(err)
	}
	return sc, law, g
}

// simTrace runs one trace on the gate model.
type simTrace struct {
	t      *testing.T
	e      *engine
	group  string
	reqs   map[string]ref // by name: the request's slot and generation
	names  []string       // in order of arrival
	keys   map[string]uint8
	ticked int // ticks run
	log    conformance.Log
}

func runTrace(t *testing.T, tr *conformance.Trace) *conformance.Log {
	sc, law, g := traceScenario(t, tr)
	keys := map[string]uint8{}
	for _, s := range tr.Steps {
		if _, ok := keys[s.Key]; s.Kind == conformance.Arrive && !ok {
			keys[s.Key] = uint8(len(keys))
		}
	}
	sc.Tenants = make([]float64, max(len(keys), 1))
	for i := range sc.Tenants {
		sc.Tenants[i] = 1
	}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	sc = sc.withDefaults()
	e, err := newEngine(&sc, law)
	if err != nil {
		t.Fatal(err)
	}
	run := &simTrace{t: t, e: e, group: g.Name, reqs: map[string]ref{}, keys: keys}
	for i := range tr.Steps {
		s := &tr.Steps[i]
		run.endWaits(int64(s.At))
		e.now = int64(s.At)
		run.log.Begin(s)
		switch s.Kind {
		case conformance.Arrive:
			run.arrive(s)
		case conformance.Done:
			run.done(s)
		case conformance.Tick:
			run.tick(s)
		}
	}
	if e.overshoots != 0 {
		t.Errorf("%d admissions beyond the limit", e.overshoots)
	}
	return &run.log
}

// status is what became of a named request: "admit", "queue", "gone"
// (rejected, or finished), or "" (unchanged states: pending).
func (run *simTrace) status(name string) string {
	x := run.reqs[name]
	r := &run.e.reqs[x.id]
	switch {
	case r.gen != x.gen || r.state == stFree:
		return "gone"
	case r.state == stWaiting:
		return "queue"
	case r.state == stServing || r.state == stBackendQueued:
		return "admit"
	}
	return ""
}

// observe runs one action and logs what it did to the named requests: own is
// the request the action is about ("" for none), whose outcome comes first.
func (run *simTrace) observe(at time.Duration, own string, action func()) {
	before := map[string]string{}
	for _, n := range run.names {
		before[n] = run.status(n)
	}
	rej := run.e.rec.phases[0].rejections
	action()
	now := run.e.rec.phases[0].rejections
	var why []string
	for r := range now {
		for range now[r] - rej[r] {
			why = append(why, adaptive.RejectReason(r).String())
		}
	}
	what := func(n string) (string, bool) {
		b, a := before[n], run.status(n)
		switch {
		case b == a || b == "gone":
			return "", false
		case a == "gone" && b == "admit":
			return "", false // finished
		case a == "gone":
			if len(why) == 0 || slices.ContainsFunc(why, func(r string) bool { return r != why[0] }) {
				run.t.Fatalf("at %v: %s rejected in an action with rejections %v: cannot tell its reason", at, n, why)
			}
			return fmt.Sprintf("reject %s %s", n, why[0]), true
		}
		return fmt.Sprintf("%s %s", a, n), true
	}
	if own != "" {
		if w, ok := what(own); ok {
			run.log.Own(at, "%s", w)
		}
	}
	for _, n := range run.names {
		if n == own {
			continue
		}
		if w, ok := what(n); ok {
			run.log.Caused(at, n, "%s", w)
		}
	}
}

func (run *simTrace) arrive(s *conformance.Step) {
	t := run.t
	if _, dup := run.reqs[s.Request]; dup {
		t.Fatalf("line %d: request %q arrived before", s.Line, s.Request)
	}
	if s.Group != "" && s.Group != run.group {
		t.Fatalf("line %d: no group %q", s.Line, s.Group)
	}
	if s.Cost > 1 {
		t.Fatalf("line %d: the gate model spends one token per request, not %d: mark the trace sim: skip", s.Line, s.Cost)
	}
	p, ok := adaptive.ParsePriority(s.Priority)
	if !ok {
		t.Fatalf("line %d: priority %q", s.Line, s.Priority)
	}
	e := run.e
	id := e.alloc()
	r := &e.reqs[id]
	*r = request{gen: r.gen, state: stPending, prio: p, tenant: run.keys[s.Key], first: e.now}
	run.reqs[s.Request] = ref{id, r.gen}
	run.names = append(run.names, s.Request)
	run.observe(s.At, s.Request, func() { e.attempt(id) })
}

func (run *simTrace) done(s *conformance.Step) {
	x, ok := run.reqs[s.Request]
	if !ok || run.status(s.Request) != "admit" {
		run.t.Errorf("line %d: %q holds no slot", s.Line, s.Request)
		return
	}
	run.observe(s.At, "", func() {
		switch s.Outcome {
		case "success":
			run.e.done(x.id, x.gen)
		case "dropped":
			run.e.deadline(x.id, x.gen) // the client gave up: the slot frees, no latency
		default:
			run.t.Fatalf("line %d: the gate model has no %q outcome: mark the trace sim: skip", s.Line, s.Outcome)
		}
	})
}

func (run *simTrace) tick(s *conformance.Step) {
	e := run.e
	if want := time.Duration(run.ticked+1) * e.sc.Interval; s.At != want {
		run.t.Fatalf("line %d: a tick at %v, but the model ticks every %v (next at %v)", s.Line, s.At, e.sc.Interval, want)
	}
	run.ticked++
	run.observe(s.At, "", func() {
		e.tick()
		run.log.Own(s.At, "limit %s %d", run.group, e.g.limit)
		if e.g.rateOn && LawName(e.law) == "target" {
			run.log.Own(s.At, "rate %s %.6g", run.group, e.g.bucket.rate)
		}
		if f := e.g.floor; f.Priority > adaptive.Sheddable {
			run.log.Own(s.At, "floor %s %s %s", run.group, f.Priority, f.Reason)
		}
	})
}

// endWaits runs the queue timeouts due by until, in order.
func (run *simTrace) endWaits(until int64) {
	e := run.e
	for e.ev.len() > 0 && e.ev.ev[0].at <= until {
		ev := e.ev.pop()
		if ev.kind != evQueueTimeout {
			continue // the backend's completions are far away; nothing else is scheduled
		}
		if r := &e.reqs[ev.id]; r.gen != ev.gen || r.state != stWaiting {
			continue // it left the queue before
		}
		own := ""
		for n, x := range run.reqs {
			if x.id == ev.id && x.gen == ev.gen {
				own = n
			}
		}
		run.log.Action()
		e.now = ev.at
		run.observe(time.Duration(ev.at), own, func() { e.queueTimeout(ev.id, ev.gen) })
	}
}
