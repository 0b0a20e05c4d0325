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
	// Output: gate: group "api": targets.cpu 0.8 needs a resource sampler to see it: set Params.Resources (a *probe.Sampler, or NoResources to leave the target idle)
}
