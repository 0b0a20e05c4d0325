package sim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/internal/pause"
)

// LoadScenario reads and parses a scenario file; the scenario is named after the
// file.
func LoadScenario(path string) (Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("sim: %w", err)
	}
	sc, err := ParseScenario(b)
	if err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", path, err)
	}
	sc.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return sc, nil
}

// ParseScenario parses a scenario from its text form: one directive per line,
// "#" starting a comment, and the leading comment block becoming the
// Description. Every problem is reported, each with its line number. The format,
// with every key optional unless said otherwise:
//
//	seed 42
//	duration 30s                      (required)
//	interval 250ms
//	slo 100ms                         (required)
//	service workers=10 dist=lognormal mean=10ms sigma=0.5 contention=0
//	        cpu_base=0 cpu_worker=0.1 mem_base=0.2 mem_request=0.001 mem_queued=0.001 cancel=false
//	service dist=exponential mean=10ms | dist=constant mean=95ms | dist=bimodal fast=5ms slow=50ms p_slow=0.1 sigma=0.1
//	        cores=2 cpu_from=host psi=avg10 (a CPU-bound backend on 2 cores; cpu_from=service, psi=interval)
//	slowdown at=15s x=2
//	workers at=15s n=5                (the worker count changes)
//	outage at=10s for=5s              (every request fails meanwhile)
//	stall for=300ms every=3s from=3s  (every worker pauses; from defaults to every)
//	hog at=10s threads=2 nice=5       (busy loops beside a CPU-bound backend; threads=0 stops them)
//	host cores=2 send=90us forward=100us refuse=30us handle=90us wake=1.5ms
//	                                  (the cores the proxy and the clients share with the service: Host)
//	load at=0s x=0.7                  (at least one; constant)
//	load at=10s from=0.7 to=3         (ramp to the next segment)
//	load at=20s x=1 amp=0.3 period=10s (sine)
//	clients timeout=1s retries=3 backoff=10ms retry_after=true at_once=false
//	priorities critical=0.2 sheddable=0.8 (or level numbers: 3=0.1)
//	tenants 0.8 0.1 0.1
//	gate queue=100 order=adaptive queue_target=5ms queue_interval=100ms fair=true rate=0 burst=0 shedder=true breaker=false
//	     max_wait=500ms codel=true    (codel=false: no CoDel, every waiter may wait max_wait)
//	guard cpu=0.8 memory=0.85 hysteresis=0.05
//	targets latency=100ms quantile=p99 cpu=0.8 memory=0.85 cpu_pressure=0.3
//	limits min=1 max=1000 initial=20
//	static 60
//	phase overload at=5s
func ParseScenario(text []byte) (Scenario, error) {
	var (
		sc     Scenario
		errs   []error
		header []string
		inHead = true
	)
	sc.Phases = nil
	sc.Tenants = nil
	sc.Seed = 1
	sawDuration, sawSLO := false, false
	sc2 := bufio.NewScanner(bytes.NewReader(text))
	sc2.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc2.Scan() {
		line++
		raw := sc2.Text()
		trimmed := strings.TrimSpace(raw)
		if inHead && strings.HasPrefix(trimmed, "#") {
			header = append(header, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
			continue
		}
		inHead = false
		if i := strings.IndexByte(trimmed, '#'); i >= 0 {
			trimmed = strings.TrimSpace(trimmed[:i])
		}
		if trimmed == "" {
			continue
		}
		fields := strings.Fields(trimmed)
		d := directive{line: line, name: fields[0], args: fields[1:]}
		switch d.name {
		case "duration":
			sawDuration = true
		case "slo":
			sawSLO = true
		}
		d.apply(&sc)
		errs = append(errs, d.errs...)
	}
	if err := sc2.Err(); err != nil {
		errs = append(errs, fmt.Errorf("sim: %w", err))
	}
	if !sawDuration {
		errs = append(errs, errors.New("sim: missing duration"))
	}
	if !sawSLO {
		errs = append(errs, errors.New("sim: missing slo"))
	}
	sc.Description = strings.TrimSpace(strings.Join(header, "\n"))
	if len(errs) == 0 {
		if err := sc.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Scenario{}, err
	}
	return sc, nil
}

// directive is one line of a scenario file being applied.
type directive struct {
	line int
	name string
	args []string
	errs []error
}

func (d *directive) fail(format string, args ...any) {
	d.errs = append(d.errs, fmt.Errorf("sim: line %d: %s: "+format, append([]any{d.line, d.name}, args...)...))
}

// one returns the single positional argument.
func (d *directive) one() (string, bool) {
	if len(d.args) != 1 {
		d.fail("want one value, got %d", len(d.args))
		return "", false
	}
	return d.args[0], true
}

func (d *directive) dur(key, v string) time.Duration {
	x, err := time.ParseDuration(v)
	if err != nil {
		d.fail("%s: bad duration %q", key, v)
	}
	return x
}

func (d *directive) float(key, v string) float64 {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		d.fail("%s: bad number %q", key, v)
	}
	return x
}

func (d *directive) int(key, v string) int {
	x, err := strconv.Atoi(v)
	if err != nil {
		d.fail("%s: bad integer %q", key, v)
	}
	return x
}

func (d *directive) bool(key, v string) bool {
	x, err := strconv.ParseBool(v)
	if err != nil {
		d.fail("%s: bad boolean %q", key, v)
	}
	return x
}

// keys applies each key=value argument with set, in order, reporting malformed,
// repeated and unknown keys.
func (d *directive) keys(set func(k, v string) bool) {
	seen := make(map[string]bool, len(d.args))
	for _, a := range d.args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			d.fail("want key=value, got %q", a)
			continue
		}
		if seen[k] {
			d.fail("%s given twice", k)
			continue
		}
		seen[k] = true
		if !set(k, v) {
			d.fail("unknown key %q", k)
		}
	}
}

// apply sets what d says in sc (see directives).
func (d *directive) apply(sc *Scenario) {
	set, ok := directives[d.name]
	if !ok {
		d.fail("unknown directive")
		return
	}
	set(d, sc)
}

// directives holds, by name, what each directive of a scenario file sets.
var directives = map[string]func(*directive, *Scenario){
	"seed": func(d *directive, sc *Scenario) {
		if v, ok := d.one(); ok {
			x, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				d.fail("bad seed %q", v)
			}
			sc.Seed = x
		}
	},
	"duration":   func(d *directive, sc *Scenario) { d.oneDur(&sc.Duration) },
	"interval":   func(d *directive, sc *Scenario) { d.oneDur(&sc.Interval) },
	"slo":        func(d *directive, sc *Scenario) { d.oneDur(&sc.SLO) },
	"static":     func(d *directive, sc *Scenario) { d.oneInt(&sc.Static) },
	"service":    func(d *directive, sc *Scenario) { d.service(&sc.Service) },
	"slowdown":   (*directive).slowdown,
	"workers":    (*directive).workers,
	"outage":     (*directive).outage,
	"stall":      func(d *directive, sc *Scenario) { d.stall(&sc.Stall) },
	"host":       func(d *directive, sc *Scenario) { d.host(&sc.Host) },
	"hog":        (*directive).hog,
	"load":       (*directive).load,
	"clients":    func(d *directive, sc *Scenario) { d.clients(&sc.Clients) },
	"priorities": (*directive).priorities,
	"tenants":    (*directive).tenants,
	"gate":       func(d *directive, sc *Scenario) { d.gate(&sc.Gate) },
	"guard":      func(d *directive, sc *Scenario) { d.guard(&sc.Gate.Guard) },
	"targets":    func(d *directive, sc *Scenario) { d.targets(&sc.Targets) },
	"limits":     func(d *directive, sc *Scenario) { d.limits(&sc.Bounds) },
	"phase":      (*directive).phase,
}

// oneDur sets *x to the directive's one duration argument.
func (d *directive) oneDur(x *time.Duration) {
	if v, ok := d.one(); ok {
		*x = d.dur(d.name, v)
	}
}

// oneInt sets *x to the directive's one integer argument.
func (d *directive) oneInt(x *int) {
	if v, ok := d.one(); ok {
		*x = d.int(d.name, v)
	}
}

// field sets one key's value, as the directive reads it, in its place.
type field func(d *directive, k, v string)

func durField(p *time.Duration) field { return func(d *directive, k, v string) { *p = d.dur(k, v) } }
func floatField(p *float64) field     { return func(d *directive, k, v string) { *p = d.float(k, v) } }
func intField(p *int) field           { return func(d *directive, k, v string) { *p = d.int(k, v) } }
func boolField(p *bool) field         { return func(d *directive, k, v string) { *p = d.bool(k, v) } }
func textField(p *string) field       { return func(_ *directive, _, v string) { *p = v } }

// fields applies each key=value argument to the field of its key in fs
// (see keys: a key fs lacks is unknown).
func (d *directive) fields(fs map[string]field) {
	d.keys(func(k, v string) bool {
		f, ok := fs[k]
		if ok {
			f(d, k, v)
		}
		return ok
	})
}

func (d *directive) slowdown(sc *Scenario) {
	var s Slowdown
	d.fields(map[string]field{"at": durField(&s.At), "x": floatField(&s.Factor)})
	sc.Slowdowns = append(sc.Slowdowns, s)
}

func (d *directive) workers(sc *Scenario) {
	var w WorkerChange
	d.fields(map[string]field{"at": durField(&w.At), "n": intField(&w.Workers)})
	sc.WorkerChanges = append(sc.WorkerChanges, w)
}

func (d *directive) outage(sc *Scenario) {
	var o Outage
	d.fields(map[string]field{"at": durField(&o.At), "for": durField(&o.For)})
	sc.Outages = append(sc.Outages, o)
}

// stall sets the service's periodic stall; from defaults to every.
func (d *directive) stall(st *pause.Periodic) {
	from := false
	d.fields(map[string]field{"for": durField(&st.For), "every": durField(&st.Every),
		"from": func(d *directive, k, v string) { st.From, from = d.dur(k, v), true }})
	if !from {
		st.From = st.Every
	}
}

func (d *directive) host(h *Host) {
	d.fields(map[string]field{"cores": floatField(&h.Cores), "send": durField(&h.Send), "forward": durField(&h.Forward),
		"refuse": durField(&h.Refuse), "handle": durField(&h.Handle), "wake": durField(&h.Wake)})
}

func (d *directive) hog(sc *Scenario) {
	var h Hog
	d.fields(map[string]field{"at": durField(&h.At), "threads": intField(&h.Threads), "nice": intField(&h.Nice)})
	sc.Hogs = append(sc.Hogs, h)
}

func (d *directive) clients(c *Clients) {
	d.fields(map[string]field{"timeout": durField(&c.Timeout), "retries": intField(&c.Retries), "backoff": durField(&c.Backoff),
		"retry_after": boolField(&c.RetryAfter), "at_once": boolField(&c.AtOnce)})
}

func (d *directive) priorities(sc *Scenario) {
	d.keys(func(k, v string) bool {
		p, ok := adaptive.ParsePriority(k)
		if !ok {
			return false
		}
		sc.Priorities[p] = d.float(k, v)
		return true
	})
}

func (d *directive) tenants(sc *Scenario) {
	if len(d.args) == 0 {
		d.fail("want at least one weight")
	}
	for _, a := range d.args {
		sc.Tenants = append(sc.Tenants, d.float("weight", a))
	}
}

func (d *directive) guard(g *adaptive.ResourceGuardParams) {
	d.fields(map[string]field{"cpu": floatField(&g.CPU), "memory": floatField(&g.Memory), "hysteresis": floatField(&g.Hysteresis)})
}

func (d *directive) targets(t *Targets) {
	d.fields(map[string]field{"latency": durField(&t.Latency), "cpu": floatField(&t.CPU), "memory": floatField(&t.Memory),
		"cpu_pressure": floatField(&t.CPUPressure), "quantile": func(d *directive, _, v string) {
			q, ok := adaptive.ParseQuantile(v)
			if !ok {
				d.fail("unknown quantile %q", v)
			}
			t.Quantile = q
		}})
}

func (d *directive) limits(b *adaptive.Bounds) {
	d.fields(map[string]field{"min": intField(&b.Min), "max": intField(&b.Max), "initial": intField(&b.Initial)})
}

func (d *directive) phase(sc *Scenario) {
	if len(d.args) < 1 {
		d.fail("want a name")
		return
	}
	p := Phase{Name: d.args[0]}
	d.args = d.args[1:]
	d.fields(map[string]field{"at": durField(&p.At)})
	sc.Phases = append(sc.Phases, p)
}

func (d *directive) service(s *Service) {
	kind := ""
	ds := &s.Dist
	d.fields(map[string]field{
		"workers": intField(&s.Workers), "dist": textField(&kind), "mean": durField(&ds.Mean), "sigma": floatField(&ds.Sigma),
		"fast": durField(&ds.Fast), "slow": durField(&ds.Slow), "p_slow": floatField(&ds.PSlow),
		"contention": floatField(&s.Contention), "cpu_base": floatField(&s.CPUBase), "cpu_worker": floatField(&s.CPUPerWorker),
		"mem_base": floatField(&s.MemBase), "mem_request": floatField(&s.MemPerRequest), "mem_queued": floatField(&s.MemPerQueued),
		"cancel": boolField(&s.Cancel), "cores": floatField(&s.Cores), "cpu_from": textField(&s.CPUFrom), "psi": textField(&s.PSI),
	})
	switch kind {
	case "", "lognormal":
		s.Dist.Kind = Lognormal
	case "constant":
		s.Dist.Kind, s.Dist.Sigma = Lognormal, 0
	case "exponential":
		s.Dist.Kind = Exponential
	case "bimodal":
		s.Dist.Kind = Bimodal
	default:
		d.fail("unknown dist %q (lognormal, exponential, bimodal, constant)", kind)
	}
}

func (d *directive) load(sc *Scenario) {
	var g Segment
	has := map[string]bool{}
	for _, a := range d.args {
		k, _, _ := strings.Cut(a, "=")
		has[k] = true
	}
	d.fields(map[string]field{"at": durField(&g.At), "x": floatField(&g.X), "from": floatField(&g.From),
		"to": floatField(&g.To), "amp": floatField(&g.Amp), "period": durField(&g.Period)})
	switch {
	case !has["at"]:
		d.fail("want at=")
	case has["from"] || has["to"]:
		if !has["from"] || !has["to"] || has["x"] || has["amp"] || has["period"] {
			d.fail("a ramp takes from= and to= only")
		}
		g.Ramp = true
	case has["amp"] || has["period"]:
		if !has["x"] || !has["amp"] || !has["period"] || g.Period <= 0 {
			d.fail("a sine takes x=, amp= and a positive period=")
		}
	case !has["x"]:
		d.fail("want x= (or from= to=, or x= amp= period=)")
	}
	sc.Load = append(sc.Load, g)
}

func (d *directive) gate(g *Gate) {
	d.fields(map[string]field{
		"queue": func(d *directive, k, v string) {
			if g.Queue = d.int(k, v); g.Queue == 0 {
				g.Queue = -1
			}
		},
		"order": func(d *directive, _, v string) {
			o, ok := adaptive.ParseOrder(v)
			if !ok {
				d.fail("unknown order %q (adaptive, fifo, lifo)", v)
			}
			g.Order = o
		},
		"queue_target": durField(&g.QueueTarget), "queue_interval": durField(&g.QueueInterval), "max_wait": durField(&g.MaxWait),
		"codel":   func(d *directive, k, v string) { g.NoCoDel = !d.bool(k, v) },
		"shedder": func(d *directive, k, v string) { g.NoShedder = !d.bool(k, v) },
		"fair":    boolField(&g.Fair), "rate": floatField(&g.Rate), "burst": floatField(&g.Burst), "breaker": boolField(&g.Breaker),
	})
}
