package report

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/load"
)

// Metrics are the figures the lab reports of every run. Rates are per
// second of the schedule; latencies in milliseconds; nil where the run
// cannot tell (no limit to oscillate, no tenants, no process to measure).
type Metrics struct {
	OfferedRate  float64 `json:"offered_rate"`  // arrivals/s
	AdmittedRate float64 `json:"admitted_rate"` // 2xx/s
	Goodput      float64 `json:"goodput"`       // 2xx within the SLO per second
	// GoodputShare is goodput over what was possible: min(offered, C) per
	// second, summed over the seconds of the schedule, with C as the
	// backend's schedule says.
	GoodputShare float64 `json:"goodput_share"`
	P50          float64 `json:"p50_ms"` // of admitted (2xx) requests, from the intended send instant
	P99          float64 `json:"p99_ms"`
	P999         float64 `json:"p999_ms"`
	// WorstSecondP99 is the highest admitted p99 of a second after the
	// first (by intended send instant, seconds with a 2xx only): what
	// "p99 within the target in every second after the first" is judged by.
	WorstSecondP99 float64 `json:"worst_second_p99_ms"`
	// FirstSecondGood is the goodput of the run's first second: what a
	// start from cold serves before any learning.
	FirstSecondGood float64 `json:"first_second_good"`
	RejectRate      float64 `json:"reject_rate"` // final 429/503 over arrivals
	RejectP50       float64 `json:"reject_p50_ms"`
	RejectP99       float64 `json:"reject_p99_ms"`
	ErrorRate       float64 `json:"error_rate"`          // final errors over arrivals
	Amplification   float64 `json:"retry_amplification"` // tries per arrival sent
	// Convergence is, for each change of load or backend after the first
	// phase, how long until goodput settles (see Converge); ConvergenceMax
	// the longest. Unconverged changes count their whole segment.
	Convergence    []Convergence `json:"convergence,omitempty"`
	ConvergenceMax *float64      `json:"convergence_max_s,omitempty"`
	// LimitOscillation is the coefficient of variation (stddev/mean) of
	// the contender's limit over the settled second half of each segment,
	// the largest over segments.
	LimitOscillation *float64 `json:"limit_oscillation,omitempty"`
	PeakRSSContender *int64   `json:"peak_rss_contender,omitempty"` // bytes
	PeakRSSBackend   *int64   `json:"peak_rss_backend,omitempty"`
	// PhaseRSS is the peak RSS within each phase of the schedule, in
	// its order (a phase no sample fell in has nil figures).
	PhaseRSS         []PhaseRSS `json:"phase_rss,omitempty"`
	CPUPerReqProxy   *float64   `json:"cpu_per_request_contender_us,omitempty"` // CPU µs per try sent
	CPUPerReqBackend *float64   `json:"cpu_per_request_backend_us,omitempty"`
	// Fairness is Jain's index over tenants of goodput / max-min fair
	// share (1 is perfectly fair, 1/n is one tenant taking everything).
	Fairness        *float64 `json:"fairness,omitempty"`
	BackendCrashes  uint64   `json:"backend_crashes"`
	DispatchLagP99  float64  `json:"dispatch_lag_p99_ms"` // the generator's own lateness
	DispatchLagMax  float64  `json:"dispatch_lag_max_ms"`
	OverflowedTries int64    `json:"overflowed"` // arrivals and retries the generator had no slot for
}

// PhaseRSS is the peak resident memory during one phase, bytes.
type PhaseRSS struct {
	Label     string `json:"label"`
	Contender *int64 `json:"contender,omitempty"`
	Backend   *int64 `json:"backend,omitempty"`
}

// Convergence is how long goodput took to settle after a change at At.
type Convergence struct {
	At        float64 `json:"at_s"`
	Label     string  `json:"label"`
	Seconds   float64 `json:"seconds"`
	Converged bool    `json:"converged"`
}

// Compute derives r.Metrics from the rest of r.
func Compute(r *Run) {
	res := &r.Load
	tot := res.Totals
	dur := r.Schedule.Duration().Seconds()
	m := Metrics{
		P50: tot.Latency.P50, P99: tot.Latency.P99, P999: tot.Latency.P999,
		RejectP50: tot.RejectLatency.P50, RejectP99: tot.RejectLatency.P99,
		DispatchLagP99: res.DispatchLag.P99, DispatchLagMax: res.DispatchLag.Max,
		OverflowedTries: tot.ErrorsByKind[load.KindOverflow],
		BackendCrashes:  r.Backend.Crashes,
	}
	if dur > 0 {
		m.OfferedRate = float64(tot.Offered) / dur
		m.AdmittedRate = float64(tot.OK) / dur
		m.Goodput = float64(tot.Good) / dur
	}
	if tot.Offered > 0 {
		m.RejectRate = float64(tot.Rejected) / float64(tot.Offered)
		m.ErrorRate = float64(tot.Errors) / float64(tot.Offered)
	}
	if tot.Sent > 0 {
		m.Amplification = float64(tot.Attempts) / float64(tot.Sent)
	}
	for _, s := range res.Seconds {
		if s.T >= 1 && s.OK > 0 {
			m.WorstSecondP99 = max(m.WorstSecondP99, s.P99)
		}
	}
	if len(res.Seconds) > 0 {
		m.FirstSecondGood = float64(res.Seconds[0].Good)
	}
	var possible float64
	for _, s := range res.Seconds {
		if s.T < int(math.Ceil(dur)) {
			possible += math.Min(float64(s.Offered), r.Params.CapacityAt(time.Duration(s.T)*time.Second+time.Second/2))
		}
	}
	if possible > 0 {
		m.GoodputShare = float64(tot.Good) / possible
	}
	m.Convergence, m.ConvergenceMax = converge(r)
	m.LimitOscillation = oscillation(r)
	m.PeakRSSContender, m.PeakRSSBackend = peaks(r.Samples)
	m.PhaseRSS = phaseRSS(r)
	m.CPUPerReqProxy, m.CPUPerReqBackend = cpuPerRequest(r.Samples, tot.Attempts)
	m.Fairness = Fairness(res.Tenants)
	r.Metrics = m
}

// segment is a stretch of the run between two changes (of phase or of
// the backend).
type segment struct {
	label      string
	start, end int // seconds
}

func segments(r *Run) []segment {
	type ev struct {
		at    time.Duration
		label string
	}
	var evs []ev
	var begin time.Duration
	for _, p := range r.Schedule {
		evs = append(evs, ev{begin, p.Label})
		begin += p.For
	}
	for _, c := range r.Params.Changes {
		evs = append(evs, ev{c.At, "backend " + c.String()})
	}
	slices.SortStableFunc(evs, func(a, b ev) int { return cmp.Compare(a.at, b.at) })
	var segs []segment
	end := int(math.Round(begin.Seconds()))
	for i, e := range evs {
		s := int(math.Round(e.at.Seconds()))
		next := end
		if i+1 < len(evs) {
			next = int(math.Round(evs[i+1].at.Seconds()))
		}
		if s >= next || s >= end {
			continue
		}
		segs = append(segs, segment{label: e.label, start: s, end: next})
	}
	return segs
}

// converge measures, for each segment after the first, the seconds from
// its start to the first second from which every second of the segment
// has its goodput within a band around the segment's settled goodput G
// (the median of its second half) and its admitted p99 within the SLO. The
// band is max(15 %·G, 4√G): four standard deviations of a Poisson count,
// so noise alone does not count as unsettled. Settling into collapse (p99
// past the SLO) is not convergence; such a segment counts in full.
func converge(r *Run) ([]Convergence, *float64) {
	good := make([]float64, len(r.Load.Seconds))
	withinSLO := make([]bool, len(r.Load.Seconds))
	slo := float64(r.SLO.Microseconds()) / 1000
	for i, s := range r.Load.Seconds {
		good[i] = float64(s.Good)
		withinSLO[i] = s.Offered == 0 || (s.OK > 0 && s.P99 <= slo)
	}
	var out []Convergence
	var worst float64
	for i, seg := range segments(r) {
		if i == 0 || seg.end > len(good) || seg.end-seg.start < 2 {
			continue
		}
		tail := slices.Clone(good[seg.start+(seg.end-seg.start)/2 : seg.end])
		slices.Sort(tail)
		settled := tail[len(tail)/2]
		band := math.Max(0.15*settled, 4*math.Sqrt(settled))
		from := seg.end
		for s := seg.end - 1; s >= seg.start && math.Abs(good[s]-settled) <= band && withinSLO[s]; s-- {
			from = s
		}
		c := Convergence{At: float64(seg.start), Label: seg.label, Seconds: float64(from - seg.start), Converged: from < seg.end}
		worst = math.Max(worst, c.Seconds)
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, &worst
}

// oscillation is the largest coefficient of variation of the limit over
// the second half of a segment.
func oscillation(r *Run) *float64 {
	var worst float64
	found := false
	for _, seg := range segments(r) {
		mid := float64(seg.start) + float64(seg.end-seg.start)/2
		var xs []float64
		for _, s := range r.Samples {
			if s.Limit != nil && s.T >= mid && s.T < float64(seg.end) {
				xs = append(xs, *s.Limit)
			}
		}
		if len(xs) < 2 {
			continue
		}
		mean, sd := meanSD(xs)
		if mean > 0 {
			found = true
			worst = math.Max(worst, sd/mean)
		}
	}
	if !found {
		return nil
	}
	return &worst
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}

func peaks(samples []Sample) (contender, backend *int64) {
	for _, s := range samples {
		if s.ContenderRSS != nil && (contender == nil || *s.ContenderRSS > *contender) {
			v := *s.ContenderRSS
			contender = &v
		}
		if s.BackendRSS != nil && (backend == nil || *s.BackendRSS > *backend) {
			v := *s.BackendRSS
			backend = &v
		}
	}
	return contender, backend
}

// phaseRSS is the peak RSS of the samples taken during each phase; nil
// when no sample has an RSS.
func phaseRSS(r *Run) []PhaseRSS {
	var out []PhaseRSS
	var begin time.Duration
	found := false
	for _, p := range r.Schedule {
		end := begin + p.For
		var in []Sample
		for _, s := range r.Samples {
			if t := time.Duration(s.T * float64(time.Second)); t >= begin && t < end {
				in = append(in, s)
			}
		}
		c, b := peaks(in)
		found = found || c != nil || b != nil
		out = append(out, PhaseRSS{Label: p.Label, Contender: c, Backend: b})
		begin = end
	}
	if !found {
		return nil
	}
	return out
}

// cpuPerRequest is the CPU used between the first and last samples over
// the tries sent, in µs.
func cpuPerRequest(samples []Sample, tries int64) (contender, backend *float64) {
	per := func(get func(Sample) *float64) *float64 {
		var first, last *float64
		for _, s := range samples {
			if v := get(s); v != nil {
				if first == nil {
					first = v
				}
				last = v
			}
		}
		if first == nil || tries == 0 {
			return nil
		}
		v := (*last - *first) * 1e6 / float64(tries)
		return &v
	}
	return per(func(s Sample) *float64 { return s.ContenderCPU }), per(func(s Sample) *float64 { return s.BackendCPU })
}

// Fairness is Jain's fairness index (R. Jain, D. Chiu, W. Hawe, "A
// Quantitative Measure of Fairness and Discrimination for Resource
// Allocation in Shared Computer Systems", DEC-TR-301, 1984),
// J = (Σx)² / (n·Σx²), of x_i = goodput_i / f_i, where f is the max-min
// fair split of the total goodput among the tenants given what each
// offered (water-filling). Nil with fewer than two tenants or no goodput.
func Fairness(tenants []load.Class) *float64 {
	if len(tenants) < 2 {
		return nil
	}
	var total float64
	demand := make([]float64, len(tenants))
	for i, t := range tenants {
		total += float64(t.Good)
		demand[i] = float64(t.Offered)
	}
	if total == 0 {
		return nil
	}
	fair := maxMinFair(demand, total)
	var sum, sumSq float64
	for i, t := range tenants {
		if fair[i] == 0 {
			continue
		}
		x := float64(t.Good) / fair[i]
		sum += x
		sumSq += x * x
	}
	if sumSq == 0 {
		return nil
	}
	j := sum * sum / (float64(len(tenants)) * sumSq)
	return &j
}

// maxMinFair splits capacity among demands: each gets the same share,
// except that no one gets more than it asked for, and what they leave is
// split among the rest.
func maxMinFair(demand []float64, capacity float64) []float64 {
	out := make([]float64, len(demand))
	idx := make([]int, len(demand))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(demand[a], demand[b]) })
	left := capacity
	for k, i := range idx {
		share := left / float64(len(idx)-k)
		out[i] = math.Min(demand[i], share)
		left -= out[i]
	}
	return out
}
