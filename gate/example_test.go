package gate_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
)

// A Go service guarding its handler with sluice's adaptive limit, as a
// library: build a Gate from plain Go values, run its control loop, wrap the
// handler.
func ExampleMiddleware() {
	g, err := gate.New(gate.Params{Config: gate.Config{Groups: []gate.Group{{
		Name: "api",
		Key:  "header:X-Tenant", // a fair share of the limit between tenants
		// and 100 requests per second per tenant
		Rate:        &gate.Rate{Rate: 100},
		Concurrency: gate.Concurrency{Law: "target", Initial: 20, Max: 200},
		Targets:     gate.Targets{Latency: 200 * time.Millisecond}, // keep p99 under 200ms
		Queue:       gate.Queue{Max: 50},                           // wait up to 500ms for a slot
	}}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go g.Run(ctx) // the control loop: moves the limit every 250ms

	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	h := gate.Middleware(g, app)

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/hello", nil))
	fmt.Print(w.Code, " ", w.Body.String())
	// Output: 200 hello
}

// Admission without HTTP (a queue consumer): classify by group name, enter,
// do the work, report the outcome.
func ExampleGate_EnterClass() {
	g, err := gate.New(gate.Params{Config: gate.Config{Groups: []gate.Group{{
		Name:        "jobs",
		Concurrency: gate.Concurrency{Law: "fixed", Limit: 1}, // no queue: Queue.Max is 0
	}}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := g.ClassOf("jobs", "", adaptive.Default)
	first, _, ok := g.EnterClass(context.Background(), c)
	fmt.Println("first admitted:", ok)
	_, rej, ok := g.EnterClass(context.Background(), c)
	fmt.Println("second admitted:", ok, "reason:", rej.Reason, "status:", rej.Status())
	first.DoneAfter(gate.Success, 30*time.Millisecond) // the work took 30ms
	// Output:
	// first admitted: true
	// second admitted: false reason: concurrency status: 503
}

// A group's resource targets need a sampler to see CPU and memory by: New
// says so rather than leaving the target idle.
func ExampleNew_resourceTarget() {
	_, err := gate.New(gate.Params{Config: gate.Config{Groups: []gate.Group{{
		Name:    "api",
		Targets: gate.Targets{CPU: 0.8},
	}}}})
	fmt.Println(err)
	// Output: gate: group "api": targets.cpu: 0.8 needs a resource sampler to see it: set Params.Resources (a *probe.Sampler, or NoResources to leave the target idle)
}

// halveOnDrop is a control law of one's own: it halves the limit when an
// interval has drops and adds one when the group was full without any. Like
// every adaptive.Law it is pure: time and signals come in the Sample.
type halveOnDrop struct{ limit, min, max int }

func (l *halveOnDrop) Limit() int { return l.limit }

func (l *halveOnDrop) Update(s adaptive.Sample) adaptive.Decision {
	prev, why := l.limit, adaptive.Reason{}
	switch {
	case s.Drops > 0:
		l.limit = max(l.limit/2, l.min)
		why = adaptive.Reason{Signal: adaptive.SignalDrops, Observed: float64(s.Drops) / float64(s.Drops+s.Successes)}
	case s.MaxInFlight >= l.limit:
		l.limit = min(l.limit+1, l.max)
	}
	return adaptive.Decision{Limit: l.limit, Changed: l.limit != prev, Reason: why}
}

// halveOnDropLaw plugs halveOnDrop into a group (gate.Concurrency.Custom).
type halveOnDropLaw struct{}

func (halveOnDropLaw) NewLaw(b adaptive.Bounds) (adaptive.Law, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return &halveOnDrop{limit: b.Initial, min: b.Min, max: b.Max}, nil
}

// A law of one's own steering a group: the control loop gives it each
// interval's Sample and applies its Decision. Tick is what Run calls every
// interval, here driven by hand.
func ExampleConcurrency_custom() {
	g, err := gate.New(gate.Params{Config: gate.Config{Groups: []gate.Group{{
		Name:        "work",
		Concurrency: gate.Concurrency{Custom: halveOnDropLaw{}, Initial: 40, Min: 2, Max: 100},
	}}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := g.ClassOf("work", "", adaptive.Default)
	p, _, _ := g.EnterClass(context.Background(), c)
	p.DoneAfter(gate.Dropped, 10*time.Millisecond) // the work failed under load
	g.Tick(time.Now().Add(time.Second))

	st, _ := g.Group("work")
	fmt.Println(st.Law, st.Limit, st.Decision.Reason.Signal == adaptive.SignalDrops)
	// Output: custom 20 true
}
