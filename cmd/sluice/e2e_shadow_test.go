package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/admin/api"
)

// TestE2EShadowThenEnforce: the real binary with a rate rule of 0.01/s in
// shadow mode answers 200 to every request and reports the would-be
// rejections in /v1/groups/r and /metrics; a reload that only sets the mode
// to "enforce" leaves the group running (unchanged) and the next request
// over the quota is refused 429.
func TestE2EShadowThenEnforce(t *testing.T) {
	up := startUpstream(t)
	dir := t.TempDir()
	conf := func(mode string) string {
		return prelude + `
[[group]]
name = "r"
match = { path_prefix = "/r" }
mode = "` + mode + `"
  [group.rate]
  rate = 0.01
  [group.concurrency]
  law = "fixed"
  limit = 100
` + noResources + catchAll
	}
	path := writeConfig(t, dir, up.url, conf("shadow"))
	s := startSluice(t, path)
	admin := "http://" + str(s.log.wait(t, "the admin line", message("admin API, metrics and dashboard"))["addr"])
	c := client(t)
	for i := range 4 {
		if r := do(c, "GET", s.url("/r")); r.status != 200 {
			t.Fatalf("request %d in shadow: %d, want 200", i, r.status)
		}
	}
	r := do(c, "GET", admin+"/v1/groups/r")
	var g api.Group
	if err := json.Unmarshal([]byte(r.body), &g); err != nil || r.status != 200 {
		t.Fatalf("/v1/groups/r: %d %v %s", r.status, err, r.body)
	}
	if g.Mode != "shadow" || g.Shadow.ByReason["rate"] != 3 || g.Requests.Rejected != 0 {
		t.Fatalf("/v1/groups/r: mode %q, shadow %+v, rejected %d; want shadow, 3 would-be rate, 0", g.Mode, g.Shadow, g.Requests.Rejected)
	}
	m := do(c, "GET", admin+"/metrics")
	if want := `sluice_decisions_total{decision="shadow_rejected",group="r",outcome="",reason="rate"} 3`; !strings.Contains(m.body, want) {
		t.Errorf("/metrics lacks %s", want)
	}

	writeConfig(t, dir, up.url, conf("enforce"))
	s.signal(t, syscall.SIGHUP)
	s.log.wait(t, "the reload", message("config reloaded", "unchanged", "r,all", "by", "SIGHUP", "settings", "r: mode shadow→enforce"))
	if r := do(c, "GET", s.url("/r")); r.status != 429 || r.header.Get("Sluice-Reason") != "rate" {
		t.Fatalf("/r enforced: %d %q, want 429 rate", r.status, r.header.Get("Sluice-Reason"))
	}
}
