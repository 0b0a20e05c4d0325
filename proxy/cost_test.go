package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// costGroups: 100 units per tenant and per 1000 s, each request charged 1 at
// admission and then what its response's X-Cost says.
const costGroups = `
[[group]]
name = "c"
key = "header:X-Tenant"
  [group.rate]
  rate = 0.1
  burst = 100
  cost_header = "X-Cost"
`

// TestCostHeaderCorrectsTheRate: responses that declare a cost of 60 spend
// a tenant's 100 units in two requests (the second admitted on the one unit
// it needs at admission, then charged its 59 more), so the third is
// refused, rate; another tenant is untouched; a response whose X-Cost is no
// whole number costs its charge of 1 alone.
func TestCostHeaderCorrectsTheRate(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Cost", r.URL.Query().Get("cost"))
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(up.Close)
	_, base := startProxy(t, Params{Upstream: up.URL, Gate: testGate(t, costGroups)}, ServerParams{})
	c := newClient(t, false)
	get := func(tenant, cost string) (int, string) {
		req, _ := http.NewRequest("GET", base+"/x?cost="+cost, nil)
		req.Header.Set("X-Tenant", tenant)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Sluice-Reason")
	}
	for i, want := range []int{200, 200, 429} {
		if code, why := get("a", "60"); code != want {
			t.Fatalf("tenant a, request %d of cost 60: %d %s, want %d", i, code, why, want)
		}
	}
	if code, why := get("a", "60"); why != "rate" {
		t.Fatalf("tenant a over its quota: %d %q, want rate", code, why)
	}
	for i := range 50 {
		if code, _ := get("b", "many"); code != 200 {
			t.Fatalf("tenant b, request %d with a cost that is no number: %d, want 200 (it costs 1)", i, code)
		}
	}
}
