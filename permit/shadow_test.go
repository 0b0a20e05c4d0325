package permit_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/permit/permitclient"
)

// TestShadowedGrantSaysWhy: a group in shadow mode grants a permit beyond
// its limit, and the grant says what enforcement would have done
// (concurrency, with no queue), over every transport; one within the limit
// says nothing.
func TestShadowedGrantSaysWhy(t *testing.T) {
	eachWay(t, func(t *testing.T, network string, tr permitclient.Transport) {
		e := newEnv(t, `
[[group]]
name = "jobs"
mode = "shadow"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 0
`, permit.Params{})
		c := serve(t, e.svc, network).client(t, tr)
		first, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs"})
		if err != nil || first.Shadowed != "" {
			t.Fatalf("first permit: %+v, %v; want granted, not shadowed", first, err)
		}
		second, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs"})
		if err != nil || second.Shadowed != "concurrency" {
			t.Fatalf("second permit: shadowed %q, %v; want granted, shadowed \"concurrency\"", second.Shadowed, err)
		}
		for _, p := range []permitclient.Permit{first, second} {
			if err := p.Done(permitclient.Success); err != nil {
				t.Fatal(err)
			}
		}
	})
}
