package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/internal/clocktest"
	"github.com/sluicehq/sluice/probe"
)

// testConfig has a keyed, rate-limited adaptive group and a fixed catch-all.
const testConfig = `
[upstream]
url = "http://127.0.0.1:9"

[[group]]
name = "api"
match = { path_prefix = "/api/" }
key = "header:X-Tenant"
  [group.rate]
  rate = 1000
  [group.concurrency]
  law = "aimd"
  initial = 10
  max = 100
  [group.targets]
  latency = "200ms"
  memory = 0.85

[[group]]
name = "batch"
  [group.concurrency]
  law = "fixed"
  limit = 4
  [group.queue]
  max = 0
`

const testToken = "0123456789abcdef0123456789abcdef"

// t0 is the tests' epoch.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeClock is a clock the test moves by hand.
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock { return clocktest.New(t0) }

func parseConfig(t testing.TB, toml string) *configs.Config {
	t.Helper()
	cfg, err := configs.Parse("sluice.toml", []byte(toml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

const fakeCPUSource = "cgroup v2 /sys/fs/cgroup/app (cpu.max 2 cores)"

// fakeSampler reports the CPU and memory the test sets (and a CPU pressure
// of 7 %); unknown until then.
type fakeSampler struct {
	mu          sync.Mutex
	cpu, memory float64
	known       bool
	noMemory    bool // memory has no source (no limit to measure against)
}

func (s *fakeSampler) set(cpu, memory float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cpu, s.memory, s.known = cpu, memory, true
}

func (s *fakeSampler) Sample(now time.Time) probe.Resources {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := probe.Resources{Time: now,
		CPUFrom: probe.FromCgroup, CPUSource: fakeCPUSource,
		MemoryFrom: probe.FromProcess, MemorySource: "process 7 RSS of the host's 1 GiB",
		CPUPressureFrom: probe.FromCgroup, CPUPressureSource: "psi some avg10 of cgroup v2 /sys/fs/cgroup/app",
		CPU: probe.Signal{Reason: "fake: not set"}, Memory: probe.Signal{Reason: "fake: not set"}, CPUPressure: probe.Signal{Reason: "fake: not set"}}
	if s.known {
		r.CPU = probe.Signal{Value: s.cpu, Known: true}
		r.Memory = probe.Signal{Value: s.memory, Known: true}
		r.CPUPressure = probe.Signal{Value: 0.07, Known: true}
	}
	if s.noMemory {
		r.MemoryFrom, r.MemorySource = "", "none: no memory limit on sluice's cgroup or above"
		r.Memory = probe.Signal{Reason: "no memory limit"}
	}
	return r
}

// fixture is a gate and an admin server serving it on a loopback port.
type fixture struct {
	gate    *gate.Gate
	clock   *fakeClock
	res     *fakeSampler
	metrics *Metrics
	srv     *Server
	url     string // http://127.0.0.1:PORT

	mu   sync.Mutex
	next *configs.Config // what Params.Load returns
	err  error           // or this
}

type fixtureOpt func(*Params)

// newFixture builds a gate from toml on a fake clock and serves an admin
// server for it on 127.0.0.1, with the test token unless an option says
// otherwise. Load returns what setNext set, else the same config again.
func newFixture(t testing.TB, toml string, opts ...fixtureOpt) *fixture {
	t.Helper()
	return newGlobalFixture(t, toml, nil, opts...)
}

// newGlobalFixture is newFixture with a gate whose global rates global
// builds.
func newGlobalFixture(t testing.TB, toml string, global func(*gate.Group) (gate.RateLimiter, error), opts ...fixtureOpt) *fixture {
	t.Helper()
	f := &fixture{clock: newFakeClock(), res: &fakeSampler{}, metrics: NewMetrics(MetricsParams{})}
	cfg := parseConfig(t, toml)
	g, err := gate.New(gate.Params{Config: cfg.Gate(), ConfigSource: "sluice.toml", ConfigHash: cfg.Hash(), Clock: f.clock,
		Resources: f.res, Observer: f.metrics, GlobalRate: global})
	if err != nil {
		t.Fatal(err)
	}
	f.gate = g
	p := Params{
		Gate:    g,
		Config:  cfg,
		Listen:  "127.0.0.1:0",
		Token:   testToken,
		Version: "v0.0.0-test",
		Metrics: f.metrics,
		Load: func(context.Context) (*configs.Config, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.err != nil {
				return nil, f.err
			}
			if f.next != nil {
				return f.next, nil
			}
			return parseConfig(t, toml), nil
		},
		Now: f.clock.Now,
	}
	for _, o := range opts {
		o(&p)
	}
	f.srv, err = New(p)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := f.srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	f.url = "http://" + ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := f.srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return f
}

func (f *fixture) setNext(cfg *configs.Config, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next, f.err = cfg, err
}

// answer is a response with its body read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a generic value.
func (a answer) json(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, a.body)
	}
	return v
}

// req describes a request to the fixture.
type req struct {
	method, path, body string
	token              string // "" none
	contentType        string // "" for application/json when there is a body
	host               string // "" for the listener's address
}

func (f *fixture) do(t testing.TB, r req) answer {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, f.url+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	switch {
	case r.contentType != "":
		hr.Header.Set("Content-Type", r.contentType)
	case r.body != "":
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.host != "" {
		hr.Host = r.host
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

func (f *fixture) get(t testing.TB, path string) answer {
	t.Helper()
	return f.do(t, req{method: http.MethodGet, path: path})
}

func (f *fixture) patch(t testing.TB, group, body string) answer {
	t.Helper()
	return f.do(t, req{method: http.MethodPatch, path: "/v1/groups/" + group, body: body, token: testToken})
}

// group fetches one group's read-out, decoded.
func (f *fixture) group(t testing.TB, name string) api.Group {
	t.Helper()
	a := f.get(t, "/v1/groups/"+name)
	if a.status != http.StatusOK {
		t.Fatalf("GET group %s: %d %s", name, a.status, a.body)
	}
	var v api.Group
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// serve runs n requests of path through the gate, each taking latency on
// the fake clock, ending with outcome o.
func (f *fixture) serve(t testing.TB, path string, n int, latency time.Duration, o gate.Outcome) {
	t.Helper()
	for range n {
		r, _ := http.NewRequest(http.MethodGet, "http://sluice"+path, nil)
		p, rej, ok := f.gate.Enter(r)
		if !ok {
			t.Fatalf("%s rejected: %v", path, rej.Reason)
		}
		p.DoneAfter(o, latency)
	}
}

// tick ends a control interval d after the last one.
func (f *fixture) tick(d time.Duration) {
	f.gate.Tick(f.clock.Advance(d))
}

// compactJSON is s without insignificant white space, for comparisons.
func compactJSON(t testing.TB, s []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
