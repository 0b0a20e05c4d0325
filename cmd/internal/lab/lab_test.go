package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/load"
	"github.com/sluicehq/sluice/cmd/internal/lab/report"
	"github.com/sluicehq/sluice/cmd/internal/lab/scenario"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
)

// helperEnv makes the test binary a tiny reverse proxy with Prometheus
// metrics instead of running tests: the process a command contender
// starts in TestCommandContender.
const helperEnv = "SLUICE_LAB_TEST_PROXY"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperProxy(os.Args[1:]))
	}
	code := m.Run()
	if sluicePath != "" {
		os.RemoveAll(filepath.Dir(sluicePath))
	}
	os.Exit(code)
}

// helperProxy listens on 127.0.0.1:args[0] and forwards to args[1]; it
// reports a fixed limit of 42 and its in-flight count on /metrics.
func helperProxy(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "helper proxy: want PORT BACKEND")
		return 2
	}
	target, err := url.Parse(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var inflight atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(target)
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE helper_limit gauge\nhelper_limit{group=\"other\"} 7\nhelper_limit{group=\"api\",zone=\"a\"} 42\nhelper_inflight{group=\"api\"} %d\nhelper_rate{group=\"api\"} 1250.5\n", inflight.Load())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Add(-1)
		rp.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:"+args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &http.Server{Handler: mux}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		<-sig
		srv.Close()
	}()
	_ = srv.Serve(ln)
	return 0
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"port": "8080", "backend": "http://127.0.0.1:9", "listen": "listen {{port}}", "conf": "{{listen}}; upstream {{ backend }}"}
	got, err := expand("listen {{port}}; upstream {{ backend }}; server { x }", vars)
	if err != nil || got != "listen 8080; upstream http://127.0.0.1:9; server { x }" {
		t.Fatalf("expand = %q, %v", got, err)
	}
	if got, err := expand("{{conf}};", vars); err != nil || got != "listen 8080; upstream http://127.0.0.1:9;" {
		t.Fatalf("nested: %q, %v", got, err)
	}
	_, err = expand("{{prot}}", vars)
	if err == nil || !strings.Contains(err.Error(), "{{prot}}") || !strings.Contains(err.Error(), "backend, conf, listen, port") {
		t.Fatalf("unknown placeholder: %v", err)
	}
	vars["a"], vars["b"] = "x{{b}}", "y{{a}}"
	if _, err := expand("{{a}}", vars); err == nil || !strings.Contains(err.Error(), "nest more than 8 deep") {
		t.Fatalf("cycle: %v", err)
	}
}

func TestSelector(t *testing.T) {
	text := `# HELP sluice_concurrency_limit The limit.
# TYPE sluice_concurrency_limit gauge
sluice_concurrency_limit{group="web"} 10
sluice_concurrency_limit{group="api",law="target"} 37.5 1700000000000
sluice_concurrency_limit_total 99
sluice_inflight_requests{group="a\"pi"} 3
odd line without value
sluice_up 1
`
	for _, tc := range []struct {
		sel  string
		want float64
		ok   bool
	}{
		{`sluice_concurrency_limit{group="api"}`, 37.5, true},
		{`sluice_concurrency_limit`, 10, true},
		{`sluice_concurrency_limit{group="none"}`, 0, false},
		{`sluice_inflight_requests{group="a\"pi"}`, 3, true},
		{`sluice_up`, 1, true},
		{`sluice_down`, 0, false},
	} {
		sel, err := parseSelector(tc.sel)
		if err != nil {
			t.Fatalf("parseSelector(%q): %v", tc.sel, err)
		}
		got, ok := sel.find(text)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: %v, %v; want %v, %v", tc.sel, got, ok, tc.want, tc.ok)
		}
	}
	for _, bad := range []string{"", "{x=\"1\"}", "m{x=1}", "m{x=\"1\"", "m{x=\"1\"} extra", "m{=\"1\"}"} {
		if _, err := parseSelector(bad); err == nil {
			t.Errorf("parseSelector(%q) accepted", bad)
		}
	}
}

func FuzzSelector(f *testing.F) {
	f.Add(`m{a="b"}`, "m{a=\"b\",c=\"d\"} 1\n")
	f.Add(`m`, "# c\nm 2 3\n")
	f.Add(`m{a="\\"}`, "m{a=\"\\\\\"} NaN\n")
	f.Fuzz(func(t *testing.T, sel, text string) {
		s, err := parseSelector(sel)
		if err != nil {
			return
		}
		s.find(text)
	})
}

func TestLoadScenario(t *testing.T) {
	names := Scenarios()
	if len(names) < 9 {
		t.Fatalf("shipped scenarios: %v", names)
	}
	for _, n := range names {
		if _, err := LoadScenario(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if _, err := LoadScenario("nope"); err == nil || !strings.Contains(err.Error(), "shipped: ") {
		t.Errorf("unknown name: %v", err)
	}
	path := filepath.Join(t.TempDir(), "mine.toml")
	os.WriteFile(path, []byte("# Mine.\n[load]\nphases = [{ rate = \"10\", for = \"1s\" }]\n"), 0o644)
	if s, err := LoadScenario(path); err != nil || s.Name != "mine" {
		t.Errorf("by path: %v, %v", s, err)
	}
	if _, err := LoadScenario(filepath.Join(t.TempDir(), "missing.toml")); err == nil {
		t.Error("missing file loaded")
	}
}

// sluiceBinary builds cmd/sluice once for the tests that run it (into a
// temporary folder TestMain removes after the tests), without
// the race detector even under -race: the tests check the lab's handling
// of a real daemon, not the daemon's own races (its tests do), and a race
// build at 3×C would make the run slow on two cores.
func sluiceBinary(t *testing.T) string {
	t.Helper()
	sluiceOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-lab-test-")
		if err != nil {
			sluiceErr = err
			return
		}
		sluicePath = filepath.Join(dir, "sluice")
		out, err := exec.Command("go", "build", "-o", sluicePath, "github.com/sluicehq/sluice/cmd/sluice").CombinedOutput()
		if err != nil {
			sluiceErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if sluiceErr != nil {
		t.Fatal(sluiceErr)
	}
	return sluicePath
}

var (
	sluiceOnce sync.Once
	sluicePath string
	sluiceErr  error
)

// TestQuickStep is the CI-sized lab run: the shipped step scenario in its
// -quick form (about 6 s), through the real sluice binary with the target
// law, checked against its own report: every file is there, the numbers
// add up, and sluice's limit and in-flight count were read from its
// metrics while the load ran.
func TestQuickStep(t *testing.T) {
	s, err := LoadScenario("step")
	if err != nil {
		t.Fatal(err)
	}
	s = only(t, s, "target")
	out := t.TempDir()
	var progress strings.Builder
	r := &Runner{Out: out, Quick: true, Progress: &progress, Vars: map[string]string{"sluice": sluiceBinary(t)}}
	if err := r.Check([]*scenario.Scenario{s}); err != nil {
		t.Fatal(err)
	}
	outcomes, err := r.Run(context.Background(), []*scenario.Scenario{s})
	if err != nil {
		t.Fatal(err)
	}
	if len(outcomes) != 1 || len(outcomes[0].Runs) != 1 {
		t.Fatalf("outcomes %+v", outcomes)
	}
	dir := filepath.Join(out, "step")
	for _, f := range []string{report.SummaryFile, "target.json", report.GoodputPlot, report.TimelinePlot("target"), "target/sluice.toml", "target/target.log"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "target.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run report.Run
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	checkRun(t, run)
	polled := 0
	for _, smp := range run.Samples {
		if smp.Limit != nil && smp.Inflight != nil {
			polled++
			if *smp.Limit < 1 || *smp.Limit > 1000 || *smp.Inflight < 0 {
				t.Errorf("sample %+v: limit or in-flight out of range", smp)
			}
		}
	}
	if polled == 0 {
		t.Error("sluice's limit and in-flight were never read from its metrics")
	}
	if m := run.Metrics; m.PeakRSSContender == nil || *m.PeakRSSContender <= 0 || m.CPUPerReqProxy == nil {
		t.Errorf("sluice's process not measured: %+v", m)
	}
	// The SLO of the scenario is the latency target sluice ran with.
	cfg, _ := os.ReadFile(filepath.Join(dir, "target", "sluice.toml"))
	if !strings.Contains(string(cfg), `latency  = "300ms"`) || !strings.Contains(string(cfg), `law = "target"`) {
		t.Errorf("sluice.toml:\n%s", cfg)
	}
	md, _ := os.ReadFile(filepath.Join(dir, report.SummaryFile))
	if !strings.Contains(string(md), "| target | ") || !strings.Contains(string(md), "# step (-quick)") {
		t.Errorf("summary:\n%s", md)
	}
	if !strings.Contains(progress.String(), "step/target: offered ") {
		t.Errorf("progress output %q", progress.String())
	}
}

// only narrows s to the named contender.
func only(t *testing.T, s *scenario.Scenario, name string) *scenario.Scenario {
	t.Helper()
	c := *s
	c.Contenders = nil
	for _, spec := range s.Contenders {
		if spec.Name == name {
			c.Contenders = append(c.Contenders, spec)
		}
	}
	if len(c.Contenders) != 1 {
		t.Fatalf("%s has no contender %q", s.Name, name)
	}
	return &c
}

// mostInFlight bounds how many requests a scenario's load can have in flight
// through sluice at once: every one arrived within the load's timeout plus
// upstreamTimeout, as a request whose caller gave up keeps its slot until the
// upstream answers, for at most upstreamTimeout more; at the schedule's peak
// rate, req/s.
func mostInFlight(s *scenario.Scenario, upstreamTimeout time.Duration) float64 {
	timeout := time.Duration(s.Load.Timeout)
	if timeout == 0 {
		timeout = load.DefaultTimeout
	}
	var peak float64
	for _, p := range s.Schedule() {
		peak = max(peak, p.From, p.To)
	}
	return peak * (timeout + upstreamTimeout).Seconds()
}

// TestShippedSluiceConfigs fills in every shipped scenario's sluice
// contenders as a run would and checks each config with sluice's own
// parser: the policies are valid, differ only in the concurrency law and
// the queue, and every adaptive one targets the scenario's SLO.
func TestShippedSluiceConfigs(t *testing.T) {
	vars := map[string]string{"sluice": "/usr/bin/sluice"}
	for _, name := range Placeholders {
		vars[name] = "1"
	}
	vars["backend"] = "http://127.0.0.1:1"
	sluiceRuns := 0
	for _, name := range Scenarios() {
		s, err := LoadScenario(name)
		if err != nil {
			t.Fatal(err)
		}
		vars["slo"] = time.Duration(s.SLO).String()
		var groups []spec.Group
		for _, con := range s.Contenders {
			if con.Kind != scenario.KindCommand || con.Files["sluice.toml"] == "" {
				continue
			}
			x, err := NewCommand(con).expand(nil, vars)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, con.Name, err)
			}
			cfg, err := configs.Parse(name+"/"+con.Name+"/sluice.toml", []byte(x.files["sluice.toml"]))
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			sluiceRuns++
			g := *cfg.Group("api")
			if g.Concurrency.Law != spec.LawFixed && time.Duration(g.Targets.Latency) != time.Duration(s.SLO) {
				t.Errorf("%s/%s: latency target %v, SLO %v", name, con.Name, g.Targets.Latency, s.SLO)
			}
			noLimit := g.Concurrency.Law == spec.LawFixed && g.Concurrency.Limit >= 4096
			if noLimit != (g.Queue.Max == 0) {
				t.Errorf("%s/%s: only no-limit goes without a queue: %+v", name, con.Name, g.Queue)
			}
			if most := mostInFlight(s, time.Duration(cfg.Upstream.ResponseHeaderTimeout)); noLimit && float64(g.Concurrency.Limit) < most {
				t.Errorf("%s/%s: a no-limit of %d in flight can be reached: up to %.0f requests are in flight at once", name, con.Name, g.Concurrency.Limit, most)
			}
			groups = append(groups, g)
		}
		// Apart from the law, its limits and the queue, the groups agree
		// (and the rate stage, in the scenario that compares a group with and
		// without a managed rate).
		for i := 1; i < len(groups); i++ {
			a, b := groups[0], groups[i]
			a.Concurrency, b.Concurrency = spec.Concurrency{}, spec.Concurrency{}
			a.Queue, b.Queue = spec.Queue{}, spec.Queue{}
			if name == "managed-rate" {
				a.Rate, b.Rate = nil, nil
			}
			aj, _ := json.Marshal(a)
			bj, _ := json.Marshal(b)
			if string(aj) != string(bj) {
				t.Errorf("%s: groups differ beyond the policy:\n%s\n%s", name, aj, bj)
			}
		}
	}
	if sluiceRuns < 40 {
		t.Errorf("only %d sluice contenders in the shipped scenarios", sluiceRuns)
	}
}

// TestCheck finds unknown placeholders before anything runs, each once.
func TestCheck(t *testing.T) {
	sweep, _ := LoadScenario("sweep")
	step, _ := LoadScenario("step")
	r := &Runner{Out: t.TempDir()}
	err := r.Check([]*scenario.Scenario{sweep, step})
	if err == nil || strings.Count(err.Error(), "{{sluice}}") != 1 || !strings.Contains(err.Error(), "sweep/no-limit, sweep/static") || !strings.Contains(err.Error(), "step/target") {
		t.Errorf("check without sluice: %v", err)
	}
	r.Vars = map[string]string{"sluice": "/bin/true"}
	if err := r.Check([]*scenario.Scenario{sweep, step}); err != nil {
		t.Errorf("check with sluice: %v", err)
	}
}

// checkRun checks a run's report for shape and consistency.
func checkRun(t *testing.T, run report.Run) {
	t.Helper()
	tot := run.Load.Totals
	if run.Scenario == "" || run.Contender == "" || run.Capacity <= 0 || run.SLO <= 0 || len(run.Schedule) == 0 || run.Error != "" {
		t.Fatalf("run header %+v", run)
	}
	if tot.OK+tot.Rejected+tot.Errors != tot.Offered || tot.Sent > tot.Offered || tot.Sent < tot.Offered-tot.ErrorsByKind["overflow"] || tot.Good > tot.OK || tot.Attempts < tot.Sent {
		t.Errorf("totals do not add up: %+v", tot)
	}
	// Offered follows the schedule: the seeded Poisson count is within a
	// few standard deviations of the integral of the rate.
	want := run.Schedule.Expected(0, run.Schedule.Duration())
	if math.Abs(float64(tot.Offered)-want) > 4*math.Sqrt(want)+1 {
		t.Errorf("offered %d, scheduled %.0f", tot.Offered, want)
	}
	var phases, seconds int64
	for _, p := range run.Load.Phases {
		if p.OK+p.Rejected+p.Errors != p.Offered {
			t.Errorf("phase %s does not add up: %+v", p.Label, p.Counts)
		}
		phases += p.Offered
	}
	for _, s := range run.Load.Seconds {
		seconds += s.Offered
	}
	if phases != tot.Offered || seconds != tot.Offered || len(run.Load.Phases) != len(run.Schedule) {
		t.Errorf("offered %d, by phase %d, by second %d", tot.Offered, phases, seconds)
	}
	m := run.Metrics
	dur := run.Schedule.Duration().Seconds()
	if math.Abs(m.OfferedRate-float64(tot.Offered)/dur) > 1e-6 || m.Goodput > m.AdmittedRate || m.AdmittedRate > m.OfferedRate {
		t.Errorf("rates: %+v", m)
	}
	if tot.OK > 0 && !(m.P50 > 0 && m.P50 <= m.P99 && m.P99 <= m.P999) {
		t.Errorf("latency quantiles %v %v %v", m.P50, m.P99, m.P999)
	}
	if len(run.Samples) < 2 {
		t.Fatalf("%d samples", len(run.Samples))
	}
	for i := 1; i < len(run.Samples); i++ {
		if run.Samples[i].T <= run.Samples[i-1].T {
			t.Errorf("sample times not increasing: %v then %v", run.Samples[i-1].T, run.Samples[i].T)
		}
	}
	// The backend may be too busy to answer a poll now and then, not always.
	answered := 0
	for _, s := range run.Samples {
		if s.Backend != nil {
			answered++
			if s.Backend.Capacity != run.Capacity {
				t.Errorf("sampled backend %+v, want capacity %v", s.Backend, run.Capacity)
			}
		}
	}
	if answered == 0 {
		t.Error("the backend never answered a poll")
	}
	// Every 2xx the generator saw was served by the backend; the backend
	// may have served more (tries the client had given up on).
	if run.Backend.Served < uint64(tot.OK) || run.Backend.Served > uint64(tot.Attempts) {
		t.Errorf("backend served %d, generator saw %d OK of %d tries", run.Backend.Served, tot.OK, tot.Attempts)
	}
}

// TestCommandContender runs a command contender (this test binary as a
// small reverse proxy with metrics) and one whose program is missing.
func TestCommandContender(t *testing.T) {
	t.Setenv(helperEnv, "1")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src := `# A proxy in front of the backend, and one that cannot run here.
seed = 11
[load]
path = "/work"
phases = [{ rate = "0.5C", for = "2s" }]
[[contender]]
name = "helper"
kind = "command"
command = ["{{self}}", "{{port}}", "{{backend}}"]
url = "http://127.0.0.1:{{port}}"
ready = "http://127.0.0.1:{{port}}/metrics"
files = { "note.txt" = "backend {{backend_addr}}, W={{workers}}, C={{capacity}}, mean {{mean_ms}} ms" }
metrics = "http://127.0.0.1:{{port}}/metrics"
limit_metric = 'helper_limit{group="api"}'
inflight_metric = 'helper_inflight{group="api"}'
rate_metric = 'helper_rate{group="api"}'
[[contender]]
name = "absent"
kind = "command"
requires = ["sluice-lab-test-no-such-program"]
command = ["sluice-lab-test-no-such-program"]
url = "http://127.0.0.1:{{port}}"
`
	s, err := scenario.Parse("proxy.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := &Runner{Out: out, Vars: map[string]string{"self": self}}
	outcomes, err := r.Run(context.Background(), []*scenario.Scenario{s})
	if err != nil {
		t.Fatal(err)
	}
	runs := outcomes[0].Runs
	if len(runs) != 2 || runs[1].Skipped != "sluice-lab-test-no-such-program is not installed" {
		t.Fatalf("runs %+v", runs)
	}
	run := runs[0]
	checkRun(t, run)
	if run.Load.Totals.OK != run.Load.Totals.Offered {
		t.Errorf("at 0.5C through the proxy: %+v", run.Load.Totals)
	}
	polled := 0
	for _, smp := range run.Samples {
		if smp.ContenderRSS == nil || *smp.ContenderRSS <= 0 || smp.ContenderCPU == nil {
			t.Errorf("sample without the proxy's usage: %+v", smp)
		}
		if smp.Limit != nil {
			polled++
			if *smp.Limit != 42 || smp.Inflight == nil || smp.Rate == nil || *smp.Rate != 1250.5 {
				t.Errorf("sample %+v: want limit 42, an in-flight count and rate 1250.5", smp)
			}
		}
	}
	if polled == 0 {
		t.Error("the proxy's metrics were never read")
	}
	if m := run.Metrics; m.PeakRSSContender == nil || m.CPUPerReqProxy == nil || m.PeakRSSBackend != nil {
		t.Errorf("metrics %+v", m)
	}
	note, err := os.ReadFile(filepath.Join(out, "proxy", "helper", "note.txt"))
	if err != nil || !strings.HasPrefix(string(note), "backend 127.0.0.1:") || !strings.Contains(string(note), "W=16, C=400, mean 40 ms") {
		t.Errorf("note.txt %q, %v", note, err)
	}
	if _, err := os.Stat(filepath.Join(out, "proxy", "helper", "helper.log")); err != nil {
		t.Errorf("no contender log: %v", err)
	}
	md, _ := os.ReadFile(filepath.Join(out, "proxy", report.SummaryFile))
	if !strings.Contains(string(md), "| absent | skipped: ") {
		t.Errorf("summary:\n%s", md)
	}
}

// TestShippedNginxConfigs: every nginx contender of the shipped scenarios
// (the library's nginx-conn and nginx-req, the overhead scenario's plain
// proxy) expands to a config that nginx itself accepts (nginx -t). Skipped
// where nginx is not installed, as the lab then skips those contenders.
func TestShippedNginxConfigs(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed: the lab skips its nginx contenders")
	}
	vars := map[string]string{"sluice": "/usr/bin/sluice"}
	for _, name := range Placeholders {
		vars[name] = "1"
	}
	vars["backend_addr"], vars["port"], vars["capacity"] = "127.0.0.1:1", "2", "1500"
	checked := 0
	for _, name := range Scenarios() {
		s, err := LoadScenario(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range s.Contenders {
			if spec.Kind != scenario.KindCommand || spec.Files["nginx.conf"] == "" {
				continue
			}
			dir := t.TempDir()
			vars["dir"] = dir
			x, err := NewCommand(spec).expand(nil, vars)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, spec.Name, err)
			}
			conf := filepath.Join(dir, "nginx.conf")
			if err := os.WriteFile(conf, []byte(x.files["nginx.conf"]), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-c", conf, "-e", "stderr").CombinedOutput(); err != nil {
				t.Errorf("%s/%s: nginx -t: %v\n%s\n%s", name, spec.Name, err, out, x.files["nginx.conf"])
			}
			checked++
		}
	}
	if checked < 15 {
		t.Errorf("only %d nginx contenders in the shipped scenarios", checked)
	}
}

// TestNginxLimits runs the library's nginx contenders in front of a backend
// of 2 workers (50 ms each, C = 40 req/s) offered 4×C: limit_conn at 2 and
// limit_req at C (burst 2) each refuse the excess with 503 and serve
// about C. (How fast a refusal is, is the lab's to measure, not a test's.)
func TestNginxLimits(t *testing.T) {
	if _, err := exec.LookPath("nginx"); err != nil {
		t.Skip("nginx is not installed: the lab skips its nginx contenders")
	}
	src := `# nginx's limits refuse the excess.
seed = 12
vars.nginx_conn = "2"
contender = [{ like = "nginx-conn" }, { like = "nginx-req" }]
[backend]
workers = 2
service = "const:50ms"
[load]
path = "/work"
timeout = "5s"
phases = [{ rate = "4C", for = "2s" }]
`
	s, err := scenario.ParseWith("nginx.toml", []byte(src), Library())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Out: t.TempDir()}
	outcomes, err := r.Run(context.Background(), []*scenario.Scenario{s})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range outcomes[0].Runs {
		checkRun(t, run)
		tot := run.Load.Totals
		// 2 s at 40/s is 80 admissible; the rest refused, none failed.
		if tot.Errors != 0 || tot.Rejected < tot.Offered/2 || tot.OK < 40 || tot.OK > 130 || tot.RejectsByStatus[503] != tot.Rejected {
			t.Errorf("%s: %+v", run.Contender, tot)
		}
	}
}
