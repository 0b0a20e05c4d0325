package sim

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

func TestParseScenarioEveryDirective(t *testing.T) {
	sc, err := ParseScenario([]byte(`# A scenario using every directive.
# Second header line.

seed 42
duration 30s
interval 100ms
slo 150ms     # a trailing comment
service workers=20 dist=bimodal fast=5ms slow=50ms p_slow=0.1 sigma=0.1 contention=0.2 cpu_base=0.05 cpu_worker=0.04 mem_base=0.2 mem_request=0.001 mem_queued=0.0005 cancel=true cores=4 cpu_from=service psi=interval
slowdown at=10s x=2
workers at=12s n=10
outage at=20s for=2s
hog at=5s threads=2 nice=5
hog at=25s threads=0
host cores=2 send=90us forward=100us refuse=30us handle=90us wake=1.5ms
load at=0s x=0.5
load at=5s from=0.5 to=2
load at=15s x=1 amp=0.5 period=4s
clients timeout=2s retries=3 backoff=20ms retry_after=true
priorities critical=0.2 sheddable=0.7 3=0.1
tenants 0.8 0.1 0.1
gate queue=50 order=lifo queue_target=2ms queue_interval=50ms fair=true rate=500 burst=50 shedder=false breaker=true max_wait=2s codel=false
guard cpu=0.8 memory=0.9 hysteresis=0.1
targets latency=120ms quantile=p99.9 cpu=0.7 memory=0.8 cpu_pressure=0.4
limits min=2 max=400 initial=30
static 60
phase one at=0s
phase two at=10s
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Scenario{
		Description: "A scenario using every directive.\nSecond header line.",
		Seed:        42, Duration: 30 * time.Second, Interval: 100 * time.Millisecond, SLO: 150 * time.Millisecond,
		Service: Service{Workers: 20, Dist: Dist{Kind: Bimodal, Fast: 5 * time.Millisecond, Slow: 50 * time.Millisecond, PSlow: 0.1, Sigma: 0.1},
			Contention: 0.2, CPUBase: 0.05, CPUPerWorker: 0.04, MemBase: 0.2, MemPerRequest: 0.001, MemPerQueued: 0.0005, Cancel: true,
			Cores: 4, CPUFrom: CPUFromService, PSI: PSIInterval},
		Slowdowns:     []Slowdown{{At: 10 * time.Second, Factor: 2}},
		WorkerChanges: []WorkerChange{{At: 12 * time.Second, Workers: 10}},
		Outages:       []Outage{{At: 20 * time.Second, For: 2 * time.Second}},
		Hogs:          []Hog{{At: 5 * time.Second, Threads: 2, Nice: 5}, {At: 25 * time.Second}},
		Host: Host{Cores: 2, Send: 90 * time.Microsecond, Forward: 100 * time.Microsecond, Refuse: 30 * time.Microsecond,
			Handle: 90 * time.Microsecond, Wake: 1500 * time.Microsecond},
		Load: []Segment{{X: 0.5}, {At: 5 * time.Second, Ramp: true, From: 0.5, To: 2},
			{At: 15 * time.Second, X: 1, Amp: 0.5, Period: 4 * time.Second}},
		Clients: Clients{Timeout: 2 * time.Second, Retries: 3, Backoff: 20 * time.Millisecond, RetryAfter: true},
		Tenants: []float64{0.8, 0.1, 0.1},
		Gate: Gate{Queue: 50, Order: adaptive.OrderLIFO, QueueTarget: 2 * time.Millisecond, QueueInterval: 50 * time.Millisecond, NoCoDel: true, MaxWait: 2 * time.Second,
			Fair: true, Rate: 500, Burst: 50, NoShedder: true, Breaker: true,
			Guard: adaptive.ResourceGuardParams{CPU: 0.8, Memory: 0.9, Hysteresis: 0.1}},
		Targets: Targets{Latency: 120 * time.Millisecond, Quantile: adaptive.P999, CPU: 0.7, Memory: 0.8, CPUPressure: 0.4},
		Bounds:  adaptive.Bounds{Min: 2, Max: 400, Initial: 30},
		Static:  60,
		Phases:  []Phase{{Name: "one"}, {Name: "two", At: 10 * time.Second}},
	}
	want.Priorities[adaptive.Critical] = 0.2
	want.Priorities[adaptive.Sheddable] = 0.7
	want.Priorities[3] = 0.1
	if !reflect.DeepEqual(sc, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", sc, want)
	}
	// And it runs, every law, through the hog, the worker change and the
	// outage.
	for _, name := range LawNames {
		law, err := sc.Law(name)
		if err != nil {
			t.Fatal(err)
		}
		short := sc
		short.Duration = 30 * time.Second
		if _, err := Run(short, law); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestParseScenarioErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"missing required", "seed 1\n", []string{"sim: missing duration", "sim: missing slo"}},
		{"every problem with its line", "duration 10s\nslo 1x\nservice workers=ten color=blue\nload x=1\nbogus 3\n", []string{
			"sim: line 2: slo: slo: bad duration \"1x\"", "sim: line 3: service: workers: bad integer \"ten\"",
			"sim: line 3: service: unknown key \"color\"", "sim: line 4: load: want at=", "sim: line 5: bogus: unknown directive"}},
		{"malformed pairs", "duration 10s\nslo 1s\nload at=0s x=1 x=2\ngate queue\n", []string{
			"line 3: load: x given twice", "line 4: gate: want key=value, got \"queue\""}},
		{"validation", "duration -1s\nslo 1s\nload at=0s x=-1\nlimits min=5 max=2\nphase a at=2s\nphase b at=1s\n", []string{
			"sim: duration -1s must be positive", "load at 0s: multiple -1 must be in [0, 1000]",
			"adaptive: max limit 2 is below min limit 5", "phase \"b\" at 1s: phases must start at increasing"}},
		{"ramp and sine shapes", "duration 10s\nslo 1s\nload at=0s from=1\nload at=1s x=1 amp=1\n", []string{
			"a ramp takes from= and to= only", "a sine takes x=, amp= and a positive period="}},
		{"cpu model", "duration 10s\nslo 1s\nload at=0s x=1\nservice cpu_from=guest psi=avg60 cores=-1\nhog at=1s threads=2 nice=30\nworkers at=1s n=0\noutage at=1s for=0s\ntargets cpu_pressure=2\n", []string{
			"service cores -1 must be in [0, 1024]", `service cpu_from "guest"`, `service psi "avg60"`,
			"hog at 1s: 2 threads at nice 30", "workers at 1s: 0", "outage at 1s for 0s", "cpu, memory, cpu_pressure in [0, 1]"}},
		{"queue without codel", "duration 10s\nslo 1s\nload at=0s x=1\ngate codel=false\n", []string{
			"gate codel=false needs a max_wait"}},
		{"hog without cores", "duration 10s\nslo 1s\nload at=0s x=1\nhog at=1s threads=1\n", []string{
			"hog at 1s: a hog needs a CPU-bound service (service cores=N)"}},
		{"dist and names", "duration 10s\nslo 1s\nload at=0s x=1\nservice dist=pareto\npriorities urgent=1\ntargets quantile=p42\ngate order=random\n", []string{
			"unknown dist \"pareto\"", "unknown key \"urgent\"", "unknown quantile \"p42\"", "unknown order \"random\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScenario([]byte(tc.text))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	if _, err := LoadScenario("testdata/no-such.scenario"); err == nil || !strings.HasPrefix(err.Error(), "sim: ") {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzParseScenario: arbitrary text never panics, and what parses validates
// and runs.
func FuzzParseScenario(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.scenario")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("duration 1s\nslo 1ms\nload at=0s x=1 amp=-2 period=1ms\n"))
	f.Add([]byte("duration 1s\nslo 1ms\nload at=0s x=0\ntenants 0 0\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		sc, err := ParseScenario(text)
		if err != nil {
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("parsed but invalid: %v", err)
		}
		if sc.Duration > 2*time.Second || sc.Service.Capacity() > 1e5 || sc.Clients.Retries > 3 {
			return // valid but too long to simulate inside a fuzz iteration
		}
		law, err := sc.Law("target")
		if err != nil {
			return // e.g. bounds that only the Target law rejects
		}
		if _, err := Run(sc, law); err != nil {
			t.Fatalf("valid scenario failed to run: %v", err)
		}
	})
}
