package sim

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/internal/hist"
)

// Report is the outcome of one run: per-phase figures and the per-interval series.
type Report struct {
	Scenario string
	Law      string
	Capacity float64 // the backend's nominal capacity C, req/s
	SLO      time.Duration
	Interval time.Duration
	Phases   []PhaseReport
	Series   []Point
	// Seconds are the run's seconds counted as the lab counts them: each
	// by the attempts that arrived in it (Sent).
	Seconds []Sent
}

// PhaseReport sums up one phase of a run. Rates are per second of the phase.
// Latencies are end to end (gate queue wait + backend) of admitted attempts;
// a drop counts at the time its client gave up.
type PhaseReport struct {
	Name       string
	Start, End time.Duration

	Offered    float64 // new client requests per second
	Attempts   float64 // attempts per second, retries included
	Throughput float64 // successful attempts per second
	Goodput    float64 // successful attempts within the SLO per second
	RejectRate float64 // rejected attempts / attempts
	DropRate   float64 // dropped attempts / completed (succeeded or dropped) attempts

	P50, P99, P999 time.Duration
	// RejectP99 is the p99 of how long a rejected attempt waited in the
	// gate for its refusal (0 for one refused on arrival).
	RejectP99 time.Duration

	Rejections [adaptive.NumRejections]int

	Limit LimitStats

	// SteadyGoodput is the goodput over the phase's second half.
	SteadyGoodput float64
	// Converged is the time from the phase's start to the first 1 s window with
	// goodput ≥ 95 % of SteadyGoodput and at most 1 % of completions late or
	// dropped (the window's p99 within the SLO); -1 if none.
	Converged time.Duration

	PeakMemory, PeakCPU float64

	// Priorities and Tenants count client requests (retries folded in) that
	// finished in the phase, by priority level and by tenant.
	Priorities [adaptive.NumPriorities]Outcome
	Tenants    []Outcome

	// Sent is the phase counted as the lab counts it: by the attempts
	// that arrived in it, whenever they ended.
	Sent Sent
}

// LimitStats describe the concurrency limit over a phase.
type LimitStats struct {
	Min, Max int
	Mean     float64
	// SteadyMean and SteadyCV (coefficient of variation: standard deviation over
	// mean, the oscillation figure) cover the phase's second half.
	SteadyMean, SteadyCV float64
	// Overshoot is Max / SteadyMean − 1: how far the limit went above where it
	// settled.
	Overshoot float64
}

// Outcome counts client requests of one class.
type Outcome struct {
	Requests  int // finished: succeeded or failed after all retries
	Succeeded int
	Good      int // succeeded within the SLO
}

// SuccessRatio returns Succeeded / Requests (1 when there were none).
func (o Outcome) SuccessRatio() float64 {
	if o.Requests == 0 {
		return 1
	}
	return float64(o.Succeeded) / float64(o.Requests)
}

// GoodRatio returns Good / Requests (1 when there were none).
func (o Outcome) GoodRatio() float64 {
	if o.Requests == 0 {
		return 1
	}
	return float64(o.Good) / float64(o.Requests)
}

// Point is one control interval of the run.
type Point struct {
	T           time.Duration // end of the interval
	Limit       int           // limit decided at T
	Rate        float64       // managed token rate decided at T, 0 if none
	MaxInFlight int
	Queue       int
	Attempts    int
	Completed   int // successes and drops
	Good        int // successes within the SLO
	Late        int // successes beyond the SLO, and drops
	// SentGood and SentLate are Good and Late for the attempts that arrived
	// at the gate in this interval, whenever they completed: the lab's
	// per-second figures are by send time.
	SentGood, SentLate int
	Rejects            int
	P99                time.Duration // upstream p99 the law saw
	CPU, Memory        float64
	CPUPressure        float64
	Reason             adaptive.Reason
}

// Phase returns the phase named name, or false.
func (r *Report) Phase(name string) (PhaseReport, bool) {
	for _, p := range r.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return PhaseReport{}, false
}

// LimitAt returns the limit in force at time t (decided at or before t).
func (r *Report) LimitAt(t time.Duration) int {
	l := 0
	for _, p := range r.Series {
		if p.T > t {
			break
		}
		l = p.Limit
	}
	return l
}

// Window sums up the control intervals ending in (from, to].
type Window struct {
	Goodput float64 // successes within the SLO per second
	// LateRatio is the share of completions that missed the SLO or were
	// dropped; at most 0.01 means the window's p99 is within the SLO.
	// SentLateRatio is the same for the attempts that arrived in the window.
	LateRatio, SentLateRatio     float64
	LimitMean, LimitCV           float64
	LimitMin, LimitMax           int
	CPUMean, CPUMax              float64 // per-interval CPU utilisation
	Rejects, Attempts, Intervals int
}

// Window returns the figures of the intervals ending in (from, to].
func (r *Report) Window(from, to time.Duration) Window {
	w := Window{LimitMin: math.MaxInt, LimitMax: math.MinInt}
	var good, late, sentGood, sentLate int
	var sum, sq float64
	for _, p := range r.Series {
		if p.T <= from || p.T > to {
			continue
		}
		w.Intervals++
		good += p.Good
		late += p.Late
		sentGood += p.SentGood
		sentLate += p.SentLate
		w.Rejects += p.Rejects
		w.Attempts += p.Attempts
		sum += float64(p.Limit)
		sq += float64(p.Limit) * float64(p.Limit)
		w.CPUMean += p.CPU
		w.CPUMax = math.Max(w.CPUMax, p.CPU)
		w.LimitMin, w.LimitMax = min(w.LimitMin, p.Limit), max(w.LimitMax, p.Limit)
	}
	if w.Intervals == 0 {
		return Window{}
	}
	n := float64(w.Intervals)
	w.CPUMean /= n
	w.Goodput = float64(good) / (n * r.Interval.Seconds())
	if good+late > 0 {
		w.LateRatio = float64(late) / float64(good+late)
	}
	if sentGood+sentLate > 0 {
		w.SentLateRatio = float64(sentLate) / float64(sentGood+sentLate)
	}
	w.LimitMean = sum / n
	if w.LimitMean > 0 {
		w.LimitCV = math.Sqrt(math.Max(0, sq/n-w.LimitMean*w.LimitMean)) / w.LimitMean
	}
	return w
}

// String formats the report as a small table per phase.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s / %s: C=%.0f req/s, SLO %v, interval %v\n", r.Scenario, r.Law, r.Capacity, r.SLO, r.Interval)
	for _, p := range r.Phases {
		fmt.Fprintf(&b, "  %-10s %6v..%-6v offered %6.0f/s  goodput %6.0f/s (%4.0f%% C)  p50 %-8v p99 %-8v reject %5.1f%%  drop %4.1f%%\n",
			p.Name, p.Start, p.End, p.Offered, p.Goodput, 100*p.Goodput/r.Capacity,
			p.P50.Round(100*time.Microsecond), p.P99.Round(100*time.Microsecond), 100*p.RejectRate, 100*p.DropRate)
		conv := "never"
		if p.Converged >= 0 {
			conv = p.Converged.String()
		}
		fmt.Fprintf(&b, "  %-10s limit %d..%d steady %.1f cv %.3f overshoot %.0f%%  converged %s  peak mem %.2f cpu %.2f\n",
			"", p.Limit.Min, p.Limit.Max, p.Limit.SteadyMean, p.Limit.SteadyCV, 100*p.Limit.Overshoot, conv, p.PeakMemory, p.PeakCPU)
		var rej []string
		for i, n := range p.Rejections {
			if n > 0 {
				rej = append(rej, fmt.Sprintf("%s=%d", adaptive.RejectReason(i), n))
			}
		}
		if len(rej) > 0 {
			fmt.Fprintf(&b, "  %-10s rejections %s\n", "", strings.Join(rej, " "))
		}
	}
	return b.String()
}

// recorder accumulates the report while the engine runs.
type recorder struct {
	phases []phaseAcc
	cur    int
	series []Point
	// sent counts good and late completions by the interval their attempt
	// arrived in; report copies them into the series.
	sent     [][2]int
	interval int64
	book     sentBook
}

type phaseAcc struct {
	name                                      string
	start, end                                time.Duration
	newReqs, attempts, successes, good, drops int
	rejections                                [adaptive.NumRejections]int
	e2e, rejWait                              *hist.Histogram
	prio                                      [adaptive.NumPriorities]Outcome
	tenants                                   []Outcome
	peakMem, peakCPU                          float64
}

func (rc *recorder) init(e *engine) {
	ph := e.sc.Phases
	for i, p := range ph {
		end := e.sc.Duration
		if i+1 < len(ph) {
			end = ph[i+1].At
		}
		rc.phases = append(rc.phases, phaseAcc{name: p.Name, start: p.At, end: end, e2e: new(hist.Histogram),
			rejWait: new(hist.Histogram), tenants: make([]Outcome, len(e.sc.Tenants))})
	}
	rc.series = make([]Point, 0, int(e.sc.Duration/e.sc.Interval)+1)
	rc.sent = make([][2]int, int(e.sc.Duration/e.sc.Interval)+1)
	rc.interval = int64(e.sc.Interval)
	rc.book.init(e.sc, rc.phases)
}

// sentAt counts a completion of an attempt that arrived at arrive.
func (rc *recorder) sentAt(arrive int64, good bool) {
	i := 1
	if good {
		i = 0
	}
	// The interval ending at or after arrive: series point k ends at (k+1) × interval.
	if k := int((arrive - 1) / rc.interval); k >= 0 && k < len(rc.sent) {
		rc.sent[k][i]++
	}
}

// at returns the accumulator of the phase containing now.
func (rc *recorder) at(now int64) *phaseAcc {
	for rc.cur+1 < len(rc.phases) && now >= int64(rc.phases[rc.cur+1].start) {
		rc.cur++
	}
	return &rc.phases[rc.cur]
}

func (rc *recorder) newRequest(now int64) { rc.at(now).newReqs++ }
func (rc *recorder) attempt(now int64) {
	rc.at(now).attempts++
	rc.book.attempt(now)
}

func (rc *recorder) reject(now, arrive int64, why adaptive.RejectReason) {
	p := rc.at(now)
	p.rejections[why]++
	p.rejWait.Add(time.Duration(now - arrive))
	rc.book.rejected(arrive)
}

func (rc *recorder) success(now int64, r *request, e2e int64, good bool) {
	rc.sentAt(r.arrive, good)
	rc.book.succeeded(r.arrive, e2e, good)
	p := rc.at(now)
	p.successes++
	p.e2e.Add(time.Duration(e2e))
	g := 0
	if good {
		g = 1
	}
	p.good += g
	for _, o := range [2]*Outcome{&p.prio[r.prio], &p.tenants[r.tenant]} {
		o.Requests++
		o.Succeeded++
		o.Good += g
	}
}

func (rc *recorder) drop(now, arrive, e2e int64) {
	rc.sentAt(arrive, false)
	rc.book.dropped(arrive)
	p := rc.at(now)
	p.drops++
	p.e2e.Add(time.Duration(e2e))
}

func (rc *recorder) fail(now int64, r *request) {
	p := rc.at(now)
	p.prio[r.prio].Requests++
	p.tenants[r.tenant].Requests++
}

func (rc *recorder) observeMemory(e *engine) {
	p := rc.at(e.now)
	p.peakMem = math.Max(p.peakMem, e.memory())
}

func (rc *recorder) point(e *engine, s *adaptive.Sample, d adaptive.Decision) {
	iv := &e.iv
	p := rc.at(e.now - 1)
	p.peakCPU = math.Max(p.peakCPU, s.CPU)
	rate := 0.0
	if e.g.rateOn {
		rate = e.g.bucket.rate
	}
	rc.series = append(rc.series, Point{
		T: time.Duration(e.now), Limit: e.g.limit, Rate: rate, MaxInFlight: iv.maxInflight,
		Queue: e.g.waiting, Attempts: iv.attempts, Completed: iv.successes + iv.drops,
		Good: iv.good, Late: iv.late, Rejects: iv.rejects, P99: s.Latency.P99,
		CPU: s.CPU, Memory: s.Memory, CPUPressure: s.CPUPressure, Reason: d.Reason,
	})
}

// report computes the Report at the end of the run.
func (rc *recorder) report(e *engine) *Report {
	for k := range rc.series {
		if k < len(rc.sent) {
			rc.series[k].SentGood, rc.series[k].SentLate = rc.sent[k][0], rc.sent[k][1]
		}
	}
	rc.book.finish()
	r := &Report{Scenario: e.sc.Name, Law: LawName(e.law), Capacity: e.sc.Service.Capacity(),
		SLO: e.sc.SLO, Interval: e.sc.Interval, Series: rc.series, Seconds: rc.book.seconds}
	for i := range rc.phases {
		p := rc.phases[i].summarise(r)
		p.Sent = rc.book.phases[i]
		r.Phases = append(r.Phases, p)
	}
	return r
}

func (a *phaseAcc) summarise(r *Report) PhaseReport {
	sec := (a.end - a.start).Seconds()
	p := PhaseReport{
		Name: a.name, Start: a.start, End: a.end,
		Offered:    float64(a.newReqs) / sec,
		Attempts:   float64(a.attempts) / sec,
		Throughput: float64(a.successes) / sec,
		Goodput:    float64(a.good) / sec,
		P50:        a.e2e.Quantile(0.5),
		P99:        a.e2e.Quantile(0.99),
		P999:       a.e2e.Quantile(0.999),
		RejectP99:  a.rejWait.Quantile(0.99),
		Rejections: a.rejections,
		PeakMemory: a.peakMem,
		PeakCPU:    a.peakCPU,
		Priorities: a.prio,
		Tenants:    a.tenants,
		Converged:  -1,
	}
	rejected := 0
	for _, n := range a.rejections {
		rejected += n
	}
	if a.attempts > 0 {
		p.RejectRate = float64(rejected) / float64(a.attempts)
	}
	if n := a.drops + a.successes; n > 0 {
		p.DropRate = float64(a.drops) / float64(n)
	}
	var pts []Point
	for _, pt := range r.Series {
		if pt.T > a.start && pt.T <= a.end {
			pts = append(pts, pt)
		}
	}
	if len(pts) == 0 {
		return p
	}
	half := pts[len(pts)/2:]
	good := 0
	for _, pt := range half {
		good += pt.Good
	}
	p.SteadyGoodput = float64(good) / (float64(len(half)) * r.Interval.Seconds())
	p.Limit = limitStats(pts, half)
	win := max(1, int(math.Round(float64(time.Second)/float64(r.Interval))))
	for i := 0; i+win <= len(pts); i++ {
		g, late := 0, 0
		for _, pt := range pts[i : i+win] {
			g += pt.Good
			late += pt.Late
		}
		gp := float64(g) / (float64(win) * r.Interval.Seconds())
		if gp >= 0.95*p.SteadyGoodput && float64(late) <= 0.01*float64(g+late) {
			p.Converged = time.Duration(i) * r.Interval
			break
		}
	}
	return p
}

func limitStats(all, steady []Point) LimitStats {
	s := LimitStats{Min: math.MaxInt, Max: math.MinInt}
	sum := 0.0
	for _, pt := range all {
		s.Min, s.Max = min(s.Min, pt.Limit), max(s.Max, pt.Limit)
		sum += float64(pt.Limit)
	}
	s.Mean = sum / float64(len(all))
	sum = 0
	for _, pt := range steady {
		sum += float64(pt.Limit)
	}
	s.SteadyMean = sum / float64(len(steady))
	v := 0.0
	for _, pt := range steady {
		d := float64(pt.Limit) - s.SteadyMean
		v += d * d
	}
	if s.SteadyMean > 0 {
		s.SteadyCV = math.Sqrt(v/float64(len(steady))) / s.SteadyMean
		s.Overshoot = float64(s.Max)/s.SteadyMean - 1
	}
	return s
}
