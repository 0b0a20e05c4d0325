//go:build !nodemo

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/cli"
	"github.com/sluicehq/sluice/cmd/internal/lab"
	"github.com/sluicehq/sluice/cmd/internal/lab/report"
	"github.com/sluicehq/sluice/cmd/internal/lab/scenario"
	"github.com/sluicehq/sluice/configs"
)

// demoBinary is the sluice binary the demo runs as its daemon: this one.
// Tests point it at a built binary (a test binary is not sluice).
var demoBinary = os.Executable

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	duration := fs.Duration("duration", 25*time.Second, "")
	quick := fs.Bool("quick", false, "")
	keep := fs.Bool("keep", false, "")
	out := fs.String("out", "", "")
	if err := fs.Parse(args); err != nil {
		cli.Fprintf(stderr, "sluice demo: %v\nRun \"sluice help demo\" for the flags.\n", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		cli.Fprintf(stderr, "sluice demo: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *duration < 2*time.Second || *duration > time.Hour {
		cli.Fprintf(stderr, "sluice demo: -duration must be from 2s to 1h, got %v\n", *duration)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	s, err := demoScenario(*duration)
	if err != nil {
		cli.Fprintf(stderr, "sluice demo: %v\n", err)
		return exitError
	}
	self, err := demoBinary()
	if err != nil {
		cli.Fprintf(stderr, "sluice demo: cannot find the sluice binary to run: %v\n", err)
		return exitError
	}
	dir := *out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "sluice-demo-"); err != nil {
			cli.Fprintf(stderr, "sluice demo: %v\n", err)
			return exitError
		}
		defer os.RemoveAll(dir)
	}
	port, err := adminPort()
	if err != nil {
		cli.Fprintf(stderr, "sluice demo: %v\n", err)
		return exitError
	}

	sched := s
	if *quick {
		sched = s.Shortened()
	}
	cli.Fprintf(stdout, "sluice demo: a service with capacity C = %.0f req/s; load ramps from 0.5×C to 3×C over %v, twice:\n",
		s.Capacity(), sched.Schedule().Duration().Round(time.Second))
	cli.Fprintf(stdout, "  1. through sluice with no limit\n  2. through sluice with the target law (p99 ≤ %v)\n", time.Duration(s.SLO))
	cli.Fprintf(stdout, "dashboard of the sluice being measured: http://127.0.0.1:%s/\n\n", port)

	var runs []report.Run
	printed := false
	r := &lab.Runner{
		Out: dir, Quick: *quick, Program: "sluice demo",
		Vars:     map[string]string{"sluice": self, "admin_port": port},
		Progress: stderr, Terminal: cli.IsTerminal(stderr),
		Hold: func(ctx context.Context, run report.Run) {
			runs = append(runs, run)
			if !*keep || len(runs) < len(s.Contenders) {
				return
			}
			printDemoTable(stdout, runs)
			printed = true
			cli.Fprintf(stdout, "\nThe dashboard stays up at http://127.0.0.1:%s/ and sluice at %s; Ctrl-C to stop.\n", port, demoProxyHint(dir, s.Name, run.Contender))
			<-ctx.Done()
		},
	}
	_, err = r.Run(ctx, []*scenario.Scenario{s})
	if !printed && len(runs) > 0 {
		printDemoTable(stdout, runs)
	}
	if *out != "" {
		cli.Fprintf(stdout, "\nReports: %s\n", filepath.Join(dir, s.Name, report.SummaryFile))
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled) && printed:
		return exitOK // -keep ends with Ctrl-C
	case errors.Is(err, context.Canceled):
		cli.Fprintf(stderr, "sluice demo: interrupted\n")
		return exitError
	}
	cli.Fprintf(stderr, "sluice demo: %v\n", err)
	return exitError
}

// demoScenario is the lab's demo scenario with each run's load lasting d.
func demoScenario(d time.Duration) (*scenario.Scenario, error) {
	s, err := lab.LoadScenario("demo")
	if err != nil {
		return nil, err
	}
	f := float64(d) / float64(s.Schedule().Duration())
	for i := range s.Load.Phases {
		s.Load.Phases[i].For = scenario.Duration(time.Duration(float64(s.Load.Phases[i].For) * f).Round(time.Millisecond))
	}
	return s, nil
}

// demoAdminListen is where the demo's dashboard listens when that is free:
// admin.listen's default, where the docs say the dashboard is. Tests set
// "127.0.0.1:0", so that they never take a port a user's sluice may want.
var demoAdminListen = configs.DefaultAdminListen

// adminPort is the port of demoAdminListen when it is free; else a free
// loopback port.
func adminPort() (string, error) {
	for _, addr := range []string{demoAdminListen, "127.0.0.1:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		return port, nil
	}
	return "", errors.New("no free loopback port for the dashboard")
}

// demoProxyHint says where the kept sluice listens: the address in the
// config the lab wrote for it.
func demoProxyHint(dir, scenarioName, contender string) string {
	cfg := filepath.Join(dir, scenarioName, contender, "sluice.toml")
	if c, err := loadConfig(cfg); err == nil {
		return "http://" + c.Server.Listen + " (config " + cfg + ")"
	}
	return "the address in " + cfg
}

// demoNames are the table's names for the demo's contenders.
var demoNames = map[string]string{"no-limit": "no limit", "target": "sluice (target law)"}

// printDemoTable writes the side-by-side comparison of the runs.
func printDemoTable(w io.Writer, runs []report.Run) {
	cli.Fprintf(w, "\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\tgoodput/s\tgoodput at 3×C\tadmitted p99\trejected\terrors\tpeak RSS of sluice\n")
	for _, r := range runs {
		name := demoNames[r.Contender]
		if name == "" {
			name = r.Contender
		}
		m := r.Metrics
		at3C := "–"
		if n := len(r.Load.Phases); n > 0 {
			p := r.Load.Phases[n-1]
			at3C = fmt.Sprintf("%.0f (%.0f%% of C)", float64(p.Good)/p.For.Seconds(), 100*float64(p.Good)/p.For.Seconds()/r.Capacity)
		}
		rss := "–"
		if m.PeakRSSContender != nil {
			rss = fmt.Sprintf("%.0f MiB", float64(*m.PeakRSSContender)/(1<<20))
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%.1f%%\t%.1f%%\t%s\n", name, m.Goodput, at3C,
			latency(m.P99), 100*m.RejectRate, 100*m.ErrorRate, rss)
	}
	tw.Flush()
	if len(runs) > 0 {
		cli.Fprintf(w, "\ngoodput: answers within %v per second, over the whole ramp and in its last phase at 3×C;\nerrors: requests that timed out (after %v) or failed.\n", runs[0].SLO, runs[0].Timeout)
	}
}

// latency formats milliseconds as ms below a second, else as seconds.
func latency(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
