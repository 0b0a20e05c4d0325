package gate_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
)

// A Go service guarding its handler with sluice's adaptive limit, as a
// library: build a Gate from a config, run its control loop, wrap the handler.
func ExampleMiddleware() {
	cfg, err := configs.Parse("service.toml", []byte(`
[upstream]
url = "http://127.0.0.1:9000" # unused by the library, required by the schema

[[group]]
name = "api"
key = "header:X-Tenant"         # fair share of the limit between tenants
  [group.rate]
  rate = 100                    # and 100 requests per second per tenant
  [group.concurrency]
  law = "target"
  initial = 20
  [group.targets]
  latency = "200ms"             # keep p99 under 200ms
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := gate.New(gate.Params{Config: cfg})
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
	cfg, _ := configs.Parse("", []byte(`
[upstream]
url = "http://127.0.0.1:9000"
[[group]]
name = "jobs"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 0
`))
	g, _ := gate.New(gate.Params{Config: cfg})
	c, _ := g.ClassOf("jobs", "", adaptive.Default)
	first, _, ok := g.EnterClass(context.Background(), c)
	fmt.Println("first admitted:", ok)
	_, rej, ok := g.EnterClass(context.Background(), c)
	fmt.Println("second admitted:", ok, "reason:", rej.Reason, "status:", rej.Status())
	first.Done(gate.Success)
	// Output:
	// first admitted: true
	// second admitted: false reason: concurrency status: 503
}
