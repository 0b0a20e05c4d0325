package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/cmd/internal/cli"
	"github.com/sluicehq/sluice/cmd/internal/lab"
	"github.com/sluicehq/sluice/cmd/internal/lab/report"
	"github.com/sluicehq/sluice/cmd/internal/lab/scenario"
)

var runCommand = cli.Command{
	Name:    "run",
	Summary: "run scenarios and write their reports",
	Usage: `usage: sluice-lab run [-quick] [-out DIR] [-only NAMES] [-seed N] [-var NAME=VALUE]... SCENARIO...

Runs each scenario (a shipped one by name, see "sluice-lab scenarios", or a
file by path) with each of its contenders in turn, on loopback, and writes
into DIR/SCENARIO/: CONTENDER.json per run, summary.md (one row per
contender), goodput.png and timeline-CONTENDER.png. A progress bar with the
time left goes to stderr on a terminal, a line every 10 s otherwise.

Flags:
  -quick          run the short version of each scenario (about a tenth)
  -out DIR        where reports go (default lab-results)
  -only NAMES     run only these contenders (comma-separated) of each scenario
  -var NAME=VALUE a placeholder for contender commands and files, e.g.
                  -var static_limit=16; repeatable
  -sluice PATH    the sluice binary the sluice contenders run (default:
                  "sluice" beside sluice-lab, else on PATH); the same as
                  -var sluice=PATH. A contender whose vars.sluice names its
                  own binary (an A/B of two builds) runs that one
  -seed N         run with this seed instead of each scenario's own (the
                  arrivals differ, the rest is the same): for repeats
  -inprocess      run the backend (and a scenario's CPU hog) inside
                  sluice-lab instead of as child processes (the backend's
                  memory and CPU are then not measured)

Exit codes: 0 when every run finished, 1 when one failed (the others still
run and are reported), 2 on a bad command line or scenario file.
`,
	Run: runRun,
}

// varFlags collects repeated -var NAME=VALUE.
type varFlags map[string]string

func (v varFlags) String() string { return fmt.Sprint(map[string]string(v)) }

func (v varFlags) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	v[k] = val
	return nil
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quick := fs.Bool("quick", false, "")
	out := fs.String("out", "lab-results", "")
	inprocess := fs.Bool("inprocess", false, "")
	only := fs.String("only", "", "")
	seed := fs.Uint64("seed", 0, "")
	sluice := fs.String("sluice", "", "")
	vars := varFlags{}
	fs.Var(vars, "var", "")
	if err := fs.Parse(args); err != nil {
		cli.Fprintf(stderr, "sluice-lab run: %v\nRun \"sluice-lab help run\" for the flags.\n", err)
		return exitUsage
	}
	if fs.NArg() == 0 {
		cli.Fprintf(stderr, "sluice-lab run: name at least one scenario (see \"sluice-lab scenarios\")\n")
		return exitUsage
	}
	var scenarios []*scenario.Scenario
	bad := false
	for _, name := range fs.Args() {
		s, err := lab.LoadScenario(name)
		if err != nil {
			cli.Fprintf(stderr, "%v\n", err)
			bad = true
			continue
		}
		scenarios = append(scenarios, s)
	}
	if *seed != 0 {
		for _, s := range scenarios {
			s.Seed = *seed
		}
	}
	if *only != "" {
		if scenarios, bad = keepContenders(scenarios, strings.Split(*only, ","), stderr); bad {
			return exitUsage
		}
	}
	if bad {
		return exitUsage
	}
	defaults := sluiceDefault(vars, *sluice)
	noteOwnSluice(scenarios, defaults["sluice"], stderr)
	r := &lab.Runner{Out: *out, Quick: *quick, Vars: vars, Defaults: defaults, Progress: stderr, Terminal: cli.IsTerminal(stderr)}
	if err := r.Check(scenarios); err != nil {
		cli.Fprintf(stderr, "sluice-lab run: %v\n", err)
		if _, ok := defaults["sluice"]; !ok && strings.Contains(err.Error(), "{{sluice}}") {
			cli.Fprintf(stderr, "sluice-lab run: no sluice binary found beside sluice-lab or on PATH: build one (go build -o sluice ./cmd/sluice) and pass -sluice ./sluice\n")
		}
		return exitUsage
	}
	if !*inprocess {
		self, err := os.Executable()
		if err != nil {
			cli.Fprintf(stderr, "sluice-lab run: cannot find my own binary for the backend (use -inprocess): %v\n", err)
			return exitError
		}
		r.BackendCommand = []string{self, "backend"}
		r.HogCommand = []string{self, "hog"}
	}
	outcomes, err := r.Run(ctx, scenarios)
	for _, o := range outcomes {
		cli.Fprintf(stdout, "%s\n", filepath.Join(o.Dir, report.SummaryFile))
	}
	if err != nil {
		cli.Fprintf(stderr, "sluice-lab run: %v\n", err)
		return exitError
	}
	return exitOK
}

// keepContenders narrows each scenario to the named contenders; a name
// that no scenario has is a usage error.
func keepContenders(scenarios []*scenario.Scenario, names []string, stderr io.Writer) ([]*scenario.Scenario, bool) {
	used := map[string]bool{}
	var out []*scenario.Scenario
	for _, s := range scenarios {
		c := *s
		c.Contenders = nil
		for _, spec := range s.Contenders {
			for _, n := range names {
				if spec.Name == strings.TrimSpace(n) {
					c.Contenders = append(c.Contenders, spec)
					used[spec.Name] = true
				}
			}
		}
		if len(c.Contenders) > 0 {
			out = append(out, &c)
		}
	}
	bad := false
	for _, n := range names {
		if !used[strings.TrimSpace(n)] {
			cli.Fprintf(stderr, "sluice-lab run: no contender %q in these scenarios\n", n)
			bad = true
		}
	}
	return out, bad
}

// sluiceDefault takes the sluice binary out of vars (-var sluice=PATH, or
// -sluice PATH, which wins) into the run's defaults, which a contender's
// own vars.sluice overrides; without either, the sluice found beside
// sluice-lab or on PATH. A path is made absolute: contenders run in their
// scratch directories.
func sluiceDefault(vars map[string]string, flag string) map[string]string {
	if flag != "" {
		vars["sluice"] = flag
	}
	path, ok := vars["sluice"]
	delete(vars, "sluice")
	if !ok {
		if path, ok = findSluice(); !ok {
			return nil
		}
	}
	if strings.ContainsRune(path, filepath.Separator) {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
	}
	return map[string]string{"sluice": path}
}

// noteOwnSluice says which contenders run a sluice binary of their own
// (their vars.sluice) rather than def, the run's.
func noteOwnSluice(scenarios []*scenario.Scenario, def string, stderr io.Writer) {
	for _, s := range scenarios {
		for _, c := range s.Contenders {
			if own, ok := c.Vars["sluice"]; ok && def != "" && own != def {
				cli.Fprintf(stderr, "sluice-lab run: %s/%s runs its own vars.sluice %q, not %q\n", s.Name, c.Name, own, def)
			}
		}
	}
}

// findSluice looks for the sluice binary beside our own, then on PATH.
func findSluice() (string, bool) {
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "sluice")
		if st, err := os.Stat(beside); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return beside, true
		}
	}
	if path, err := exec.LookPath("sluice"); err == nil {
		if abs, err := filepath.Abs(path); err == nil {
			return abs, true
		}
	}
	return "", false
}
