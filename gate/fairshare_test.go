package gate

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// TestFairShareIsolatesGreedyTenant: no configured quota, a limit of 4. A
// greedy tenant holding every slot is turned away (fair_share, 429) once a
// polite tenant waits, and the freed slots go to the polite one until both
// hold their share (4 / 2 active tenants).
func TestFairShareIsolatesGreedyTenant(t *testing.T) {
	g := newRealGate(t, `
[[group]]
name = "api"
key = "header:X-Tenant"
  [group.concurrency]
  law = "fixed"
  limit = 4
  [group.queue]
  max = 100
  max_wait = "1h"
  codel_target = "0s"
`)
	gr := g.testGroup(t, "api")
	greedy := func() *httpReq { return &httpReq{g, "greedy"} }
	polite := func() *httpReq { return &httpReq{g, "polite"} }

	var held []Pass
	for range 4 { // work conserving: alone, greedy may take every slot
		held = append(held, greedy().mustEnter(t))
	}
	p1 := enterQueued(t, g, gr, 1, polite().request())
	for range 3 {
		rej := greedy().mustReject(t, adaptive.RejectFairShare)
		if rej.Status() != 429 {
			t.Fatalf("fair_share status %d, want 429", rej.Status())
		}
	}
	held[0].Done(Success) // the freed slot goes to the polite waiter
	r := <-p1
	if !r.ok {
		t.Fatalf("polite tenant rejected: %v", r.rej.Reason)
	}
	// Greedy holds 3, polite 1: greedy is still over its share, polite under.
	greedy().mustReject(t, adaptive.RejectFairShare)
	p2 := enterQueued(t, g, gr, 1, polite().request())
	held[1].Done(Success)
	r2 := <-p2
	if !r2.ok {
		t.Fatalf("second polite request rejected: %v", r2.rej.Reason)
	}
	// 2 and 2: both at their share, both turned away.
	greedy().mustReject(t, adaptive.RejectFairShare)
	polite().mustReject(t, adaptive.RejectFairShare)

	r.p.Done(Success)
	r2.p.Done(Success)
	held[2].Done(Success)
	held[3].Done(Success)
	if gr.keys.active.Load() != 0 || gr.conc.InFlight() != 0 {
		t.Errorf("after every Done: %d keys active, %d in flight; want 0, 0", gr.keys.active.Load(), gr.conc.InFlight())
	}
	if gr.keys.len() != 2 {
		t.Errorf("keys held = %d, want 2 (idle until swept)", gr.keys.len())
	}
	for i := range keyShards {
		gr.keys.sweep(i)
	}
	if gr.keys.len() != 0 {
		t.Errorf("keys held after a sweep = %d, want 0", gr.keys.len())
	}
}

// TestPerKeyQuotaIsolatesGreedyTenant: with a configured per-key quota the
// greedy tenant runs into its own quota (rate, 429 with the RateLimit
// figures) and the polite tenant's requests are untouched.
func TestPerKeyQuotaIsolatesGreedyTenant(t *testing.T) {
	g, clk := newGate(t, `
[[group]]
name = "api"
key = "header:X-Tenant"
  [group.rate]
  rate = 10
  burst = 5
  [group.concurrency]
  law = "fixed"
  limit = 1000
`)
	admitted := map[string]int{}
	for round := range 10 { // one second of traffic: greedy 50 req/s, polite 2 req/s
		for i := range 5 {
			for _, who := range []string{"greedy", "polite"} {
				if who == "polite" && (round%5 != 0 || i != 0) {
					continue
				}
				p, rej, ok := g.Enter(request("/", "X-Tenant", who))
				if ok {
					admitted[who]++
					p.Done(Success)
				} else if rej.Reason != adaptive.RejectRate || rej.Status() != 429 || rej.Policy.Quota != 5 {
					t.Fatalf("%s rejected with %+v, want its rate quota", who, rej)
				}
			}
		}
		clk.Advance(100 * time.Millisecond)
	}
	// Greedy: the burst of 5, then 10 per second (9 more in the 0.9 s after
	// the first round).
	if admitted["greedy"] != 14 {
		t.Errorf("greedy admitted %d, want its quota: 14", admitted["greedy"])
	}
	if admitted["polite"] != 2 {
		t.Errorf("polite admitted %d of 2", admitted["polite"])
	}
}

// httpReq enters requests of one tenant.
type httpReq struct {
	g      *Gate
	tenant string
}

// request builds a request of the tenant.
func (h *httpReq) request() *http.Request { return request("/", "X-Tenant", h.tenant) }

func (h *httpReq) mustEnter(t *testing.T) Pass {
	t.Helper()
	return mustEnter(t, h.g, h.request())
}

func (h *httpReq) mustReject(t *testing.T, why adaptive.RejectReason) Rejection {
	t.Helper()
	return mustReject(t, h.g, h.request(), why)
}
