package gate

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// correctedGroup: 500 units a second per tenant (burst 500), each request
// charged 1 at admission and its real cost after the work (X-Cost).
const correctedGroup = `
[[group]]
name = "g"
key = "header:X-Tenant"
  [group.rate]
  rate = 500
  burst = 500
  cost_header = "x-cost"
  [group.concurrency]
  law = "fixed"
  limit = 1000
`

// TestCostCorrectionExact: three tenants ask without pause for a minute of
// the gate's clock (every millisecond each); every admitted request's real
// cost, drawn from 1 to 100, corrects the charge once it is done. Each
// tenant's real spend over the minute is its burst plus a minute of its
// rate, give or take one request's cost (100): what was admitted on a
// charge of 1 is paid back in full before the next admission.
func TestCostCorrectionExact(t *testing.T) {
	g, clk := newGate(t, correctedGroup)
	c0, ok := g.ClassOf("g", "", adaptive.Default)
	if !ok {
		t.Fatal("no group g")
	}
	if h := c0.CostHeader(); h != "X-Cost" {
		t.Fatalf("CostHeader %q, want X-Cost", h)
	}
	tenants := []string{"a", "b", "c"}
	spent := map[string]int64{}
	admitted := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for ms := 0; ms < 60_000; ms++ {
		for _, key := range tenants {
			c := c0
			c.Key = key
			p, _, ok := g.EnterClass(context.Background(), c)
			if !ok {
				continue
			}
			cost := 1 + rng.Int64N(100)
			if !g.CorrectCost(c, 0, cost) {
				t.Fatal("CorrectCost refused")
			}
			p.Done(Success)
			spent[key] += cost
			admitted[key]++
		}
		clk.Advance(time.Millisecond)
	}
	const want = 500 + 500*60
	for _, key := range tenants {
		if d := spent[key] - want; d < -100 || d > 100 {
			t.Errorf("tenant %s spent %d units in %d requests over the minute, want %d ± 100", key, spent[key], admitted[key], want)
		}
	}
	t.Logf("spent %v in %v requests (want %d ± 100 each)", spent, admitted, want)
}

// A refund gives back at most what is owed; a group without a rate, or a
// negative cost, takes no correction.
func TestCostCorrectionRefund(t *testing.T) {
	g, _ := newGate(t, correctedGroup)
	c, _ := g.ClassOf("g", "t", adaptive.Default)
	for range 500 { // the burst, spent
		p, _, ok := g.EnterClass(context.Background(), c)
		if !ok {
			t.Fatal("refused within the burst")
		}
		p.Done(Success)
	}
	if _, rej, ok := g.EnterClass(context.Background(), c); ok || rej.Reason != adaptive.RejectRate {
		t.Fatalf("beyond the burst: ok %v, %v", ok, rej.Reason)
	}
	// A request charged 1 that cost 0 gives its unit back; 2 000 more given
	// back refill the bucket to its burst, not beyond.
	if !g.CorrectCost(c, 1, 0) || !g.CorrectCost(c, 2001, 1) {
		t.Fatal("CorrectCost refused a refund")
	}
	for i := range 501 {
		p, _, ok := g.EnterClass(context.Background(), c)
		if ok != (i < 500) {
			t.Fatalf("request %d after the refunds: admitted %v; want the burst of 500 and no more", i, ok)
		}
		p.Done(Success)
	}
	if g.CorrectCost(c, 1, -1) {
		t.Error("a negative cost was taken")
	}
	none, _ := newGate(t, streamsGroup)
	cn, _ := none.ClassOf("s", "", adaptive.Default)
	if none.CorrectCost(cn, 1, 5) || cn.CostHeader() != "" {
		t.Error("a group without a rate took a correction")
	}
}
