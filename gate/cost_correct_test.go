package gate

import (
	"context"
	"math"
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

// correctedRate is correctedGroup's group with the rate stage rate (a TOML
// inline table of the algorithm and its amounts).
func correctedRate(rate string) string {
	return `
[[group]]
name = "g"
key = "header:X-Tenant"
rate = { ` + rate + `, cost_header = "x-cost" }
  [group.concurrency]
  law = "fixed"
  limit = 1000
`
}

// TestCostCorrectionExact: three tenants ask without pause for a minute of
// the gate's clock (every millisecond each); every admitted request's real
// cost, drawn from 1 to 100, corrects the charge of 1 once it is done. Done
// at once, each tenant's real spend over the minute is what its algorithm
// allows (a minute of its rate, plus the burst for a bucket), give or take
// one request's cost (100): what was admitted on a charge of 1 is paid
// back in full before the next admission. Done after a latency of up to
// 20 ms (so that corrections cross window edges and land while the key has
// no room, or while others are admitted on their charge of 1), the spend
// may exceed it by what the tenant's requests in flight at once cost, no
// more: what they owe is paid, not forgiven at a window's end. Every
// algorithm that takes a correction, each of 500 units a second.
func TestCostCorrectionExact(t *testing.T) {
	for _, tc := range []struct {
		rate string
		want int64 // the units each tenant may spend in the minute
	}{
		{`rate = 500, burst = 500`, 500 + 500*60},
		{`algorithm = "leaky_bucket", rate = 500, burst = 500`, 500 + 500*60},
		{`algorithm = "fixed_window", limit = 500, window = "1s"`, 500 * 60},
		{`algorithm = "sliding_log", limit = 500, window = "1s"`, 500 * 60},
		{`algorithm = "sliding_buckets", limit = 500, window = "1s"`, 500 * 60},
		{`algorithm = "sliding_window", limit = 500, window = "1s"`, 500 * 60},
	} {
		for _, maxLat := range []int{0, 20} {
			spent, admitted, flying := spendMinute(t, correctedRate(tc.rate), maxLat)
			for key, n := range spent {
				if d := n - tc.want; d < -100 || d > 100*int64(flying[key]) {
					t.Errorf("%s, latency up to %d ms: tenant %s spent %d units in %d requests over the minute, want %d, -100 to +%d (100 per request in flight at once, %d)",
						tc.rate, maxLat, key, n, admitted[key], tc.want, 100*flying[key], flying[key])
				}
			}
			t.Logf("%s, latency up to %d ms: spent %v in %v requests (want %d, -100 to +100 per request in flight at once: %v)", tc.rate, maxLat, spent, admitted, tc.want, flying)
		}
	}
}

// spendMinute runs TestCostCorrectionExact's minute on a gate of the config
// toml, each request done after a latency drawn from 0 to maxLat ms, and
// returns each tenant's real spend, admissions, and the most of its
// requests in flight at once (those in flight at the end are done after
// the minute, their cost in the spend).
func spendMinute(t *testing.T, toml string, maxLat int) (spent map[string]int64, admitted, most map[string]int) {
	t.Helper()
	g, clk := newGate(t, toml)
	c0, ok := g.ClassOf("g", "", adaptive.Default)
	if !ok {
		t.Fatal("no group g")
	}
	if h := c0.CostHeader(); h != "X-Cost" {
		t.Fatalf("CostHeader %q, want X-Cost", h)
	}
	type done struct {
		at   int
		c    Class
		p    Pass
		cost int64
	}
	var flying []done
	spent, admitted, most = map[string]int64{}, map[string]int{}, map[string]int{}
	now := map[string]int{}
	land := func(ms int) {
		kept := flying[:0]
		for _, d := range flying {
			if d.at > ms {
				kept = append(kept, d)
				continue
			}
			if !g.CorrectCost(d.c, 0, d.cost) {
				t.Fatal("CorrectCost refused")
			}
			d.p.Done(Success)
			now[d.c.Key]--
		}
		flying = kept
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for ms := 0; ms < 60_000; ms++ {
		land(ms)
		for _, key := range []string{"a", "b", "c"} {
			c := c0
			c.Key = key
			p, _, ok := g.EnterClass(context.Background(), c)
			if !ok {
				continue
			}
			cost := 1 + rng.Int64N(100)
			flying = append(flying, done{ms + rng.IntN(maxLat+1), c, p, cost})
			spent[key] += cost
			admitted[key]++
			now[key]++
			most[key] = max(most[key], now[key])
		}
		land(ms)
		clk.Advance(time.Millisecond)
	}
	land(math.MaxInt)
	return spent, admitted, most
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
