package lab

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
	"github.com/sluicehq/sluice/cmd/internal/lab/load"
	"github.com/sluicehq/sluice/cmd/internal/lab/report"
	"github.com/sluicehq/sluice/cmd/internal/lab/scenario"
)

// Runner runs scenarios and writes their reports. The zero value runs
// nothing useful: set Out at least.
type Runner struct {
	Out   string // the directory reports go to; one sub-directory per scenario
	Quick bool   // run each scenario's short version
	// BackendCommand starts the backend as a child process (the lab's own
	// binary with "backend", say), so that its memory and CPU are measured
	// apart from the generator's. Nil runs it in this process.
	BackendCommand []string
	// HogCommand starts a scenario's CPU hog as a child process (the lab's
	// own binary with "hog"), given -threads and -nice; it must print a line
	// on stdout once its loops run. Nil runs the hog in this process.
	HogCommand []string
	// Vars are extra placeholders for contender commands and files (the
	// operator's -var): they override a contender's own vars.
	Vars map[string]string
	// Defaults are placeholders that a contender's own vars (the library's,
	// its scenario's or its own) may set otherwise, such as "sluice" (the
	// daemon's path: a contender that names its own binary, for an A/B of
	// two builds, runs that one).
	Defaults map[string]string
	// Progress receives the progress display; nil shows none. Terminal
	// draws a bar in place instead of a line every ten seconds.
	Progress io.Writer
	Terminal bool
	// Program names the caller at the start of each progress line;
	// empty: "sluice-lab".
	Program string
	// SampleEvery is the polling period; zero: a second.
	SampleEvery time.Duration
	// Hold, if set, is called after each run's load with the run's
	// report, while the contender and the backend are still up (a
	// dashboard the contender serves still answers); the contender is
	// stopped when Hold returns.
	Hold func(ctx context.Context, run report.Run)
}

// Outcome is what one scenario produced.
type Outcome struct {
	Scenario *scenario.Scenario
	Dir      string // where its report is
	Runs     []report.Run
}

// Run runs each scenario with each of its contenders, one after another,
// and writes the reports. A contender that fails is reported as failed
// and the others still run; the error returned joins every failure. If
// ctx ends, Run stops the current run, writes what it has and returns.
func (r *Runner) Run(ctx context.Context, scenarios []*scenario.Scenario) ([]Outcome, error) {
	if r.Out == "" {
		return nil, errors.New("lab: no output directory")
	}
	program := r.Program
	if program == "" {
		program = "sluice-lab"
	}
	pr := &progress{w: r.Progress, tty: r.Terminal, plainEvery: 10 * time.Second, prefix: program + ": "}
	for _, s := range scenarios {
		pr.total += r.version(s).Schedule().Duration() * time.Duration(len(s.Contenders))
	}
	var outcomes []Outcome
	var errs []error
	for _, s := range scenarios {
		s = r.version(s)
		dir := filepath.Join(r.Out, s.Name)
		o := Outcome{Scenario: s, Dir: dir}
		for _, spec := range s.Contenders {
			if ctx.Err() != nil {
				break
			}
			run, err := r.runOne(ctx, s, spec, dir, pr)
			if err != nil {
				errs = append(errs, fmt.Errorf("lab: %s/%s: %w", s.Name, spec.Name, err))
			}
			o.Runs = append(o.Runs, run)
		}
		if err := report.WriteScenario(dir, s.Header, o.Runs); err != nil {
			errs = append(errs, err)
		}
		outcomes = append(outcomes, o)
	}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return outcomes, errors.Join(errs...)
}

func (r *Runner) version(s *scenario.Scenario) *scenario.Scenario {
	if r.Quick {
		return s.Shortened()
	}
	return s
}

// Check fills in the placeholders of every command contender of the
// scenarios as a run would (with stand-ins for the ports and paths a run
// picks), so that an unknown placeholder (a var not given, a typo) is
// found before any load runs. It returns every problem, each unknown
// placeholder once with the contenders that use it.
func (r *Runner) Check(scenarios []*scenario.Scenario) error {
	vars := map[string]string{}
	for _, name := range Placeholders {
		vars[name] = "0"
	}
	maps.Copy(vars, r.Vars)
	users := map[string][]string{} // unknown placeholder → its contenders
	var errs []error
	for _, s := range scenarios {
		for _, spec := range s.Contenders {
			if spec.Kind != scenario.KindCommand {
				continue
			}
			where := s.Name + "/" + spec.Name
			_, err := NewCommand(spec).expand(r.Defaults, vars)
			var unknown *unknownVarError
			switch {
			case err == nil:
			case errors.As(err, &unknown):
				users[unknown.name] = append(users[unknown.name], where)
			default:
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(users)) {
		errs = append(errs, fmt.Errorf("lab: unknown placeholder {{%s}} in %s", name, strings.Join(users[name], ", ")))
	}
	return errors.Join(errs...)
}

// Placeholders are the names the runner defines for every contender (see
// Env).
var Placeholders = []string{"dir", "backend", "backend_addr", "port", "admin_port", "workers", "capacity", "mean_ms", "slo"}

// contenderFor builds the Contender a scenario entry describes.
func contenderFor(spec scenario.Contender) Contender {
	if spec.Kind == scenario.KindCommand {
		return NewCommand(spec)
	}
	return NewDirect(spec.Name)
}

// runOne runs one contender through one scenario. The returned Run is
// always filled in as far as it got; the error says what failed.
func (r *Runner) runOne(ctx context.Context, s *scenario.Scenario, spec scenario.Contender, dir string, pr *progress) (report.Run, error) {
	c := contenderFor(spec)
	bp, err := s.BackendParams()
	if err != nil {
		return report.Run{}, err
	}
	sched := s.Schedule()
	run := report.Run{
		Scenario: s.Name, Contender: c.Name(), Quick: r.Quick, Started: time.Now(),
		Capacity: bp.Capacity(), SLO: time.Duration(s.SLO), Schedule: sched, Params: bp,
	}
	if run.SLO == 0 {
		run.SLO = load.DefaultSLO
	}
	label := s.Name + "/" + c.Name()
	fail := func(err error) (report.Run, error) {
		run.Error = err.Error()
		pr.finish(sched.Duration(), label+": failed: "+err.Error())
		return run, err
	}
	scratch := filepath.Join(dir, c.Name())
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return fail(err)
	}
	be, err := startBackend(bp, r.BackendCommand, scratch)
	if err != nil {
		return fail(err)
	}
	defer func() {
		// Requests still queued in the backend are of no interest now.
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = be.stop(sctx)
	}()

	env, err := r.env(be, bp, run.SLO, scratch)
	if err != nil {
		return fail(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	running, err := c.Start(sctx, env)
	cancel()
	var skip *SkipError
	if errors.As(err, &skip) {
		run.Skipped = skip.Reason
		pr.finish(sched.Duration(), label+": skipped: "+skip.Reason)
		return run, nil
	}
	if err != nil {
		return fail(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = running.Stop(context.Background())
		}
	}()

	lp, err := s.LoadParamsFor(spec, running.URL())
	if err != nil {
		return fail(err)
	}
	if spec.Retry != nil {
		run.Notes = append(run.Notes, fmt.Sprintf("this contender's clients retry in mode %q, up to %d times (not the scenario's load.retry)", lp.Retry.Mode, lp.Retry.Attempts))
	}
	run.Timeout = cmp.Or(lp.Timeout, load.DefaultTimeout)
	if lp.Deadline > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("callers give up %v after each arrival: no try outlasts it, no retry starts after it", lp.Deadline))
	}
	gen, err := load.New(lp)
	if err != nil {
		return fail(err)
	}
	if h, ok := s.HogParams(); ok {
		stopHog, err := startHog(h, r.HogCommand, scratch)
		if err != nil {
			return fail(err)
		}
		defer stopHog()
		run.Notes = append(run.Notes, "a CPU hog ran beside the backend: "+h.String())
	}
	if err := be.reset(ctx); err != nil {
		return fail(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() { run.Samples = r.sample(ctx, done, gen, be, running, label, sched.Duration(), pr) })
	res, runErr := gen.Run(ctx)
	close(done)
	wg.Wait()
	run.Load = res

	if st, err := be.stats(context.Background()); err == nil {
		run.Backend = st
	} else {
		run.Notes = append(run.Notes, err.Error())
	}
	if r.Hold != nil && runErr == nil {
		held := run
		report.Compute(&held)
		r.Hold(ctx, held)
	}
	stopped = true
	if err := running.Stop(context.Background()); err != nil {
		run.Notes = append(run.Notes, err.Error())
	}
	if be.pid == 0 {
		run.Notes = append(run.Notes, "backend ran inside the lab's process: no backend RSS or CPU")
	}
	report.Compute(&run)
	if runErr != nil {
		return fail(runErr)
	}
	m := run.Metrics
	pr.finish(sched.Duration(), fmt.Sprintf("%s: offered %.0f/s, goodput %.0f/s, p99 %.0f ms, rejected %.1f%%, errors %.1f%%",
		label, m.OfferedRate, m.Goodput, m.P99, 100*m.RejectRate, 100*m.ErrorRate))
	return run, nil
}

// env fills in the placeholders a contender may use.
func (r *Runner) env(be *backendRun, bp backend.Params, slo time.Duration, dir string) (Env, error) {
	port, err1 := freePort()
	admin, err2 := freePort()
	if err := errors.Join(err1, err2); err != nil {
		return Env{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Env{}, fmt.Errorf("lab: %w", err)
	}
	vars := map[string]string{
		"dir":          abs,
		"backend":      be.url,
		"backend_addr": be.addr(),
		"port":         port,
		"admin_port":   admin,
		"workers":      strconv.Itoa(bp.Workers),
		"capacity":     strconv.FormatFloat(bp.Capacity(), 'f', 0, 64),
		"mean_ms":      strconv.FormatFloat(float64(bp.Service.MeanTime().Microseconds())/1000, 'f', -1, 64),
		"slo":          slo.String(),
	}
	maps.Copy(vars, r.Vars)
	return Env{Backend: be.url, Dir: abs, Vars: vars, Defaults: r.Defaults}, nil
}

// sample polls the backend, the contender and their processes every
// SampleEvery until done closes, and drives the progress display.
func (r *Runner) sample(ctx context.Context, done <-chan struct{}, gen *load.Generator, be *backendRun, c Running, label string, length time.Duration, pr *progress) []report.Sample {
	every := r.SampleEvery
	if every == 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var out []report.Sample
	for {
		select {
		case <-done:
			return out
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		live := gen.Live()
		pctx, cancel := context.WithTimeout(ctx, every/2)
		s := report.Sample{T: live.Elapsed.Seconds(), ClientInflight: live.Inflight}
		if st, err := be.stats(pctx); err == nil {
			s.Backend = &report.BackendSample{InService: st.InService, Queued: st.Queued, Capacity: st.Capacity, HeldBytes: st.HeldBytes, Crashes: st.Crashes}
		}
		cs := c.Sample(pctx)
		cancel()
		s.Limit, s.Inflight, s.Rate, s.ContenderRSS = cs.Limit, cs.Inflight, cs.Rate, cs.RSS
		if cs.CPU != nil {
			v := cs.CPU.Seconds()
			s.ContenderCPU = &v
		}
		if u, ok := groupUsage(be.pid); ok {
			rss, cpu := u.RSS, u.CPU.Seconds()
			s.BackendRSS, s.BackendCPU = &rss, &cpu
		}
		out = append(out, s)
		pr.update(label, live.Elapsed, length, live)
	}
}
