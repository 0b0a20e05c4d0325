package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Files written for each scenario into its directory.
const (
	SummaryFile  = "summary.md"
	GoodputPlot  = "goodput.png"
	timelinePlot = "timeline-%s.png"
)

// TimelinePlot is the name of a contender's timeline plot.
func TimelinePlot(contender string) string { return fmt.Sprintf(timelinePlot, contender) }

// WriteScenario writes every output of one scenario's runs into dir:
// CONTENDER.json per run, summary.md, goodput.png and a timeline plot per
// contender that ran. header is the scenario file's explanation.
func WriteScenario(dir, header string, runs []Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var errs []error
	for i := range runs {
		errs = append(errs, writeFile(filepath.Join(dir, runs[i].Contender+".json"), func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(&runs[i])
		}))
	}
	errs = append(errs, writeFile(filepath.Join(dir, SummaryFile), func(w io.Writer) error {
		return Markdown(w, header, runs)
	}))
	if ran := ranRuns(runs); len(ran) > 0 {
		errs = append(errs, writeFile(filepath.Join(dir, GoodputPlot), func(w io.Writer) error {
			return WritePNG(w, 900, 420, []Panel{GoodputPanel(ran)})
		}))
		for _, r := range ran {
			errs = append(errs, writeFile(filepath.Join(dir, TimelinePlot(r.Contender)), func(w io.Writer) error {
				return WritePNG(w, 1000, 260, TimelinePanels(r))
			}))
		}
	}
	return errors.Join(errs...)
}

func ranRuns(runs []Run) []Run {
	var out []Run
	for _, r := range runs {
		if r.Skipped == "" {
			out = append(out, r)
		}
	}
	return out
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	bw := bufio.NewWriter(f)
	err = write(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	return nil
}

// Markdown writes the scenario's summary: its explanation, a table with
// one row per contender, then figures by phase and by class.
func Markdown(w io.Writer, header string, runs []Run) error {
	bw := &errWriter{w: w}
	if len(runs) > 0 {
		r := runs[0]
		quick := ""
		if r.Quick {
			quick = " (-quick)"
		}
		bw.printf("# %s%s\n\n", r.Scenario, quick)
		for _, line := range strings.Split(header, "\n") {
			bw.printf("> %s\n", line)
		}
		bw.printf("\nC = %.0f req/s at the start, SLO %v, %v of load.\n\n", r.Capacity, r.SLO, r.Schedule.Duration())
	}
	bw.printf("| contender | offered/s | goodput/s | goodput share | good in 1st s | p50 ms | p99 ms | worst 1 s p99 ms | reject p99 ms | p99.9 ms | rejected | errors | tries/arrival | converge s | limit osc. | peak RSS proxy | peak RSS backend | CPU µs/req proxy | fairness | crashes |\n")
	bw.printf("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range runs {
		if r.Skipped != "" {
			bw.printf("| %s | skipped: %s |||||||||||||||||||\n", r.Contender, r.Skipped)
			continue
		}
		m := r.Metrics
		bw.printf("| %s | %.0f | %.0f | %s | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %s | %.2f | %s | %s | %s | %s | %s | %s | %d |\n",
			r.Contender, m.OfferedRate, m.Goodput, pct(m.GoodputShare), m.FirstSecondGood, m.P50, m.P99,
			m.WorstSecondP99, m.RejectP99, m.P999, pct(m.RejectRate), pct(m.ErrorRate), m.Amplification,
			optFloat(m.ConvergenceMax, "%.0f"), optFloat(m.LimitOscillation, "%.2f"),
			optBytes(m.PeakRSSContender), optBytes(m.PeakRSSBackend), optFloat(m.CPUPerReqProxy, "%.0f"),
			optFloat(m.Fairness, "%.2f"), m.BackendCrashes)
	}
	for _, r := range runs {
		if r.Error != "" {
			bw.printf("\n**%s failed:** %s\n", r.Contender, r.Error)
		}
		for _, n := range r.Notes {
			bw.printf("\n*%s:* %s\n", r.Contender, n)
		}
	}
	ran := ranRuns(runs)
	if len(ran) > 0 && len(ran[0].Load.Phases) > 1 {
		bw.printf("\n## By phase\n\n| contender | phase | offered/s | goodput/s | p99 ms | reject p99 ms | rejected | errors | peak RSS proxy | peak RSS backend |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range ran {
			for i, p := range r.Load.Phases {
				secs := p.For.Seconds()
				var rss PhaseRSS
				if i < len(r.Metrics.PhaseRSS) {
					rss = r.Metrics.PhaseRSS[i]
				}
				bw.printf("| %s | %s | %.0f | %.0f | %.1f | %s | %s | %s | %s | %s |\n", r.Contender, p.Label,
					float64(p.Offered)/secs, float64(p.Good)/secs, p.Latency.P99, optQuantile(p.RejectLatency.Count, p.RejectLatency.P99),
					ratio(p.Rejected, p.Offered), ratio(p.Errors, p.Offered),
					optBytes(rss.Contender), optBytes(rss.Backend))
			}
		}
	}
	for _, kind := range []string{"tenant", "priority"} {
		header := false
		for _, r := range ran {
			classes := r.Load.Tenants
			if kind == "priority" {
				classes = r.Load.Priorities
			}
			for _, c := range classes {
				if !header {
					bw.printf("\n## By %s\n\n| contender | %s | share | offered/s | goodput/s | p99 ms | reject p99 ms | rejected | errors |\n|---|---|--:|--:|--:|--:|--:|--:|--:|\n", kind, kind)
					header = true
				}
				secs := r.Schedule.Duration().Seconds()
				bw.printf("| %s | %s | %s | %.0f | %.0f | %.1f | %s | %s | %s |\n", r.Contender, c.Name, pct(c.Fraction),
					float64(c.Offered)/secs, float64(c.Good)/secs, c.Latency.P99, optQuantile(c.RejectLatency.Count, c.RejectLatency.P99),
					ratio(c.Rejected, c.Offered), ratio(c.Errors, c.Offered))
			}
		}
	}
	if len(ran) > 0 {
		bw.printf("\n## Plots\n\n![goodput vs offered load](%s)\n", GoodputPlot)
		for _, r := range ran {
			bw.printf("\n![%s over time](%s)\n", r.Contender, TimelinePlot(r.Contender))
		}
	}
	return bw.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func ratio(n, d int64) string {
	if d == 0 {
		return "–"
	}
	return pct(float64(n) / float64(d))
}

func optFloat(v *float64, format string) string {
	if v == nil || math.IsNaN(*v) {
		return "–"
	}
	return fmt.Sprintf(format, *v)
}

// optQuantile formats a latency quantile of n answers, "–" for none.
func optQuantile(n int64, ms float64) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", ms)
}

func optBytes(v *int64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f MiB", float64(*v)/(1<<20))
}
