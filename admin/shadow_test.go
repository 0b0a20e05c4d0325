package admin

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/gate/spec"
)

const shadowConfig = `
[upstream]
url = "http://127.0.0.1:9"

[[group]]
name = "edge"
mode = "shadow"
match = { path_prefix = "/edge/" }
  [group.concurrency]
  law = "aimd"
  initial = 4
  max = 4
  [group.targets]
  latency = "1s"
  [group.queue]
  max = 0

[[group]]
name = "rest"
`

// TestShadowCountsAgree: 12 requests at once in a shadowed group of limit 4
// are all admitted; the 8 beyond the limit are would-be "concurrency"
// rejections, the same 8 in sluice_decisions_total, /v1/groups,
// /v1/groups/edge and the gate's read-out, with the why line saying so; a
// PATCH of the mode to enforce keeps the limit, and the group then refuses.
func TestShadowCountsAgree(t *testing.T) {
	f := newFixture(t, shadowConfig)
	var passes []gate.Pass
	for range 12 {
		r, _ := http.NewRequest(http.MethodGet, "http://sluice/edge/x", nil)
		p, rej, ok := f.gate.Enter(r)
		if !ok {
			t.Fatalf("shadowed group refused: %v", rej.Reason)
		}
		passes = append(passes, p)
	}
	if g := f.group(t, "edge"); g.InFlight != 12 || g.Shadow.Beyond != 8 || g.Limit != 4 {
		t.Errorf("in flight %d (beyond %d), limit %d; want 12 (8), 4", g.InFlight, g.Shadow.Beyond, g.Limit)
	}
	for i := range passes {
		passes[i].DoneAfter(gate.Success, 10*time.Millisecond)
	}
	f.tick(250 * time.Millisecond)

	st, _ := f.gate.Group("edge")
	g := f.group(t, "edge")
	var all api.Groups
	if err := json.Unmarshal(f.get(t, "/v1/groups").body, &all); err != nil {
		t.Fatal(err)
	}
	list := all.Groups
	conc := adaptive.RejectConcurrency.String()
	if st.Shadow.Rejected[adaptive.RejectConcurrency] != 8 || g.Shadow.WouldReject != 8 || g.Shadow.ByReason[conc] != 8 ||
		len(list) != 2 || list[0].Shadow.ByReason[conc] != 8 || g.Requests.Rejected != 0 || g.Mode != spec.ModeShadow {
		t.Fatalf("would-be: gate %d, group %+v, list %+v; rejected %d; want 8 everywhere, none rejected",
			st.Shadow.Rejected[adaptive.RejectConcurrency], g.Shadow, list[0].Shadow, g.Requests.Rejected)
	}
	if want := "shadow mode: admitting every request; would have refused 8 concurrency"; g.Shadow.Line != want {
		t.Errorf("line %q, want %q", g.Shadow.Line, want)
	}
	m := metricText(t, f.srv.Registry(), "sluice_decisions_total")
	for _, line := range []string{
		`sluice_decisions_total{decision="shadow_rejected",group="edge",outcome="",reason="concurrency"} 8`,
		`sluice_decisions_total{decision="admitted",group="edge",outcome="success",reason=""} 12`,
		`sluice_decisions_total{decision="rejected",group="edge",outcome="",reason="concurrency"} 0`,
	} {
		if !strings.Contains(m, line) {
			t.Errorf("metrics lack %s:\n%s", line, m)
		}
	}

	if a := f.patch(t, "edge", `{"mode": "shadw"}`); a.status != http.StatusUnprocessableEntity || !strings.Contains(string(a.body), `"field": "mode"`) {
		t.Errorf("PATCH mode shadw: %d %s, want 422 naming mode", a.status, a.body)
	}
	if a := f.patch(t, "edge", `{"mode": "enforce"}`); a.status != http.StatusOK {
		t.Fatalf("PATCH mode enforce: %d %s", a.status, a.body)
	}
	after := f.group(t, "edge")
	if after.Mode != spec.ModeEnforce || after.Limit != g.Limit || after.Override == nil {
		t.Fatalf("after PATCH: mode %q, limit %d (was %d), override %+v", after.Mode, after.Limit, g.Limit, after.Override)
	}
	passes = passes[:0]
	refused := 0
	for range 6 {
		r, _ := http.NewRequest(http.MethodGet, "http://sluice/edge/x", nil)
		if p, _, ok := f.gate.Enter(r); ok {
			passes = append(passes, p)
		} else {
			refused++
		}
	}
	for i := range passes {
		passes[i].DoneAfter(gate.Success, time.Millisecond)
	}
	if refused != 2 {
		t.Errorf("enforcing at limit 4: %d of 6 refused, want 2", refused)
	}
}
