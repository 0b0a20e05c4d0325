package permit_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/internal/clocktest"
	"github.com/sluicehq/sluice/permit"
)

// t0 is the tests' epoch.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// observer records what the gate's passes report.
type observer struct {
	mu    sync.Mutex
	done  map[gate.Outcome]int
	lats  []time.Duration
	waits int
}

func (o *observer) ObserveDone(_ string, oc gate.Outcome, lat, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done == nil {
		o.done = map[gate.Outcome]int{}
	}
	o.done[oc]++
	if oc == gate.Success {
		o.lats = append(o.lats, lat)
	}
}

func (o *observer) ObserveQueueWait(string, time.Duration) {
	o.mu.Lock()
	o.waits++
	o.mu.Unlock()
}

func (o *observer) count(oc gate.Outcome) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done[oc]
}

func (o *observer) latencies() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Duration(nil), o.lats...)
}

// env is a gate on a clock of its own and a permit service on another, both
// moved by hand.
type env struct {
	gate  *gate.Gate
	obs   *observer
	clock *clocktest.Clock // the service's
	gclk  *clocktest.Clock // the gate's
	svc   *permit.Service
}

// newEnv builds a gate from TOML groups and a service on it.
func newEnv(t testing.TB, groups string, p permit.Params) *env {
	t.Helper()
	cfg, err := configs.Parse("test.toml", []byte("[upstream]\nurl = \"http://127.0.0.1:9\"\n"+groups))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	e := &env{obs: &observer{}, clock: clocktest.New(t0), gclk: clocktest.New(t0)}
	if e.gate, err = gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources, Clock: e.gclk, Observer: e.obs}); err != nil {
		t.Fatalf("gate: %v", err)
	}
	p.Gate = e.gate
	if p.Clock == nil {
		p.Clock = e.clock
	}
	if e.svc, err = permit.New(p); err != nil {
		t.Fatalf("permit.New: %v", err)
	}
	return e
}

// inFlight returns the gate's in-flight count of group.
func (e *env) inFlight(t testing.TB, group string) int {
	t.Helper()
	s, ok := e.gate.Group(group)
	if !ok {
		t.Fatalf("no group %q", group)
	}
	return s.InFlight
}

// grant acquires a permit and fails the test unless it is granted.
func (e *env) grant(t testing.TB, r permit.Request) permit.Grant {
	t.Helper()
	g, rej, err := e.svc.Acquire(context.Background(), r)
	if err != nil || rej.Rejected() {
		t.Fatalf("Acquire(%+v): %v %v", r, err, rej.Reason)
	}
	return g
}

// jobs is a group "jobs" of fixed concurrency limit n, without a queue.
func jobs(n int) string { return queued(n, 0) }

// queued is a group "jobs" of fixed limit n with a FIFO queue of max
// waiters, each waiting at most 30s (CoDel off, so the bound is max_wait
// from the first request, with no control tick).
func queued(n, max int) string {
	return `
[[group]]
name = "jobs"
  [group.concurrency]
  law = "fixed"
  limit = ` + strconv.Itoa(n) + `
  [group.queue]
  max = ` + strconv.Itoa(max) + `
  max_wait = "30s"
  codel_target = "0s"
`
}

// waitFor spins until cond holds, failing the test after 10s: for events
// that happen on other goroutines (a waiter entering a queue).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
