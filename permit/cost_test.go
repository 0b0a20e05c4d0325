package permit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/permit/permitclient"
)

// bulkGroup: 10 units, refilled at one every 1000 s.
const bulkGroup = `
[[group]]
name = "bulk"
  [group.concurrency]
  law = "fixed"
  limit = 10
  [group.rate]
  rate = 0.001
  burst = 10
`

// TestReleaseCorrectsTheCost: a release that declares the work's real cost
// charges the group's rate stage the difference from what the grant spent
// (a grant of cost 2 whose work cost 8 leaves 2 of 10 units), or gives it
// back (a grant of cost 5 whose work cost 1 gives 4 back); a repeated
// release corrects nothing; a negative cost is refused.
func TestReleaseCorrectsTheCost(t *testing.T) {
	e := newEnv(t, bulkGroup, permit.Params{})
	g := e.grant(t, permit.Request{Group: "bulk", Cost: 2})
	if r, err := e.svc.ReleaseCostIn(0, g.ID, gate.Success, permit.Unmeasured, 8); err != nil || r != permit.Released {
		t.Fatalf("release with cost 8: %v, %v", r, err)
	}
	if _, rej, _ := e.svc.Acquire(context.Background(), permit.Request{Group: "bulk", Cost: 3}); rej.Reason != adaptive.RejectRate {
		t.Fatalf("cost 3 with 2 of 10 left: %q, want rate", rej.Reason)
	}
	if r, _ := e.svc.ReleaseCostIn(0, g.ID, gate.Success, permit.Unmeasured, 0); r != permit.AlreadyReleased {
		t.Fatalf("second release: %v", r)
	}
	if _, rej, _ := e.svc.Acquire(context.Background(), permit.Request{Group: "bulk", Cost: 3}); rej.Reason != adaptive.RejectRate {
		t.Fatalf("a repeated release gave units back: %q", rej.Reason)
	}
	if _, err := e.svc.ReleaseCostIn(0, g.ID, gate.Success, permit.Unmeasured, -5); err == nil {
		t.Fatal("a cost of -5 taken")
	}
	e.grant(t, permit.Request{Group: "bulk", Cost: 2}) // the 2 left

	f := newEnv(t, bulkGroup, permit.Params{})
	a := f.grant(t, permit.Request{Group: "bulk", Cost: 5})
	f.grant(t, permit.Request{Group: "bulk", Cost: 5})
	if _, rej, _ := f.svc.Acquire(context.Background(), permit.Request{Group: "bulk", Cost: 4}); rej.Reason != adaptive.RejectRate {
		t.Fatalf("10 of 10 spent: %v, want rate", rej.Reason)
	}
	if r, err := f.svc.ReleaseCostIn(0, a.ID, gate.Success, permit.Unmeasured, 1); err != nil || r != permit.Released {
		t.Fatalf("release with cost 1: %v, %v", r, err)
	}
	f.grant(t, permit.Request{Group: "bulk", Cost: 4}) // the 4 given back
}

// TestClientDeclaresTheCost: permitclient's DoneCost, over gRPC and HTTP,
// corrects the grant's charge as ReleaseCostIn does: a permit of cost 1
// whose work cost 9 leaves 1 of 10 units.
func TestClientDeclaresTheCost(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			e := newEnv(t, `
[[group]]
name = "bulk"
  [group.rate]
  rate = 0.001
  burst = 10
`, permit.Params{})
			c := serve(t, e.svc, "tcp").client(t, tr.tr)
			ctx := context.Background()
			p, err := c.Acquire(ctx, permitclient.Request{Group: "bulk"})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.DoneCost(permitclient.Success, time.Millisecond, 9); err != nil {
				t.Fatal(err)
			}
			var refused *permitclient.RefusedError
			if _, err := c.Acquire(ctx, permitclient.Request{Group: "bulk", Cost: 2}); !errors.As(err, &refused) || refused.Reason != "rate" {
				t.Fatalf("cost 2 with 1 of 10 left: %v, want refused for rate", err)
			}
			p, err = c.Acquire(ctx, permitclient.Request{Group: "bulk", Cost: 1})
			if err != nil {
				t.Fatalf("cost 1 with 1 left: %v", err)
			}
			if err := p.DoneCost(permitclient.Success, time.Millisecond, -1); err == nil {
				t.Error("a cost of -1 sent")
			}
		})
	}
}
