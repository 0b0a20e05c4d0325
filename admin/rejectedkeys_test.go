package admin

import (
	"fmt"
	"net/http"
	"testing"
)

// TestGroupShowsRejectedKeys: /v1/groups/{name} names the keys the group
// rejects most, with their counts and the reason, most first
// (rejected_keys); with its rate rule in shadow, the keys it would have
// refused, in shadow.would_reject_keys, and none in rejected_keys.
func TestGroupShowsRejectedKeys(t *testing.T) {
	for _, mode := range []string{"enforce", "shadow"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, `
[upstream]
url = "http://127.0.0.1:9"

[[group]]
name = "api"
key = "header:X-Tenant"
  [group.rate]
  rate = 0.001
  burst = 1
  mode = "`+mode+`"
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
			counting, other := g.RejectedKeys, g.Shadow.RejectedKeys
			st := f.gate.Groups()[0]
			skipped := st.RejectedKeysSkipped
			if mode == "shadow" {
				counting, other = other, counting
				skipped = st.Shadow.RejectedKeysSkipped
			}
			// The summary skips a rejection rather than wait for a reader
			// (topk.Summary.Add): the admin server's history sampler reads
			// the group's status while the requests run, and once in a few
			// hundred runs it was reading at a rejection.
			if skipped == 0 {
				if got := fmt.Sprintf("%+v", counting); got != "[{Key:greedy Count:12 Error:0 Reason:rate} {Key:calm Count:2 Error:0 Reason:rate}]" {
					t.Errorf("%s: the keys refused (or, in shadow, that would be): %s", mode, got)
				}
			} else if len(counting) != 2 || counting[0].Key != "greedy" || counting[1].Key != "calm" ||
				counting[0].Count+counting[1].Count+skipped != 14 || counting[0].Count < 12-skipped || counting[1].Count < 2-min(skipped, 2) {
				t.Errorf("%s: %d rejections skipped, and the keys refused (or, in shadow, that would be): %+v", mode, skipped, counting)
			}
			if other == nil || len(other) != 0 {
				t.Errorf("%s: the other list %#v, want [] (never null)", mode, other)
			}
		})
	}
}
