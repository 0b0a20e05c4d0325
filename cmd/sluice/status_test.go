package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admin"
	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
)

// adminServer runs a gate with two groups and its admin API on loopback,
// after some traffic and a control tick, and returns the API's URL.
func adminServer(t *testing.T) string {
	t.Helper()
	cfg, err := configs.Parse("sluice.toml", []byte(`
[upstream]
url = "http://127.0.0.1:9"
[[group]]
name = "api"
match = { path_prefix = "/api/" }
  [group.concurrency]
  law = "aimd"
  initial = 10
  [group.targets]
  latency = "200ms"
[[group]]
name = "batch"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 0
`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources, ConfigSource: "sluice.toml"})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		p, _, ok := g.Enter(httptest.NewRequest(http.MethodGet, "/api/users", nil))
		if !ok {
			t.Fatal("rejected")
		}
		p.DoneAfter(gate.Success, 30*time.Millisecond)
	}
	p, _, _ := g.Enter(httptest.NewRequest(http.MethodGet, "/api/users", nil))
	p.DoneAfter(gate.Dropped, 0)
	hold, _, _ := g.Enter(httptest.NewRequest(http.MethodGet, "/batch", nil))
	for range 3 {
		g.Enter(httptest.NewRequest(http.MethodGet, "/batch", nil)) // over the limit: rejected
	}
	hold.Done(gate.Success)
	g.Tick(time.Now())

	srv, err := admin.New(admin.Params{Gate: g, Config: cfg, Listen: "127.0.0.1:0", Token: "0123456789abcdef0123", Version: "v9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	c := g.Config().Group("batch").Clone()
	c.Queue.Max = 2
	if err := g.Override(c); err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return "http://" + ln.Addr().String()
}

func TestStatusTable(t *testing.T) {
	url := adminServer(t)
	code, out, errOut := runArgs("status", "-admin", url)
	if code != exitOK || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "sluice v9.9.9 · up ") || !strings.Contains(lines[0], "config sluice.toml (") || !strings.HasSuffix(lines[0], "· ready") {
		t.Errorf("first line %q", lines[0])
	}
	if want := []string{"cpu unknown (no resource sampler)", "memory unknown (no resource sampler)", "cpu pressure unknown (no resource sampler)"}; !slices.Equal(lines[1:4], want) {
		t.Errorf("resources lines %q, want %q", lines[1:4], want)
	}
	header := lines[5]
	for _, col := range []string{"GROUP", "LAW", "LIMIT", "IN FLIGHT", "QUEUE", "RATE/S", "P50", "P99", "TARGET", "THRU/S", "REJECTED", "LAST CHANGE"} {
		if !strings.Contains(header, col) {
			t.Errorf("header %q lacks %s", header, col)
		}
	}
	api, batch := strings.Fields(lines[6]), strings.Fields(lines[7])
	if len(api) < 12 || api[0] != "api" || api[1] != "aimd" || api[2] != "9" || api[3] != "1–1000" || api[7] != "30ms" ||
		api[8] != "30ms" || api[9] != "p99" || api[11] != "200ms" {
		t.Errorf("api row %q", lines[6])
	}
	if !strings.Contains(lines[6], "10 → 9: drops") {
		t.Errorf("api row lacks the law's last change and reason: %q", lines[6])
	}
	if len(batch) < 11 || batch[0] != "batch*" || batch[1] != "fixed" || batch[2] != "1" || batch[5] != "0/2" ||
		!strings.Contains(lines[7], "3 (concurrency 3)") {
		t.Errorf("batch row %q", lines[7])
	}
	if !strings.Contains(out, "* runtime override in force:\n  batch: queue.max 0 → 2\n") {
		t.Errorf("no override note:\n%s", out)
	}
}

func TestStatusJSON(t *testing.T) {
	url := adminServer(t)
	code, out, errOut := runArgs("status", "-admin", url+"/", "-json")
	if code != exitOK || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	var v struct {
		Status struct {
			Version string `json:"version"`
		} `json:"status"`
		Groups []struct {
			Name  string `json:"name"`
			Limit int    `json:"limit"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Status.Version != "v9.9.9" || len(v.Groups) != 2 || v.Groups[0].Name != "api" || v.Groups[1].Limit != 1 {
		t.Errorf("JSON %+v", v)
	}
}

func TestStatusErrors(t *testing.T) {
	// A port nothing listens on: a fast, clear failure.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	code, out, errOut := runArgs("status", "-admin", dead)
	if code != exitError || out != "" || !strings.Contains(errOut, "cannot reach the admin API at "+dead+": nothing listens there") {
		t.Errorf("dead endpoint: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runArgs("status", "-admin", "unix:///nonexistent/sluice.sock")
	if code != exitError || !strings.Contains(errOut, "nothing listens there") {
		t.Errorf("missing socket: code %d, stderr %q", code, errOut)
	}

	// An endpoint that answers too late.
	stall := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(stall)
	code, _, errOut = runArgs("status", "-admin", slow.URL, "-timeout", "100ms")
	if code != exitError || !strings.Contains(errOut, "did not answer in time") {
		t.Errorf("slow endpoint: code %d, stderr %q", code, errOut)
	}

	// An API that wants a token, and one that is not sluice's.
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error": "admin: this needs \"Authorization: Bearer TOKEN\""}`))
	}))
	defer auth.Close()
	code, _, errOut = runArgs("status", "-admin", auth.URL)
	if code != exitError || !strings.Contains(errOut, "401 Unauthorized: admin: this needs") || !strings.Contains(errOut, "-token-file") {
		t.Errorf("401: code %d, stderr %q", code, errOut)
	}
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }))
	defer html.Close()
	code, _, errOut = runArgs("status", "-admin", html.URL)
	if code != exitError || !strings.Contains(errOut, "not JSON") {
		t.Errorf("not sluice: code %d, stderr %q", code, errOut)
	}

	for _, args := range [][]string{{"status", "extra"}, {"status", "-x"}, {"status", "-admin", "ftp://x"}, {"status", "-timeout", "0s"},
		{"status", "-admin", "unix://relative.sock"}} {
		if code, _, errOut := runArgs(args...); code != exitUsage || !strings.Contains(errOut, "sluice status") {
			t.Errorf("%v: code %d, stderr %q", args, code, errOut)
		}
	}
}

func TestStatusTokenFile(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	tok := writeFile(t, "token", "  secret-token-0123456789\n")
	if code, _, errOut := runArgs("status", "-admin", srv.URL, "-token-file", tok, "-json"); code != exitOK {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	if got != "Bearer secret-token-0123456789" {
		t.Errorf("Authorization %q", got)
	}
}

// TestStatusRedis: with global quotas, a line tells the link to Redis, and
// the rate column marks a global quota.
func TestStatusRedis(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 10, 0, time.UTC)
	var st api.Status
	var gs api.Groups
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(json.Unmarshal([]byte(`{"version": "v1", "ready": true, "redis": {"mode": "fallback",
		"since": "2025-03-01T12:00:00Z", "next_probe": "2025-03-01T12:00:12Z",
		"last_error": "dial tcp 10.0.0.1:6379: connect: connection refused",
		"nodes": {"configured": 3, "observed": 2, "share": 3}}}`), &st))
	must(json.Unmarshal([]byte(`{"groups": [{"name": "api", "law": "fixed", "limit": 5,
		"rate": {"per_second": 300, "managed": false, "global": {"mode": "fallback"}}}]}`), &gs))
	var b strings.Builder
	printStatus(&b, &st, gs.Groups, now)
	lines := strings.Split(b.String(), "\n")
	want := "redis fallback since " + st.Redis.Since.Local().Format("15:04:05") +
		" (dial tcp 10.0.0.1:6379: connect: connection refused), next probe in 2s · nodes 3 (3 configured, 2 seen)"
	if lines[4] != want {
		t.Errorf("redis line %q\nwant       %q", lines[4], want)
	}
	if row := strings.Fields(lines[7]); len(row) < 8 || row[0] != "api" || row[6] != "300" || row[7] != "(global)" {
		t.Errorf("api row %q", lines[7])
	}
}

// TestStatusCircuit: a line tells the upstream's circuit breaker: its state,
// and once it changed, since when and why; none without a breaker.
func TestStatusCircuit(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 1, 0, 0, time.UTC)
	for _, tc := range []struct{ json, want string }{
		{`{"circuit": {"state": "open", "since": "2025-03-01T12:00:30Z", "reason": "5 failures in a row (last: connect)"}}`,
			"upstream circuit open since " + time.Date(2025, 3, 1, 12, 0, 30, 0, time.UTC).Local().Format("15:04:05") +
				" (30s ago): 5 failures in a row (last: connect)"},
		{`{"circuit": {"state": "half_open", "since": "2025-03-01T12:00:59Z", "reason": "cooldown of 5s over: 3 probes let through"}}`,
			"upstream circuit half-open since " + time.Date(2025, 3, 1, 12, 0, 59, 0, time.UTC).Local().Format("15:04:05") +
				" (1s ago): cooldown of 5s over: 3 probes let through"},
		{`{"circuit": {"state": "closed", "since": "2025-03-01T11:00:00Z", "reason": ""}}`, "upstream circuit closed"},
		{`{"circuit": null}`, ""},
	} {
		var st api.Status
		if err := json.Unmarshal([]byte(tc.json), &st); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		printStatus(&b, &st, nil, now)
		got := ""
		for _, l := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(l, "upstream circuit") {
				got = l
			}
		}
		if got != tc.want {
			t.Errorf("%s: circuit line %q, want %q", tc.json, got, tc.want)
		}
	}
}

// TestStatusSources: each guarded signal's line says where it comes from,
// or why it has no source, once.
func TestStatusSources(t *testing.T) {
	var st api.Status
	if err := json.Unmarshal([]byte(`{"version": "v1", "ready": true, "resources": {
		"cpu": {"value": 0.54, "known": true}, "cpu_from": "cgroup",
		"cpu_source": "cgroup v2 /sys/fs/cgroup/kubepods/pod1 (cpu.max 2 cores)",
		"memory": {"value": null, "known": false, "reason": "none: no memory limit on sluice's cgroup /x or above"},
		"memory_source": "none: no memory limit on sluice's cgroup /x or above",
		"cpu_pressure": {"value": null, "known": false, "reason": "PSI not available: read failed"}, "cpu_pressure_from": "cgroup",
		"cpu_pressure_source": "psi some avg10 of cgroup v2 /sys/fs/cgroup/kubepods/pod1"}}`), &st); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printStatus(&b, &st, nil, time.Now())
	want := []string{
		"cpu 54% · cgroup v2 /sys/fs/cgroup/kubepods/pod1 (cpu.max 2 cores)",
		"memory unknown · none: no memory limit on sluice's cgroup /x or above",
		"cpu pressure unknown (PSI not available: read failed) · psi some avg10 of cgroup v2 /sys/fs/cgroup/kubepods/pod1",
	}
	if got := strings.Split(b.String(), "\n")[1:4]; !slices.Equal(got, want) {
		t.Errorf("resource lines\n%q\nwant\n%q", got, want)
	}
}

// TestStatusRefusedReload: a reload refused after the config in force was
// loaded gets a line with who asked and the error; one refused before the
// last load is history, and gets none.
func TestStatusRefusedReload(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 1, 0, 0, time.UTC)
	const refused = `"refused_reload": {"at": "2025-03-01T12:00:30Z", "by": "SIGHUP", "error": "sluice.toml:3: concurrency.limit: must be at least 1"}`
	for _, tc := range []struct{ json, want string }{
		{`{"config": {"loaded": "2025-03-01T12:00:00Z", ` + refused + `}}`,
			"reload refused 30s ago (by SIGHUP), the running config keeps serving: sluice.toml:3: concurrency.limit: must be at least 1"},
		{`{"config": {"loaded": "2025-03-01T12:00:40Z", ` + refused + `}}`, ""},
		{`{"config": {"loaded": "2025-03-01T12:00:40Z", "refused_reload": null}}`, ""},
	} {
		var st api.Status
		if err := json.Unmarshal([]byte(tc.json), &st); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		printStatus(&b, &st, nil, now)
		got := ""
		for _, l := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(l, "reload refused") {
				got = l
			}
		}
		if got != tc.want {
			t.Errorf("%s: line %q, want %q", tc.json, got, tc.want)
		}
	}
}
