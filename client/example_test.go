package client_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/client"
)

// A service behind sluice accepts 100 requests, then is overloaded: sluice
// refuses the rest with 503 and Sluice-Reason. The Client sends on until it
// has sent about K = 2 requests for each accepted, then only the share
// K·accepts/requests of those that follow, which shrinks as they pile up
// in its window: the rest is dropped in the caller's process, without a
// connection, told apart by client.Dropped.
func Example() {
	var accepted, refused atomic.Int64
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if accepted.Load() == 100 {
			refused.Add(1)
			w.Header().Set("Sluice-Reason", "concurrency")
			w.Header().Set("Retry-After", "1")
			http.Error(w, "service overloaded (concurrency)", http.StatusServiceUnavailable)
			return
		}
		accepted.Add(1)
		io.WriteString(w, "ok\n")
	}))
	defer service.Close()

	c, err := client.New(client.Config{
		Tags: client.Tags{Tenant: "acme", Priority: client.PrioritySheddable}, // X-Tenant, X-Priority on every request
		Rand: rand.New(rand.NewPCG(1, 2)).Float64,                             // for a fixed output; leave it nil
	})
	if err != nil {
		panic(err)
	}
	hc := &http.Client{Transport: c.Transport(nil)}

	var dropped int
	for range 2000 {
		// POST is not idempotent: refusals are not retried here, so the
		// example waits for no Retry-After.
		resp, err := hc.Post(service.URL, "text/plain", nil)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if client.Dropped(resp) {
			dropped++
		}
	}
	fmt.Printf("accepted %d, refused %d, dropped locally %d\n", accepted.Load(), refused.Load(), dropped)
	// Output: accepted 100, refused 569, dropped locally 1331
}

func ExampleConfig_prometheus() {
	events := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_client_events_total",
		Help: "What the sluice client did: attempts by outcome, local drops, retries, exhausted retry budgets, retries past the deadline.",
	}, []string{"backend", "event", "outcome"})
	c, err := client.New(client.Config{Observe: func(e client.Event) {
		outcome := ""
		if e.Kind == client.EventAttempt {
			outcome = e.Outcome.String()
		}
		events.WithLabelValues(e.Backend, e.Kind.String(), outcome).Inc()
	}})
	if err != nil {
		panic(err)
	}
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }))
	defer service.Close()
	hc := &http.Client{Transport: c.Transport(nil)}
	for range 3 {
		resp, err := hc.Get(service.URL)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	host := service.Listener.Addr().String()
	fmt.Println(testutil.ToFloat64(events.WithLabelValues(host, "attempt", "accepted")))
	// Output: 3
}
