package admin

import (
	"fmt"
	"net/http"
	"testing"
)

// TestGroupShowsRejectedKeys: /v1/groups/{name} names the keys the group
// rejects most, with their counts and the reason, most first; a group
// without a key shows none.
func TestGroupShowsRejectedKeys(t *testing.T) {
	f := newFixture(t, `
[upstream]
url = "http://127.0.0.1:9"

[[group]]
name = "api"
key = "header:X-Tenant"
  [group.rate]
  rate = 0.001
  burst = 1
  [group.concurrency]
  law = "fixed"
  limit = 100
`)
	for tenant, n := range map[string]int{"greedy": 13, "calm": 3} {
		for range n {
			r, _ := http.NewRequest(http.MethodGet, "http://sluice/", nil)
			r.Header.Set("X-Tenant", tenant)
			if p, _, ok := f.gate.Enter(r); ok {
				p.Done(0)
			}
		}
	}
	g := f.group(t, "api")
	if got := fmt.Sprintf("%+v", g.RejectedKeys); got != "[{Key:greedy Count:12 Error:0 Reason:rate} {Key:calm Count:2 Error:0 Reason:rate}]" {
		t.Errorf("rejected keys %s", got)
	}
}
