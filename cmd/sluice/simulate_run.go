//go:build !nodemo

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/cmd/internal/cli"
	"github.com/sluicehq/sluice/cmd/internal/lab"
	"github.com/sluicehq/sluice/cmd/internal/lab/report"
	"github.com/sluicehq/sluice/cmd/internal/simulate"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
)

// simulateScenarios lists the shipped scenarios for the help: the lab's.
var simulateScenarios = wrapWords(lab.Scenarios(), 20, 78)

// wrapWords lists words separated by ", " in lines indented by indent,
// each at most width columns (a longer word gets a line of its own).
func wrapWords(words []string, indent, width int) string {
	var b strings.Builder
	line := strings.Repeat(" ", indent)
	for i, w := range words {
		if i < len(words)-1 {
			w += ","
		}
		if len(line) > indent && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = strings.Repeat(" ", indent)
		}
		if len(line) > indent {
			line += " "
		}
		line += w
	}
	b.WriteString(line)
	return b.String()
}

// simulateFlags are the command line of "sluice simulate".
type simulateFlags struct {
	config, group, scenario, dist, load, priorities, tenants, png, lab, costs string
	slo, mean, median, duration, timeout, backoff, every                      time.Duration
	capacity, cores                                                           float64
	workers, retries                                                          int
	retryAfter                                                                bool
	seed                                                                      uint64
	changes                                                                   listFlag
	set                                                                       map[string]bool // the flags given
	labRun                                                                    *report.Run     // -lab's
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func parseSimulateFlags(args []string) (*simulateFlags, error) {
	f := &simulateFlags{set: map[string]bool{}}
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.config, "config", "", "")
	fs.StringVar(&f.group, "group", "", "")
	fs.DurationVar(&f.slo, "slo", 0, "")
	fs.StringVar(&f.scenario, "scenario", "", "")
	fs.Float64Var(&f.capacity, "capacity", 0, "")
	fs.DurationVar(&f.mean, "mean", 0, "")
	fs.DurationVar(&f.median, "median", 0, "")
	var latency time.Duration
	fs.DurationVar(&latency, "latency", 0, "") // gone: refused below with what to say instead
	fs.IntVar(&f.workers, "workers", 0, "")
	fs.StringVar(&f.dist, "service-time", "", "")
	fs.StringVar(&f.load, "load", "", "")
	fs.DurationVar(&f.duration, "duration", time.Minute, "")
	fs.Var(&f.changes, "change", "")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "")
	fs.IntVar(&f.retries, "retries", 0, "")
	fs.DurationVar(&f.backoff, "backoff", 10*time.Millisecond, "")
	fs.BoolVar(&f.retryAfter, "retry-after", false, "")
	fs.StringVar(&f.priorities, "priorities", "", "")
	fs.StringVar(&f.tenants, "tenants", "", "")
	fs.Uint64Var(&f.seed, "seed", 1, "")
	fs.DurationVar(&f.every, "every", 0, "")
	fs.StringVar(&f.png, "png", "", "")
	fs.StringVar(&f.lab, "lab", "", "")
	fs.Float64Var(&f.cores, "shared-cores", 0, "")
	fs.StringVar(&f.costs, "shared-costs", "", "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	switch {
	case f.set["latency"]:
		return nil, errors.New("-latency is gone: say -mean D or -median D (the lab's backend takes a mean, lognormal:10ms:0.5; a measured p50 is a median)")
	case f.scenario == "" && f.load == "" && f.lab == "":
		return nil, errors.New("give the load: -scenario NAME, or the service (two of -capacity, -workers, -mean or -median) and -load")
	case f.scenario != "" && f.load != "":
		return nil, errors.New("-scenario and -load both give the load: give one")
	case f.set["duration"] && f.load == "":
		return nil, errors.New("-duration is the length of a -load segment: give -load")
	case f.duration <= 0 || f.timeout <= 0 || f.backoff < 0 || f.slo < 0 || f.every < 0:
		return nil, errors.New("-duration, -timeout and -backoff must be positive, -slo and -every too when given")
	case f.retries < 0 || f.retries > 100:
		return nil, fmt.Errorf("-retries %d: want 0 to 100", f.retries)
	}
	return f, nil
}

// fromLab fills what -lab FILE implies: the scenario the lab ran (unless
// -scenario names one) and the config its contender ran, the sluice.toml
// beside the JSON file in the contender's folder (unless -config names
// one).
func (f *simulateFlags) fromLab() error {
	run, err := simulate.LoadLabRun(f.lab)
	if err != nil {
		return err
	}
	f.labRun = run
	if f.scenario == "" && f.load == "" {
		f.scenario = run.Scenario
	}
	if f.config == "" {
		f.config = filepath.Join(filepath.Dir(f.lab), run.Contender, "sluice.toml")
		if _, err := os.Stat(f.config); err != nil {
			return fmt.Errorf("-lab %s: its contender's config %s: %w: give -config", f.lab, f.config, err)
		}
	}
	return nil
}

func runSimulate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseSimulateFlags(args)
	if err != nil {
		cli.Fprintf(stderr, "sluice simulate: %v\nRun \"sluice help simulate\" for the flags.\n", err)
		return exitUsage
	}
	if f.lab != "" {
		if err := f.fromLab(); err != nil {
			cli.Fprintf(stderr, "sluice simulate: %v\n", err)
			return exitError
		}
	}
	cfg, err := loadConfig(f.config)
	if configFailed(stderr, "sluice simulate", f.config, err) {
		return exitError
	}
	groups, err := simulateGroups(cfg, f.group)
	if err == nil && f.labRun != nil && len(groups) != 1 {
		err = fmt.Errorf("-lab compares one group with the lab run: the config has %d, give -group", len(groups))
	}
	if err != nil {
		cli.Fprintf(stderr, "sluice simulate: %v\n", err)
		return exitUsage
	}
	w, code, err := simulateWorkload(f)
	if err != nil {
		cli.Fprintf(stderr, "sluice simulate: %v\n", err)
		return code
	}

	source := "(the embedded default)"
	if f.config != "" {
		source = f.config
	}
	printWorkload(stdout, &w, source)
	if len(groups) > 1 {
		cli.Fprintf(stdout, "  each group is simulated alone with all of this load; in the daemon the groups share the service and split the load by their match rules\n")
	}
	var results []simulated
	for _, g := range groups {
		r, err := simulate.ForGroup(w, cfg, g, f.slo)
		if err != nil {
			cli.Fprintf(stderr, "sluice simulate: %v\n", err)
			return exitUsage
		}
		rep, err := sim.Run(r.Scenario, r.Law)
		if err != nil {
			cli.Fprintf(stderr, "sluice simulate: group %q: %v\n", g.Name, err)
			return exitError
		}
		res := simulated{run: r, group: g, report: rep}
		printSimulated(stdout, &res, &w, f.every)
		if f.labRun != nil {
			held, err := simulate.Compare(rep, f.labRun)
			if err != nil {
				cli.Fprintf(stderr, "sluice simulate: -lab %s: %v\n", f.lab, err)
				return exitUsage
			}
			printAgainstLab(stdout, f.lab, f.labRun, held)
		}
		results = append(results, res)
	}
	if f.png != "" {
		if err := writeSimulateChart(f.png, results); err != nil {
			cli.Fprintf(stderr, "sluice simulate: chart: %v\n", err)
			return exitError
		}
		cli.Fprintf(stdout, "\nchart: %s\n", f.png)
	}
	return exitOK
}

// simulated is one group's simulation.
type simulated struct {
	run    simulate.Run
	group  *spec.Group
	report *sim.Report
}

// simulateGroups returns the groups to simulate: every one, or the one
// named.
func simulateGroups(cfg *configs.Config, name string) ([]*spec.Group, error) {
	var all []*spec.Group
	var names []string
	for i := range cfg.Groups {
		g := &cfg.Groups[i]
		if g.Name == name {
			return []*spec.Group{g}, nil
		}
		all, names = append(all, g), append(names, g.Name)
	}
	if name != "" {
		return nil, fmt.Errorf("-group %q: the config has no such group (it has %s)", name, strings.Join(names, ", "))
	}
	return all, nil
}

// simulateWorkload builds the service and load from the scenario and the
// flags; on error it also returns the exit code.
func simulateWorkload(f *simulateFlags) (simulate.Workload, int, error) {
	var w simulate.Workload
	switch {
	case strings.HasSuffix(f.scenario, ".scenario"):
		var err error
		if w, err = simulate.FromSimFile(f.scenario); err != nil {
			return w, exitError, err
		}
	case f.scenario != "":
		s, err := lab.LoadScenario(f.scenario)
		if err != nil {
			code := exitError
			if !strings.ContainsRune(f.scenario, '/') && !strings.HasSuffix(f.scenario, ".toml") {
				code = exitUsage // an unknown name, not a bad file
			}
			return w, code, err
		}
		if f.labRun != nil && f.labRun.Quick {
			s = s.Shortened() // the lab ran its -quick version
		}
		if w, err = simulate.FromLab(s); err != nil {
			return w, exitError, err
		}
	}
	bad := func(err error) (simulate.Workload, int, error) { return w, exitUsage, err }
	if f.load != "" || f.set["capacity"] || f.set["mean"] || f.set["median"] || f.set["workers"] || f.set["service-time"] {
		var base *sim.Service
		if f.scenario != "" {
			base = &w.Scenario.Service
		}
		svc, remark, err := simulate.ServiceOf(simulate.ServiceDesc{Capacity: f.capacity, Workers: f.workers,
			Mean: f.mean, Median: f.median, Shape: f.dist}, base)
		if err != nil {
			return bad(fmt.Errorf("the service: %w", err))
		}
		w.SetService(svc)
		w.ServiceRemark = remark
	}
	sc := &w.Scenario
	if f.load != "" {
		segs, phases, d, err := simulate.Load(f.load, sc.Service.Capacity(), f.duration)
		if err != nil {
			return bad(fmt.Errorf("-load: %w", err))
		}
		sc.Name, sc.Load, sc.Phases, sc.Duration = "flags", segs, phases, d
		w.Source = "-load " + f.load
		sc.Clients = sim.Clients{Timeout: f.timeout, Backoff: f.backoff}
		sc.Seed = 1
	}
	if f.set["shared-cores"] || f.costs != "" {
		if !f.set["shared-cores"] {
			return bad(errors.New("-shared-costs are costs on the cores -shared-cores says the service shares: give it"))
		}
		h, err := simulate.HostOf(f.cores, f.costs)
		if err != nil {
			return bad(fmt.Errorf("-shared-cores, -shared-costs: %w", err))
		}
		sc.Host = h
	}
	if err := w.Changes(f.changes); err != nil {
		return bad(fmt.Errorf("-change: %w", err))
	}
	c := &sc.Clients
	if f.set["timeout"] {
		c.Timeout = f.timeout
	}
	if f.set["retries"] {
		c.Retries = f.retries
	}
	if f.set["backoff"] {
		c.Backoff = f.backoff
	}
	if f.set["retry-after"] {
		c.RetryAfter = f.retryAfter
	}
	if f.set["seed"] {
		sc.Seed = f.seed
	}
	if f.priorities != "" {
		if err := w.SetPriorities(f.priorities); err != nil {
			return bad(fmt.Errorf("-priorities: %w", err))
		}
	}
	if f.tenants != "" {
		if err := w.SetTenants(f.tenants); err != nil {
			return bad(fmt.Errorf("-tenants: %w", err))
		}
	}
	return w, exitOK, nil
}

// writeSimulateChart draws every group's run into the PNG file path; a
// chart it could not finish is removed.
func writeSimulateChart(path string, results []simulated) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = drawSimulated(f, results)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
