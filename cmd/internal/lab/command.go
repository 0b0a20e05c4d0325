package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/proc"
	"github.com/sluicehq/sluice/cmd/internal/lab/scenario"
)

// DefaultStartTimeout bounds a command contender's start when its
// scenario sets none.
const DefaultStartTimeout = 15 * time.Second

// SkipError says a contender cannot run here (a required program is
// missing); the run is reported as skipped, not failed.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return "lab: skipped: " + e.Reason }

// Command is a contender that runs a program: it writes the scenario's
// files into the run's directory, starts the command with the placeholders
// filled in, waits until its ready URL answers, polls its Prometheus
// metrics (if any) and its processes' memory and CPU, and stops it with
// SIGTERM (then SIGKILL) at the end.
type Command struct {
	spec scenario.Contender
}

// NewCommand returns the contender a scenario's [[contender]] of kind
// "command" describes.
func NewCommand(spec scenario.Contender) *Command { return &Command{spec: spec} }

// Name implements Contender.
func (c *Command) Name() string { return c.spec.Name }

// Start implements Contender.
func (c *Command) Start(ctx context.Context, env Env) (Running, error) {
	for _, prog := range c.spec.Requires {
		if _, err := exec.LookPath(prog); err != nil {
			return nil, &SkipError{Reason: prog + " is not installed"}
		}
	}
	x, err := c.expand(env.Defaults, env.Vars)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(x.files)) {
		if err := os.WriteFile(filepath.Join(env.Dir, name), []byte(x.files[name]), 0o644); err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
	}
	r := &commandRun{url: x.url, metrics: x.metrics, client: &http.Client{Timeout: 500 * time.Millisecond}}
	if x.metrics != "" {
		for _, m := range []struct {
			src string
			dst **selector
		}{{c.spec.LimitMetric, &r.limit}, {c.spec.InflightMetric, &r.inflight}, {c.spec.RateMetric, &r.rate}} {
			if m.src == "" {
				continue
			}
			sel, err := parseSelector(m.src)
			if err != nil {
				return nil, err
			}
			*m.dst = &sel
		}
	}
	if r.p, err = proc.Start(x.argv, env.Dir, filepath.Join(env.Dir, c.spec.Name+".log"), nil); err != nil {
		return nil, err
	}
	timeout := time.Duration(c.spec.StartTimeout)
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := r.p.WaitReady(wctx, func(ctx context.Context) error { return r.get(ctx, x.ready, nil) }); err != nil {
		_ = r.p.Stop(time.Second)
		return nil, fmt.Errorf("%w (its log: %s)", err, filepath.Join(env.Dir, c.spec.Name+".log"))
	}
	return r, nil
}

// expanded is a command contender's strings with the placeholders filled in.
type expanded struct {
	argv                []string
	url, ready, metrics string
	files               map[string]string
}

// expand fills in every placeholder of the contender's strings from
// defaults, the contender's own vars and vars, each winning over the one
// before: vars hold the operator's -var, defaults what a contender may set
// otherwise (the sluice binary).
func (c *Command) expand(defaults, vars map[string]string) (expanded, error) {
	all := merged(defaults, c.spec.Vars, vars)
	x := expanded{argv: make([]string, len(c.spec.Command)), files: map[string]string{}}
	var errs []error
	one := func(dst *string, src, where string) {
		v, err := expand(src, all)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w (in %s)", err, where))
		}
		*dst = v
	}
	for i, a := range c.spec.Command {
		one(&x.argv[i], a, "command")
	}
	one(&x.url, c.spec.URL, "url")
	x.ready = x.url
	if c.spec.Ready != "" {
		one(&x.ready, c.spec.Ready, "ready")
	}
	one(&x.metrics, c.spec.Metrics, "metrics")
	for _, name := range slices.Sorted(maps.Keys(c.spec.Files)) {
		var body string
		one(&body, c.spec.Files[name], "file "+name)
		x.files[name] = body
	}
	return x, errors.Join(errs...)
}

// merged is the union of maps, later ones winning.
func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

type commandRun struct {
	url, metrics    string
	limit, inflight *selector
	rate            *selector
	p               *proc.Process
	client          *http.Client
}

func (r *commandRun) URL() string { return r.url }

// get fetches url; any HTTP answer counts as success. body, if not nil,
// receives the response body.
func (r *commandRun) get(ctx context.Context, url string, body *string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if body != nil {
		*body = string(b)
	}
	return err
}

func (r *commandRun) Sample(ctx context.Context) Sample {
	var s Sample
	if u, err := proc.GroupUsage(r.p.PID()); err == nil {
		s.RSS, s.CPU = &u.RSS, &u.CPU
	}
	if r.metrics == "" {
		return s
	}
	var text string
	if err := r.get(ctx, r.metrics, &text); err != nil {
		return s
	}
	for _, m := range []struct {
		sel *selector
		dst **float64
	}{{r.limit, &s.Limit}, {r.inflight, &s.Inflight}, {r.rate, &s.Rate}} {
		if m.sel == nil {
			continue
		}
		if v, ok := m.sel.find(text); ok {
			*m.dst = &v
		}
	}
	return s
}

func (r *commandRun) Stop(context.Context) error {
	select {
	case <-r.p.Done():
		err := r.p.Stop(0)
		return errors.Join(errors.New("lab: the contender exited during the run"), err)
	default:
	}
	return r.p.Stop(5 * time.Second)
}
