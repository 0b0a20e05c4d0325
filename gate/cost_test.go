package gate

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// costGroup is a fixed window of 10 units and 2 slots: a request's cost is
// spent at the rate stage, one slot at the concurrency stage.
const costGroup = `
[[group]]
name = "g"
  [group.rate]
  algorithm = "fixed_window"
  limit = 10
  window = "1m"
  [group.concurrency]
  law = "fixed"
  limit = 2
  [group.queue]
  max = 0
`

func TestEnterClassCostSpendsCostAndOneSlot(t *testing.T) {
	g, _ := newGate(t, costGroup)
	c, ok := g.ClassOf("g", "", adaptive.Default)
	if !ok {
		t.Fatal("no group g")
	}
	ctx := context.Background()
	a, rej, ok := g.EnterClassCost(ctx, c, 6)
	if !ok {
		t.Fatalf("cost 6 of 10: refused (%v)", rej.Reason)
	}
	if in := g.testGroup(t, "g").conc.InFlight(); in != 1 {
		t.Fatalf("in flight %d after one pass of cost 6, want 1 slot", in)
	}
	if _, rej, ok := g.EnterClassCost(ctx, c, 5); ok || rej.Reason != adaptive.RejectRate || rej.Rate.Remaining != 4 {
		t.Fatalf("cost 5 with 4 left: ok=%v %v remaining %d, want a rate refusal with 4 left", ok, rej.Reason, rej.Rate.Remaining)
	}
	b, rej, ok := g.EnterClassCost(ctx, c, 0) // the group's cost: 1
	if !ok {
		t.Fatalf("cost 0 (the group's 1) with 4 left: refused (%v)", rej.Reason)
	}
	if _, rej, ok := g.EnterClassCost(ctx, c, 1); ok || rej.Reason != adaptive.RejectConcurrency {
		t.Fatalf("third pass with 2 slots: ok=%v %v, want a concurrency refusal", ok, rej.Reason)
	}
	a.Done(Success)
	b.Done(Success)
	// 10 - 6 - 1 - 1 (the refused third spent its unit at the rate stage).
	if _, rej, ok := g.EnterClassCost(ctx, c, 3); ok || rej.Rate.Remaining != 2 {
		t.Fatalf("cost 3 with 2 left: ok=%v remaining %d, want refused with 2 left", ok, rej.Rate.Remaining)
	}
}

func TestAllowRateIsTheRateStageAlone(t *testing.T) {
	g, clk := newGate(t, costGroup)
	c, _ := g.ClassOf("g", "", adaptive.Default)
	for i, want := range []int64{7, 4} { // 10 - 3, then - 3 more
		res, pol, _, ok := g.AllowRate(c, 3)
		if !ok || res.Remaining != want || pol.Quota != 10 {
			t.Fatalf("call %d: ok=%v remaining %d quota %d, want allowed, %d left of 10", i, ok, res.Remaining, pol.Quota, want)
		}
	}
	if in := g.testGroup(t, "g").conc.InFlight(); in != 0 {
		t.Fatalf("in flight %d: AllowRate takes no slot", in)
	}
	res, pol, rej, ok := g.AllowRate(c, 5)
	if ok || rej.Reason != adaptive.RejectRate || rej.Status() != 429 || rej.RetryAfter <= 0 || res.Allowed || pol.Quota != 10 {
		t.Fatalf("cost 5 with 4 left: ok=%v %v/%d retry %v, want a rate rejection", ok, rej.Reason, rej.Status(), rej.RetryAfter)
	}
	if st, _ := g.Group("g"); st.Rejected[adaptive.RejectRate] != 1 {
		t.Fatalf("rate rejections counted %d, want 1", st.Rejected[adaptive.RejectRate])
	}
	clk.Advance(time.Minute)
	if res, _, _, ok := g.AllowRate(c, 0); !ok || res.Remaining != 9 {
		t.Fatalf("next window, the group's cost: ok=%v remaining %d, want 9", ok, res.Remaining)
	}
}

func TestAllowRateWithoutARateAllowsAll(t *testing.T) {
	g, _ := newGate(t, "[[group]]\nname = \"g\"\n")
	c, _ := g.ClassOf("g", "", adaptive.Default)
	res, pol, _, ok := g.AllowRate(c, 1000)
	if !ok || !res.Allowed || pol.Quota != 0 {
		t.Fatalf("no rate limit: ok=%v %+v %+v, want allowed with no policy", ok, res, pol)
	}
}
