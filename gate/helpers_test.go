package gate

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/internal/clocktest"
	"github.com/sluicehq/sluice/probe"
)

// t0 is the tests' epoch.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeClock is a clock the test moves by hand.
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock { return clocktest.New(t0) }

// fakeSampler reports the CPU and memory the test sets.
type fakeSampler struct {
	mu          sync.Mutex
	cpu, memory float64
	known       bool
	calls       int
}

func (s *fakeSampler) set(cpu, memory float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cpu, s.memory, s.known = cpu, memory, true
}

func (s *fakeSampler) Sample(now time.Time) probe.Resources {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	r := probe.Resources{Time: now, CPUFrom: probe.FromHost, MemoryFrom: probe.FromHost}
	if s.known {
		r.CPU = probe.Signal{Value: s.cpu, Known: true}
		r.Memory = probe.Signal{Value: s.memory, Known: true}
	} else {
		r.CPU = probe.Signal{Reason: "fake: unknown"}
		r.Memory = probe.Signal{Reason: "fake: unknown"}
	}
	return r
}

// config parses a test config, an upstream plus the given TOML (groups), and
// converts it as the daemon does.
func config(t testing.TB, toml string) Config {
	t.Helper()
	cfg, err := configs.Parse("test.toml", []byte("[upstream]\nurl = \"http://127.0.0.1:9\"\n"+toml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg.Gate()
}

// newGate builds a gate on a fake clock from TOML groups.
func newGate(t testing.TB, toml string) (*Gate, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	g, err := New(Params{Config: config(t, toml), Clock: clk, Resources: NoResources})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g, clk
}

// newRealGate builds a gate on the real clock, for tests of the queue, whose
// timers are real.
func newRealGate(t testing.TB, toml string) *Gate {
	t.Helper()
	g, err := New(Params{Config: config(t, toml), Resources: NoResources})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}

// request builds a request to path with headers given as name, value pairs.
func request(path string, headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = "192.0.2.1:1234"
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	return r
}

// mustEnter enters r and fails the test if it is rejected.
func mustEnter(t testing.TB, g *Gate, r *http.Request) Pass {
	t.Helper()
	p, rej, ok := g.Enter(r)
	if !ok {
		t.Fatalf("Enter(%s): rejected: %v", r.URL.Path, rej.Reason)
	}
	return p
}

// mustReject enters r and fails the test unless it is rejected for want.
func mustReject(t testing.TB, g *Gate, r *http.Request, want adaptive.RejectReason) Rejection {
	t.Helper()
	p, rej, ok := g.Enter(r)
	if ok {
		p.Done(Ignored)
		t.Fatalf("Enter(%s): admitted, want rejected for %v", r.URL.Path, want)
	}
	if rej.Reason != want {
		t.Fatalf("Enter(%s): rejected for %v, want %v", r.URL.Path, rej.Reason, want)
	}
	return rej
}

// group returns the run-time group called name.
func (g *Gate) testGroup(t testing.TB, name string) *group {
	t.Helper()
	gr := g.table.Load().byName[name]
	if gr == nil {
		t.Fatalf("no group %q", name)
	}
	return gr
}

// scriptLaw is a control law that returns the limits it is given, in turn,
// and records the samples it saw.
type scriptLaw struct {
	limits  []int
	i       int
	samples []adaptive.Sample
}

func (l *scriptLaw) Update(s adaptive.Sample) adaptive.Decision {
	l.samples = append(l.samples, s)
	prev := l.Limit()
	if l.i < len(l.limits)-1 {
		l.i++
	}
	return adaptive.Decision{Limit: l.Limit(), Changed: l.Limit() != prev}
}

func (l *scriptLaw) Limit() int { return l.limits[l.i] }
