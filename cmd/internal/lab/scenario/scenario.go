// Package scenario reads the lab's scenario files: TOML that says what the
// simulated backend is, what load it gets, and which contenders stand in
// front of it. A file opens with a # header that explains the scenario;
// cmd/internal/lab/README.md and the files in cmd/internal/lab/scenarios show every key.
package scenario

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
	"github.com/sluicehq/sluice/cmd/internal/lab/hog"
	"github.com/sluicehq/sluice/cmd/internal/lab/load"
	"github.com/sluicehq/sluice/internal/pause"
)

// Scenario is one parsed scenario file.
type Scenario struct {
	Name   string   `toml:"name"`
	Header string   `toml:"-"`   // the file's leading # comment lines, without the #
	SLO    Duration `toml:"slo"` // goodput counts 2xx within it; zero: load.DefaultSLO
	Seed   uint64   `toml:"seed"`
	// Quick is the factor -quick multiplies durations by (each phase
	// keeps at least a second). Zero: DefaultQuick.
	Quick      float64     `toml:"quick"`
	Backend    Backend     `toml:"backend"`
	Hog        *Hog        `toml:"hog"` // nil: none
	Load       Load        `toml:"load"`
	Contenders []Contender `toml:"contender"`
	// Vars are placeholders for this scenario's command contenders (see
	// Contender.Vars): they override a library contender's and are
	// overridden by a contender's own.
	Vars map[string]string `toml:"vars"`
}

// DefaultQuick is the -quick factor of a scenario that sets none.
const DefaultQuick = 0.1

// Backend is the [backend] table: backend.Params in file form.
type Backend struct {
	Workers       int      `toml:"workers"`
	Service       string   `toml:"service"` // backend.ParseDist form; empty: the default
	Queue         int      `toml:"queue"`
	QueuedMemory  Bytes    `toml:"queued_memory"`
	MemoryLimit   Bytes    `toml:"memory_limit"`
	RestartDelay  Duration `toml:"restart_delay"`
	CPU           bool     `toml:"cpu"`
	DropAbandoned bool     `toml:"drop_abandoned"`
	ResponseBytes Bytes    `toml:"response_bytes"`
	Changes       []string `toml:"changes"` // backend.ParseChange form, e.g. "30s:slow=2"
	Stall         string   `toml:"stall"`   // pause.Parse form, e.g. "for=300ms,every=3s"
}

// Hog is the [hog] table: a CPU hog beside the backend for the whole run,
// hog.Params in file form (busy loops, each on a thread of its own, at a
// nice level).
type Hog struct {
	Threads int `toml:"threads"`
	Nice    int `toml:"nice"`
}

// HogParams returns the hog of the scenario, false when it has none.
func (s *Scenario) HogParams() (hog.Params, bool) {
	if s.Hog == nil {
		return hog.Params{}, false
	}
	return hog.Params{Threads: s.Hog.Threads, Nice: s.Hog.Nice}, true
}

// Load is the [load] table.
type Load struct {
	Path        string             `toml:"path"` // appended to the contender's URL; empty: "/"
	Timeout     Duration           `toml:"timeout"`
	Deadline    Duration           `toml:"deadline"` // the caller's, from each arrival (load.Params.Deadline); not shortened by -quick
	MaxInflight int                `toml:"max_inflight"`
	Body        Bytes              `toml:"body"`
	Phases      []Phase            `toml:"phases"`
	Sweep       *Sweep             `toml:"sweep"`
	Tenants     map[string]float64 `toml:"tenants"`
	Priorities  map[string]float64 `toml:"priorities"`
	Retry       Retry              `toml:"retry"`
}

// Phase is one entry of load.phases: a constant rate, or a ramp from From
// to To.
type Phase struct {
	Label string   `toml:"label"`
	Rate  *Rate    `toml:"rate"`
	From  *Rate    `toml:"from"`
	To    *Rate    `toml:"to"`
	For   Duration `toml:"for"`
}

// Sweep is load.sweep: constant steps from From to To (inclusive) in
// increments of Step, Each long. It is an alternative to phases.
type Sweep struct {
	From Rate     `toml:"from"`
	To   Rate     `toml:"to"`
	Step Rate     `toml:"step"`
	Each Duration `toml:"each"`
}

// Retry is load.retry (and a contender's retry).
type Retry struct {
	Attempts int      `toml:"attempts"`
	Mode     string   `toml:"mode"`
	Backoff  Duration `toml:"backoff"`
}

// load returns r in the generator's form.
func (r Retry) load() load.Retry {
	return load.Retry{Attempts: r.Attempts, Mode: load.RetryMode(r.Mode), Backoff: time.Duration(r.Backoff)}
}

// Contender is one [[contender]] table: what stands between the load and
// the backend. Kind "direct" sends the load straight to the backend;
// kind "command" starts Command (after writing Files into its scratch
// directory) and sends the load to URL. Strings may use the placeholders
// {{dir}}, {{backend}}, {{backend_addr}}, {{port}}, {{admin_port}},
// {{workers}}, {{capacity}}, {{mean_ms}} and {{slo}} (see lab.Env), and
// those Vars define.
//
// Like names a contender of the Library the scenario is parsed with: the
// fields this table leaves empty are taken from it (see Library). After
// parsing, Like only records where a contender came from.
type Contender struct {
	Name           string            `toml:"name"` // default: Like
	Like           string            `toml:"like"`
	Kind           string            `toml:"kind"`
	Command        []string          `toml:"command"`
	URL            string            `toml:"url"`
	Ready          string            `toml:"ready"` // polled until it answers; empty: URL
	StartTimeout   Duration          `toml:"start_timeout"`
	Files          map[string]string `toml:"files"`
	Requires       []string          `toml:"requires"` // executables that must be on PATH, else the contender is skipped
	Metrics        string            `toml:"metrics"`  // Prometheus text endpoint polled each second
	LimitMetric    string            `toml:"limit_metric"`
	InflightMetric string            `toml:"inflight_metric"`
	RateMetric     string            `toml:"rate_metric"` // a token rate the contender manages, per second
	// Retry, when set, is how this contender's clients retry, in place of
	// the scenario's load.retry: the same load and backend, other clients
	// (mode "client": through package client).
	Retry *Retry `toml:"retry"`
	// Vars define placeholders of this contender's strings; a value may
	// use placeholders itself. After parsing they include the scenario's
	// and the library's (see Library).
	Vars map[string]string `toml:"vars"`
}

// Contender kinds.
const (
	KindDirect  = "direct"
	KindCommand = "command"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// decode reads the TOML src into v: a file that does not parse is err
// (naming file); each key v has no field for is one of problems.
func decode(file string, src []byte, v any) (problems []error, err error) {
	md, err := toml.Decode(string(src), v)
	if err != nil {
		return nil, fmt.Errorf("scenario: %s: %w", file, err)
	}
	for _, k := range md.Undecoded() {
		problems = append(problems, fmt.Errorf("unknown key %q", k.String()))
	}
	return problems, nil
}

// Parse reads a scenario from src; file names it in errors and gives the
// default name. Every problem is reported, not just the first. A
// contender with like is an error: see ParseWith.
func Parse(file string, src []byte) (*Scenario, error) {
	return ParseWith(file, src, nil)
}

// ParseWith is Parse for a scenario whose contenders may be like those
// of lib (nil: none).
func ParseWith(file string, src []byte, lib *Library) (*Scenario, error) {
	var s Scenario
	errs, err := decode(file, src, &s)
	if err != nil {
		return nil, err
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	s.Header = header(src)
	errs = append(errs, s.resolve(lib)...)
	errs = append(errs, s.validate()...)
	if len(errs) > 0 {
		for i, e := range errs {
			errs[i] = fmt.Errorf("scenario: %s: %w", file, e)
		}
		return nil, errors.Join(errs...)
	}
	if len(s.Contenders) == 0 {
		s.Contenders = []Contender{{Name: "direct", Kind: KindDirect}}
	}
	return &s, nil
}

// header returns the leading comment block, each line without "# ".
func header(src []byte) string {
	var lines []string
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "#") {
			break
		}
		lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// resolve completes each contender that is like a library one, and gives
// every command contender the scenario's vars under its own.
func (s *Scenario) resolve(lib *Library) []error {
	var errs []error
	for i, c := range s.Contenders {
		switch {
		case c.Like != "":
			base, ok := lib.Get(c.Like)
			if !ok {
				known := "none"
				if names := lib.Names(); len(names) > 0 {
					known = strings.Join(names, ", ")
				}
				errs = append(errs, fmt.Errorf("contender[%d] %q: like %q: no such contender in the library (known: %s)", i, c.Name, c.Like, known))
				continue
			}
			s.Contenders[i] = c.over(base, s.Vars)
		case c.Kind == KindCommand:
			s.Contenders[i].Vars = merged(s.Vars, c.Vars)
		}
	}
	return errs
}

func (s *Scenario) validate() []error {
	var errs []error
	if !nameRE.MatchString(s.Name) {
		errs = append(errs, fmt.Errorf("name %q: want 1-64 of a-z 0-9 _ . - starting with a letter or digit", s.Name))
	}
	if s.Header == "" {
		errs = append(errs, errors.New("the file must open with a # header that explains the scenario"))
	}
	if s.Quick < 0 || s.Quick > 1 {
		errs = append(errs, fmt.Errorf("quick must be in (0,1], got %v", s.Quick))
	}
	errs = append(errs, varNames("vars", s.Vars)...)
	_, berrs := s.backendParams()
	errs = append(errs, berrs...)
	if h, ok := s.HogParams(); ok {
		if err, ok := h.Validate().(interface{ Unwrap() []error }); ok {
			errs = append(errs, err.Unwrap()...) // one line each
		}
	}
	errs = append(errs, s.Load.validate()...)
	seen := map[string]bool{}
	for i, c := range s.Contenders {
		if seen[c.Name] {
			errs = append(errs, fmt.Errorf("contender %q listed twice", c.Name))
		}
		seen[c.Name] = true
		errs = append(errs, c.validate(i)...)
	}
	if len(errs) == 0 {
		if _, err := s.LoadParams(""); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func (l Load) validate() []error {
	var errs []error
	if l.Path != "" && !strings.HasPrefix(l.Path, "/") {
		errs = append(errs, fmt.Errorf("load.path %q must start with /", l.Path))
	}
	switch {
	case len(l.Phases) == 0 && l.Sweep == nil:
		errs = append(errs, errors.New("load: set phases or sweep"))
	case len(l.Phases) > 0 && l.Sweep != nil:
		errs = append(errs, errors.New("load: set phases or sweep, not both"))
	}
	for i, p := range l.Phases {
		constant, ramp := p.Rate != nil, p.From != nil || p.To != nil
		switch {
		case constant == ramp:
			errs = append(errs, fmt.Errorf("load.phases[%d]: set either rate, or from and to", i))
		case ramp && (p.From == nil || p.To == nil):
			errs = append(errs, fmt.Errorf("load.phases[%d]: a ramp needs both from and to", i))
		}
		if p.For <= 0 {
			errs = append(errs, fmt.Errorf("load.phases[%d]: for must be a positive duration", i))
		}
	}
	if sw := l.Sweep; sw != nil {
		if sw.Step.Value <= 0 || sw.Each <= 0 {
			errs = append(errs, errors.New("load.sweep: step and each must be positive"))
		}
		if sw.From.OfC != sw.To.OfC || sw.From.OfC != sw.Step.OfC {
			errs = append(errs, errors.New("load.sweep: from, to and step must all be in req/s or all in C"))
		}
		if sw.To.Value < sw.From.Value {
			errs = append(errs, errors.New("load.sweep: to must not be below from"))
		} else if sw.Step.Value > 0 && (sw.To.Value-sw.From.Value)/sw.Step.Value > 1000 {
			errs = append(errs, errors.New("load.sweep: more than 1000 steps"))
		}
	}
	return errs
}

func (c Contender) validate(i int) []error {
	var errs []error
	where := fmt.Sprintf("contender[%d] %q", i, c.Name)
	if !nameRE.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("%s: name: want 1-64 of a-z 0-9 _ . - starting with a letter or digit", where))
	}
	switch c.Kind {
	case KindDirect:
		if len(c.Command) > 0 || c.URL != "" || len(c.Files) > 0 || c.Metrics != "" || len(c.Vars) > 0 {
			errs = append(errs, fmt.Errorf("%s: a direct contender takes no command, url, files, metrics or vars", where))
		}
	case KindCommand:
		if len(c.Command) == 0 || c.Command[0] == "" {
			errs = append(errs, fmt.Errorf("%s: command is required", where))
		}
		if c.URL == "" {
			errs = append(errs, fmt.Errorf("%s: url is required", where))
		}
		for _, name := range slices.Sorted(maps.Keys(c.Files)) {
			if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
				errs = append(errs, fmt.Errorf("%s: file name %q must be a plain name, no directories", where, name))
			}
		}
		if (c.LimitMetric != "" || c.InflightMetric != "" || c.RateMetric != "") && c.Metrics == "" {
			errs = append(errs, fmt.Errorf("%s: limit_metric, inflight_metric and rate_metric need metrics (the endpoint)", where))
		}
		errs = append(errs, varNames(where+": vars", c.Vars)...)
	default:
		errs = append(errs, fmt.Errorf("%s: kind must be %q or %q, got %q", where, KindDirect, KindCommand, c.Kind))
	}
	if c.Retry != nil {
		for _, err := range c.Retry.load().Validate() {
			errs = append(errs, fmt.Errorf("%s: retry: %w", where, err))
		}
	}
	return errs
}

// varRE is what a placeholder's name looks like: {{name}}.
var varRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

func varNames(where string, vars map[string]string) []error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if !varRE.MatchString(k) {
			errs = append(errs, fmt.Errorf("%s: name %q: want a-z 0-9 _ starting with a letter or _", where, k))
		}
	}
	return errs
}

// BackendParams returns the backend's parameters.
func (s *Scenario) BackendParams() (backend.Params, error) {
	p, errs := s.backendParams()
	return p, errors.Join(errs...)
}

func (s *Scenario) backendParams() (backend.Params, []error) {
	b := s.Backend
	p := backend.Params{
		Workers: b.Workers, Queue: b.Queue, QueuedMemory: int64(b.QueuedMemory), MemoryLimit: int64(b.MemoryLimit),
		RestartDelay: time.Duration(b.RestartDelay), CPU: b.CPU, DropAbandoned: b.DropAbandoned,
		ResponseBytes: int(b.ResponseBytes),
	}
	var errs []error
	if b.Service != "" {
		d, err := backend.ParseDist(b.Service)
		if err != nil {
			errs = append(errs, err)
		}
		p.Service = d
	}
	for _, cs := range b.Changes {
		c, err := backend.ParseChange(cs)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.Changes = append(p.Changes, c)
	}
	if st, err := pause.Parse(b.Stall); err != nil {
		errs = append(errs, fmt.Errorf("backend: stall: %w", err))
	} else {
		p.Stall = st
	}
	errs = append(errs, p.Validate()...)
	return p.WithDefaults(), errs
}

// Capacity is the backend's C at the start of the run, req/s.
func (s *Scenario) Capacity() float64 {
	p, _ := s.BackendParams()
	return p.Capacity()
}

// Schedule returns the load schedule with rates resolved against the
// backend's starting capacity.
func (s *Scenario) Schedule() load.Schedule {
	c := s.Capacity()
	var out load.Schedule
	if sw := s.Load.Sweep; sw != nil {
		n := int((sw.To.Value-sw.From.Value)/sw.Step.Value + 1e-9)
		for i := 0; i <= n; i++ {
			r := Rate{Value: sw.From.Value + float64(i)*sw.Step.Value, OfC: sw.From.OfC}
			rate := r.PerSecond(c)
			out = append(out, load.Phase{Label: r.String(), For: time.Duration(sw.Each), From: rate, To: rate})
		}
		return out
	}
	for _, p := range s.Load.Phases {
		ph := load.Phase{Label: p.Label, For: time.Duration(p.For)}
		if p.Rate != nil {
			ph.From, ph.To = p.Rate.PerSecond(c), p.Rate.PerSecond(c)
			if ph.Label == "" {
				ph.Label = p.Rate.String()
			}
		} else if p.From != nil && p.To != nil {
			ph.From, ph.To = p.From.PerSecond(c), p.To.PerSecond(c)
			if ph.Label == "" {
				ph.Label = p.From.String() + "→" + p.To.String()
			}
		}
		out = append(out, ph)
	}
	return out
}

// LoadParamsFor returns the generator's parameters for load sent to c at
// base (its URL): LoadParams, with c's own retry if it has one.
func (s *Scenario) LoadParamsFor(c Contender, base string) (load.Params, error) {
	p, err := s.LoadParams(base)
	if c.Retry != nil {
		p.Retry = c.Retry.load()
		err = errors.Join(p.Validate()...)
	}
	return p, err
}

// LoadParams returns the generator's parameters for load sent to base (a
// contender's URL); the clock and transport are left to the caller.
func (s *Scenario) LoadParams(base string) (load.Params, error) {
	l := s.Load
	path := l.Path
	if path == "" {
		path = "/"
	}
	p := load.Params{
		Target:      strings.TrimSuffix(base, "/") + path,
		Schedule:    s.Schedule(),
		SLO:         time.Duration(s.SLO),
		Timeout:     time.Duration(l.Timeout),
		Deadline:    time.Duration(l.Deadline),
		MaxInflight: l.MaxInflight,
		BodyBytes:   int(l.Body),
		Tenants:     mix(l.Tenants),
		Priorities:  mix(l.Priorities),
		Retry:       l.Retry.load(),
		Seed:        s.Seed,
	}
	if base == "" {
		p.Target = "http://placeholder" + path // for validation before a contender exists
	}
	return p, errors.Join(p.Validate()...)
}

// mix turns a name → weight table into a Mix in name order.
func mix(m map[string]float64) load.Mix {
	var out load.Mix
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, load.Share{Name: name, Weight: m[name]})
	}
	return out
}
