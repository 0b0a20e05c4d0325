package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admin/api"
)

// TestE2EAdmin: the real binary serves the admin API beside the proxy: the
// groups with their limits, Prometheus metrics (the gate's and the
// upstream's), readiness once the upstream answered, a PATCH that changes a
// running limit, and reloads (POST /v1/reload and SIGHUP) that go through the
// admin API, a bad one refused with the old config serving on.
func TestE2EAdmin(t *testing.T) {
	up := startUpstream(t)
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte(e2eAdminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := strings.Replace(prelude, "[admin]", "[admin]\ntoken_file = \""+token+"\"", 1) + `
[[group]]
name = "api"
match = { path_prefix = "/api" }
  [group.concurrency]
  law = "fixed"
  limit = 7
` + noResources + catchAll
	path := writeConfig(t, dir, up.url, config)
	s := startSluice(t, path)
	rec := s.log.wait(t, "the admin line", message("admin API, metrics and dashboard", "mutations", "true"))
	admin := "http://" + str(rec["addr"])
	c := client(t)

	if r := do(c, "GET", s.url("/api/x")); r.status != 200 {
		t.Fatalf("through sluice: %d %v", r.status, r.err)
	}
	// Ready once the upstream is known to answer: the startup probe's
	// connection or a proxied answer, whichever the daemon records first (a
	// proxied request is recorded when its exchange ends, which may be after
	// the client has read its answer).
	s.log.wait(t, "the upstream probe", message("upstream reachable"))
	if r := do(c, "GET", admin+"/readyz"); r.status != 200 {
		t.Fatalf("/readyz after the upstream answered: %d %s", r.status, r.body)
	}
	limitOf := func() float64 {
		t.Helper()
		r := do(c, "GET", admin+"/v1/groups/api")
		var g struct {
			Limit float64 `json:"limit"`
		}
		if r.status != 200 || json.Unmarshal([]byte(r.body), &g) != nil {
			t.Fatalf("GET /v1/groups/api: %d %s", r.status, r.body)
		}
		return g.Limit
	}
	if l := limitOf(); l != 7 {
		t.Fatalf("limit %v, want 7", l)
	}

	// The proxy finishes a request's pass just after its response went out,
	// so the scrape is repeated until the request shows (bounded by
	// waitLimit).
	scrapeUntil(t, c, admin,
		`sluice_concurrency_limit{group="api"} 7`,
		`sluice_requests_total{decision="admitted",group="api",reason="success"} 1`,
		`sluice_upstream_circuit_state{state="closed"} 1`,
		`sluice_request_duration_seconds_count{group="api",outcome="success"} 1`,
		`go_goroutines `,
	)

	patch := func(body string, auth bool) result {
		return sendJSON(c, "PATCH", admin+"/v1/groups/api", body, map[bool]string{true: e2eAdminToken}[auth])
	}
	if r := patch(`{"concurrency": {"limit": 3}}`, false); r.status != 401 {
		t.Fatalf("PATCH without the token: %d, want 401", r.status)
	}
	if r := patch(`{"concurrency": {"limit": 3}}`, true); r.status != 200 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	if l := limitOf(); l != 3 {
		t.Fatalf("limit after PATCH %v, want 3", l)
	}
	rec = s.log.wait(t, "the PATCH's line", message("group changed at runtime", "group", "api", "changed", "concurrency.limit 7→3",
		"request", "PATCH /v1/groups/api"))
	if by := str(rec["by"]); !strings.HasPrefix(by, "admin API from 127.0.0.1:") {
		t.Errorf("the PATCH's line says it came from %q", by)
	}

	reload := func() result { return sendJSON(c, "POST", admin+"/v1/reload", "{}", e2eAdminToken) }
	writeConfig(t, dir, up.url, strings.Replace(config, "limit = 7", "limit = -7", 1))
	if r := reload(); r.status != 422 || !strings.Contains(r.body, "concurrency.limit") {
		t.Fatalf("POST /v1/reload of a bad file: %d %s", r.status, r.body)
	}
	if l := limitOf(); l != 3 {
		t.Fatalf("limit after a refused reload %v, want the override's 3", l)
	}
	var st api.Status
	if r := do(c, "GET", admin+"/v1/status"); r.status != 200 || json.Unmarshal([]byte(r.body), &st) != nil {
		t.Fatalf("/v1/status: %d %s", r.status, r.body)
	}
	if rr := st.Config.RefusedReload; rr == nil || !strings.Contains(rr.Error, "concurrency.limit") || !strings.HasPrefix(rr.By, "admin API from") {
		t.Errorf("/v1/status after a refused reload: refused_reload %+v, want the error and who asked", rr)
	}

	writeConfig(t, dir, up.url, strings.Replace(config, "limit = 7", "limit = 9", 1))
	s.signal(t, syscall.SIGHUP)
	s.log.wait(t, "the reload through the admin API", message("config reloaded", "changed", "api", "overrides_cleared", "api",
		"by", "SIGHUP", "settings", "api: concurrency.limit 3→9"))
	if l := limitOf(); l != 9 {
		t.Fatalf("limit after SIGHUP %v, want the file's 9 (the override cleared)", l)
	}
	scrapeUntil(t, c, admin, `sluice_config_reloads_total{result="failure"} 1`, `sluice_config_reloads_total{result="success"} 1`)
	if n := strings.Count(s.log.String(), `"@message":"config reloaded"`); n != 1 {
		t.Errorf("one reload logged %d times:\n%s", n, s.log)
	}
}

// e2eAdminToken is TestE2EAdmin's bearer token.
const e2eAdminToken = "e2e-admin-token-0123456789"

// sendJSON sends body as JSON to url with method, with the bearer token
// when token is not "", and returns the answer.
func sendJSON(c *http.Client, method, url, body, token string) result {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, body: string(b)}
}

// scrapeUntil scrapes admin's /metrics until every wanted line is there, for
// at most waitLimit; each scrape waits for the one before it to finish.
func scrapeUntil(t *testing.T, c *http.Client, admin string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		m := do(c, "GET", admin+"/metrics")
		var missing []string
		for _, w := range want {
			if !strings.Contains(m.body, w) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics still lacks %q after %v:\n%s", missing, waitLimit, m.body)
		}
	}
}
