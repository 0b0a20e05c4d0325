//go:build !nodemo

package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/cmd/internal/cli"
	"github.com/sluicehq/sluice/cmd/internal/lab/report"
	"github.com/sluicehq/sluice/cmd/internal/simulate"
	"github.com/sluicehq/sluice/gate/spec"
)

// printWorkload writes what is simulated: the service, its changes, the
// load and the clients.
func printWorkload(w io.Writer, wl *simulate.Workload, config string) {
	sc := &wl.Scenario
	cli.Fprintf(w, "sluice simulate: %s, %v of load, config %s\n", wl.Source, sc.Duration, config)
	s := sc.Service
	cli.Fprintf(w, "  service: %d workers, %s: capacity C = %.0f req/s\n", s.Workers, distText(s.Dist), s.Capacity())
	if wl.ServiceRemark != "" {
		cli.Fprintf(w, "    (%s)\n", wl.ServiceRemark)
	}
	if h := sc.Host; h.On() {
		cli.Fprintf(w, "  shared: %g cores with sluice and the clients; a request costs there send %v, forward %v or refuse %v, handle %v; a trip back %v\n",
			h.Cores, h.Send, h.Forward, h.Refuse, h.Handle, h.Wake)
	}
	var changes []string
	for _, c := range sc.WorkerChanges {
		changes = append(changes, fmt.Sprintf("at %v %d workers", c.At, c.Workers))
	}
	for _, c := range sc.Slowdowns {
		changes = append(changes, fmt.Sprintf("at %v service time ×%g", c.At, c.Factor))
	}
	if len(changes) > 0 {
		cli.Fprintf(w, "  changes: %s\n", strings.Join(changes, ", "))
	}
	var segs []string
	for _, g := range sc.Load {
		switch {
		case g.Ramp:
			segs = append(segs, fmt.Sprintf("%.3gx..%.3gx from %v", g.From, g.To, g.At))
		case g.Period > 0:
			segs = append(segs, fmt.Sprintf("%.3gx±%.3g (period %v) from %v", g.X, g.Amp, g.Period, g.At))
		default:
			segs = append(segs, fmt.Sprintf("%.3gx from %v", g.X, g.At))
		}
	}
	cli.Fprintf(w, "  load (× C): %s\n", strings.Join(segs, ", "))
	c := sc.Clients
	retries := "no retries"
	if c.Retries > 0 {
		how := fmt.Sprintf("after %v jittered", c.Backoff)
		if c.RetryAfter {
			how = "honouring Retry-After"
		}
		retries = fmt.Sprintf("%d retries %s", c.Retries, how)
	}
	cli.Fprintf(w, "  clients: open loop, give up after %v, %s, seed %d\n", c.Timeout, retries, sc.Seed)
	if p := mixText(sc.Priorities); p != "" {
		cli.Fprintf(w, "  priorities: %s\n", p)
	}
	if len(sc.Tenants) > 1 {
		cli.Fprintf(w, "  tenants: %s\n", tenantsText(wl))
	}
	if len(wl.Notes) > 0 {
		cli.Fprintf(w, "  not modelled of the load:\n")
		for _, n := range wl.Notes {
			cli.Fprintf(w, "    - %s\n", n)
		}
	}
}

// printSimulated writes one group's predicted figures: per phase, over
// time, per tenant and priority, and what was not modelled.
func printSimulated(w io.Writer, res *simulated, wl *simulate.Workload, every time.Duration) {
	r, sc := res.report, &res.run.Scenario
	cli.Fprintf(w, "\ngroup %q: %s; SLO %v\n", res.group.Name, policyText(res.group, sc), sc.SLO)
	if why := targetBelowService(res.group, &sc.Service); why != "" {
		cli.Fprintf(w, "  warning: %s\n", why)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "phase\tfrom\toffered/s\tgoodput/s\tof C\tp50\tp99\trejected\tdropped\tlimit\tsteady limit\t\n")
	for _, p := range r.Phases {
		fmt.Fprintf(tw, "%s\t%v\t%.0f\t%.0f\t%.0f%%\t%v\t%v\t%.1f%%\t%.1f%%\t%d..%d\t%.0f\t\n", p.Name, p.Start,
			p.Offered, p.Goodput, 100*p.Goodput/r.Capacity, ms(p.P50), ms(p.P99), 100*p.RejectRate, 100*p.DropRate,
			p.Limit.Min, p.Limit.Max, p.Limit.SteadyMean)
	}
	tw.Flush()
	for _, p := range r.Phases {
		if why := rejectionsText(p.Rejections); why != "" {
			cli.Fprintf(w, "  rejected in %s: %s\n", p.Name, why)
		}
	}

	if every == 0 {
		every = rowEvery(sc.Duration, sc.Interval)
	}
	cli.Fprintf(w, "\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "time\tsent/s\tgoodput/s\trejected/s\tlate\tlimit\tmax in flight\tqueue\tupstream p99\t\n")
	for from := time.Duration(0); from < sc.Duration; from += every {
		to := min(from+every, sc.Duration)
		win := r.Window(from, to)
		if win.Intervals == 0 {
			continue
		}
		secs := float64(win.Intervals) * r.Interval.Seconds()
		var last sim.Point
		var p99s []time.Duration
		maxIn := 0
		for _, pt := range r.Series {
			if pt.T > from && pt.T <= to {
				last, maxIn = pt, max(maxIn, pt.MaxInFlight)
				if pt.P99 > 0 {
					p99s = append(p99s, pt.P99)
				}
			}
		}
		p99 := time.Duration(0)
		if len(p99s) > 0 {
			slices.Sort(p99s)
			p99 = p99s[len(p99s)/2]
		}
		fmt.Fprintf(tw, "%v\t%.0f\t%.0f\t%.0f\t%.1f%%\t%d\t%d\t%d\t%v\t\n", from, float64(win.Attempts)/secs,
			win.Goodput, float64(win.Rejects)/secs, 100*win.LateRatio, last.Limit, maxIn, last.Queue, ms(p99))
	}
	tw.Flush()
	cli.Fprintf(w, "  late: completions beyond the SLO or given up; limit and queue at the row's end; upstream p99: the median of the intervals', as the law saw them\n")

	printOutcomes(w, r, wl)
	if len(res.run.Notes) > 0 {
		cli.Fprintf(w, "  not modelled, or modelled otherwise, of group %q:\n", res.group.Name)
		for _, n := range res.run.Notes {
			cli.Fprintf(w, "    - %s\n", n)
		}
	}
}

// printOutcomes writes the run's outcomes per priority and per tenant
// when there is more than one.
func printOutcomes(w io.Writer, r *sim.Report, wl *simulate.Workload) {
	var prio [adaptive.NumPriorities]sim.Outcome
	tenants := make([]sim.Outcome, len(wl.Scenario.Tenants))
	for _, p := range r.Phases {
		for i, o := range p.Priorities {
			prio[i] = addOutcome(prio[i], o)
		}
		for i := range min(len(tenants), len(p.Tenants)) {
			tenants[i] = addOutcome(tenants[i], p.Tenants[i])
		}
	}
	var lines []string
	for i := adaptive.NumPriorities - 1; i >= 0; i-- {
		if prio[i].Requests > 0 {
			lines = append(lines, outcomeText("priority "+adaptive.Priority(i).String(), prio[i]))
		}
	}
	if len(lines) < 2 {
		lines = nil
	}
	if len(tenants) > 1 {
		for i, o := range tenants {
			lines = append(lines, outcomeText("tenant "+tenantName(wl, i), o))
		}
	}
	for _, l := range lines {
		cli.Fprintf(w, "  %s\n", l)
	}
}

func addOutcome(a, b sim.Outcome) sim.Outcome {
	return sim.Outcome{Requests: a.Requests + b.Requests, Succeeded: a.Succeeded + b.Succeeded, Good: a.Good + b.Good}
}

func outcomeText(what string, o sim.Outcome) string {
	return fmt.Sprintf("%s: %d requests, %.1f%% succeeded, %.1f%% within the SLO", what, o.Requests,
		100*o.SuccessRatio(), 100*o.GoodRatio())
}

// policyText sums up what the group runs in the simulator.
func policyText(g *spec.Group, sc *sim.Scenario) string {
	cc := g.Concurrency
	parts := []string{fmt.Sprintf("law %s, limit %d..%d from %d", cc.Law, cc.Min, cc.Max, cc.Initial)}
	if cc.FixedLimit() {
		parts[0] = fmt.Sprintf("law fixed, limit %d", cc.Limit)
	}
	t := sc.Targets
	var targets []string
	if g.Targets.Latency > 0 {
		targets = append(targets, fmt.Sprintf("%v ≤ %v", t.Quantile, t.Latency))
	}
	for _, x := range []struct {
		name string
		v    float64
	}{{"cpu", t.CPU}, {"memory", t.Memory}, {"cpu pressure", t.CPUPressure}} {
		if x.v > 0 {
			targets = append(targets, fmt.Sprintf("%s ≤ %.0f%%", x.name, 100*x.v))
		}
	}
	if len(targets) > 0 {
		parts = append(parts, "targets "+strings.Join(targets, ", "))
	}
	if sc.Gate.Queue > 0 {
		parts = append(parts, fmt.Sprintf("queue %d %s", sc.Gate.Queue, g.Queue.Order))
	} else {
		parts = append(parts, "no queue")
	}
	if sc.Gate.Rate > 0 {
		managed := ""
		if k, ok := adaptive.LookupLaw(string(cc.Law)); ok && k.ManagesRate {
			managed = ", managed by the law"
		}
		parts = append(parts, fmt.Sprintf("rate %g/s burst %g%s", sc.Gate.Rate, sc.Gate.Burst, managed))
	}
	if sc.Gate.Fair {
		parts = append(parts, "fair share by "+string(g.Key))
	}
	return strings.Join(parts, "; ")
}

func distText(d sim.Dist) string {
	switch {
	case d.Kind == sim.Exponential:
		return fmt.Sprintf("exponential service time of mean %v (median %v)", d.Mean, medianOf(d))
	case d.Kind == sim.Bimodal:
		return fmt.Sprintf("bimodal service time (%v, %v %.0f%% of the time)", d.Fast, d.Slow, 100*d.PSlow)
	case d.Sigma == 0:
		return fmt.Sprintf("constant service time %v", d.Mean)
	}
	return fmt.Sprintf("lognormal service time of mean %v (median %v, sigma %g)", d.Mean, medianOf(d), d.Sigma)
}

// medianOf is d's median service time, to 10 µs.
func medianOf(d sim.Dist) time.Duration {
	m, _ := serviceQuantile(d, 0.5)
	return m.Round(10 * time.Microsecond)
}

// mixText is a priority mix as shares, "" for everyone at one level.
func mixText(p [adaptive.NumPriorities]float64) string {
	var sum float64
	n := 0
	for _, x := range p {
		sum += x
		if x > 0 {
			n++
		}
	}
	if n < 2 {
		return ""
	}
	var parts []string
	for i := adaptive.NumPriorities - 1; i >= 0; i-- {
		if p[i] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", adaptive.Priority(i), 100*p[i]/sum))
		}
	}
	return strings.Join(parts, ", ")
}

func tenantsText(wl *simulate.Workload) string {
	var sum float64
	for _, x := range wl.Scenario.Tenants {
		sum += x
	}
	var parts []string
	for i, x := range wl.Scenario.Tenants {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", tenantName(wl, i), 100*x/sum))
	}
	return strings.Join(parts, ", ")
}

func tenantName(wl *simulate.Workload, i int) string {
	if i < len(wl.Tenants) {
		return wl.Tenants[i]
	}
	return fmt.Sprintf("#%d", i+1)
}

func rejectionsText(n [adaptive.NumRejections]int) string {
	var parts []string
	for i, c := range n {
		if c > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", adaptive.RejectReason(i), c))
		}
	}
	return strings.Join(parts, ", ")
}

// rowEvery is the time table's step for a run of length d: a round step
// giving at most about 25 rows, at least one control interval.
func rowEvery(d, interval time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
		15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
		15 * time.Minute, 30 * time.Minute} {
		if d/s <= 25 {
			return max(s, interval)
		}
	}
	return time.Hour
}

// ms rounds a latency for the tables.
func ms(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Microsecond)
}

// printAgainstLab writes how the simulation compares with the lab run
// read from path: per phase and per second after a step, the lab's
// figures, the simulator's and their ratio, and which are outside issue
// 28's bounds.
func printAgainstLab(w io.Writer, path string, run *report.Run, held []simulate.Stretch) {
	t := simulate.Issue28
	cli.Fprintf(w, "\nagainst the lab: %s (%s, started %s; its generator sent late by %.1fms at p99)\n",
		path, run.Contender, run.Started.Format(time.DateTime), run.Load.DispatchLag.P99)
	if lag := time.Duration(run.Load.DispatchLag.P99 * float64(time.Millisecond)); lag > run.SLO/10 {
		cli.Fprintf(w, "  warning: a lag of %v, over a tenth of the SLO, is the lab's machine starving its generator: that run measured the machine, not the service and sluice\n", ms(lag))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "stretch\tlab goodput/s\tsimulated\tratio\tlab p99\tsimulated\tratio\tlab limit\tsimulated\tratio\toutside ±%.0f%%/±%.0f%%/±%.0f%%\t\n",
		100*t.Goodput, 100*t.P99, 100*t.Limit)
	for _, s := range held {
		limit := [3]string{"–", "–", "–"}
		if s.LabLimit > 0 {
			limit = [3]string{fmt.Sprintf("%.0f", s.LabLimit), fmt.Sprintf("%.0f", s.SimLimit), fmt.Sprintf("%.2f", simulate.Ratio(s.SimLimit, s.LabLimit))}
		}
		miss := s.Misses(t)
		if miss == "" {
			miss = "-"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.3f\t%v\t%v\t%.2f\t%s\t%s\t%s\t%s\t\n", s.Name, s.LabGoodput, s.SimGoodput,
			simulate.Ratio(s.SimGoodput, s.LabGoodput), ms(s.LabP99), ms(s.SimP99), simulate.Ratio(float64(s.SimP99), float64(s.LabP99)),
			limit[0], limit[1], limit[2], miss)
	}
	tw.Flush()
	cli.Fprintf(w, "  counted as the lab counts: each request in the stretch it was sent in; a limit is the mean of one reading a second (a phase's first %v left out)\n", 2*time.Second)
}
