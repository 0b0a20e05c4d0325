package adaptive

import (
	"math"
	"reflect"
	"time"
)

// TargetParams configures Target. Zero fields mean the defaults; at least one of
// Latency, CPU, Memory and CPUPressure must be set.
type TargetParams struct {
	Bounds
	// Latency is the target for Quantile of the upstream latency (e.g. p99 ≤
	// 200 ms); zero means no latency target.
	Latency time.Duration
	// Quantile is the latency figure the target applies to; default P99.
	Quantile Quantile
	// CPU and Memory are utilisation targets in (0, 1]; zero means none.
	CPU    float64
	Memory float64
	// CPUPressure is a target in (0, 1] for Sample.CPUPressure, the share of
	// time runnable work of the guarded service waits for a CPU; zero means
	// none. Unlike a utilisation it has a meaning without a CPU allotment.
	CPUPressure float64
	// PressureWindow is the averaging window of Sample.CPUPressure; default
	// 10 s (PSI's avg10, which the kernel updates every 2 s). A pressure cut
	// shows in such an average only gradually, so the law waits a quarter of
	// the window between pressure cuts and judges them after half of it.
	PressureWindow time.Duration

	// Headroom is how far below a target the law aims when it raises the limit, as
	// a fraction of the target, in [0, 0.5); default 0.15. A latency quantile is
	// cut only above target × (1 − Headroom/3), so between the two is a dead band
	// where the limit holds; the rest of the target is left for the gate's queue
	// wait, which the upstream latency the law sees does not include.
	// Resource targets are cut above the target itself and aim below it: by
	// Headroom/2 for memory, Headroom/5 for CPU and CPU pressure.
	Headroom float64
	// Tolerance is the queueing allowed, as a fraction of the no-queue latency,
	// when the latency target cannot be met even without queueing; default 0.1.
	Tolerance float64
	// Gain is the fraction of the way to the estimate the limit moves per interval
	// when it rises, in (0, 1]; default 0.5. Cuts go the whole way.
	Gain float64
	// UseRatio is the app-limited guard's threshold; default DefaultUseRatio.
	UseRatio float64

	// Rate configures the managed token rate; zero value means none.
	Rate RateParams
}

// Validate reports every problem with the params.
func (p TargetParams) Validate() error {
	var pr problems
	p.Bounds.check(&pr)
	if p.Latency < 0 {
		pr.add("latency target %v must be positive", p.Latency)
	}
	pr.utilTarget("cpu", p.CPU)
	pr.utilTarget("memory", p.Memory)
	pr.utilTarget("cpu pressure", p.CPUPressure)
	if p.PressureWindow < 0 {
		pr.add("pressure window %v must be positive", p.PressureWindow)
	}
	if p.Latency == 0 && p.CPU == 0 && p.Memory == 0 && p.CPUPressure == 0 {
		pr.add("target law needs at least one target (latency, cpu, memory or cpu pressure)")
	}
	if p.Quantile > Mean {
		pr.add("unknown latency quantile %d", p.Quantile)
	}
	pr.ratio("headroom", p.Headroom, 0, 0.5)
	pr.ratio("tolerance", p.Tolerance, 0, 10)
	if p.Gain != 0 && !(p.Gain > 0 && p.Gain <= 1) {
		pr.add("gain %v must be in (0, 1]", p.Gain)
	}
	pr.useRatio(p.UseRatio)
	r := p.Rate
	if r.Initial < 0 || !finite(r.Initial) {
		pr.add("initial rate %v must be positive", r.Initial)
	}
	if r.Min < 0 || !finite(r.Min) {
		pr.add("min rate %v must be positive", r.Min)
	}
	if r.Max < 0 || math.IsNaN(r.Max) {
		pr.add("max rate %v must be positive", r.Max)
	}
	if r.Max > 0 && r.Max < r.Min {
		pr.add("max rate %v is below min rate %v", r.Max, r.Min)
	}
	if r.Initial > 0 && ((r.Min > 0 && r.Initial < r.Min) || (r.Max > 0 && r.Initial > r.Max)) {
		pr.add("initial rate %v is outside [%v, %v]", r.Initial, r.Min, r.Max)
	}
	pr.ratio("rate headroom", r.Headroom, 0, 1)
	return pr.err()
}

// Target keeps the service inside every target the operator set (a latency
// quantile; CPU, memory and CPU pressure) at once, approaching the largest
// limit that meets all of them. It is sluice's default law; how it decides
// is in the package doc ("The target law"), and the figures it decides with
// are the named constants of this file and target_resource.go.
//
// Not safe for concurrent use.
type Target struct {
	p     TargetParams
	limit int
	rate  float64
	base  baseline
	cut   cutEpisode
	// dropFloor is a drop ratio found not to respond to load; drops up to it are
	// tolerated.
	dropFloor float64
	// cutLast: the last decision cut the limit; mild: the last interval had a
	// mild violation that was not acted on.
	cutLast, mild bool
	// refused is the share of the demand the gate turned away, a moving
	// average over intervals, and overloaded whether it says the backend is
	// overloaded (observeRefused).
	refused    float64
	overloaded bool
	// stalled: completions stalled in the last interval (stalledIn; its
	// successor's latency is the stall's); lastMean is the mean latency of
	// the last interval that completed something and did not stall.
	stalled  bool
	lastMean float64
	// xs holds the throughput of the last kneeWindow intervals (at xAt)
	// and ls the limit each ran at, to tell a service that lost capacity
	// (observeThroughput).
	xs  [kneeWindow]float64
	ls  [kneeWindow]int
	xAt int
	// lastX is the previous interval's throughput: the window holds the
	// mean of two intervals'. started: an interval that completed
	// something has been seen (the first is left out of the window).
	lastX   float64
	started bool
	// baseDoubt: the service lost capacity (completions fell under a
	// binding limit that did not fall: it slowed, or lost workers), and no
	// interval's mean has come within kneeFresh of the baseline since. The
	// baseline may be stale (a service that slowed never comes near it
	// again, and a knee estimated from it is too low), so the law does not
	// cut toward the knee meanwhile. belowKnee: the last interval's
	// throughput fell with the limit.
	baseDoubt, belowKnee bool
	// A cut toward the knee is tried, then judged (judgeKnee): kneeFrom is
	// the limit before it (0: none on trial), kneeX the throughput it was
	// decided at, kneeWait the intervals left before it is judged; and
	// kneeFloor the lowest limit a cut toward the knee may reach, set by a
	// cut that cost completions (0: none).
	kneeFrom, kneeWait, kneeFloor int
	kneeX                         float64
	// slowX is the throughput at which a slow start last raised the limit
	// (0: none since the last cut); another doubles only if completions
	// kept up (keepsUp).
	slowX float64
	// calm counts the intervals since the law last judged the backend
	// overloaded; a knee's floor outlives dips shorter than kneeWindow.
	calm int
	mem  memModel
	res  [numResources]resourceState
	// pressureCut is when CPU pressure last drove a cut.
	pressureCut time.Time
}

// cutEpisode is a run of consecutive cuts, to tell whether cutting helps.
type cutEpisode struct {
	active      bool
	inflight    float64 // N when the episode began
	mean        float64 // mean latency when it began
	drops       float64 // drop ratio when it began
	limit       int     // limit before the first cut
	looks       int     // intervals with completions since the last cut
	latencyCuts bool    // a latency target drove a cut
	dropCuts    bool    // drops drove a cut
	// res is, per resource, what the gate saw when the resource first drove
	// a cut of the episode.
	res [numResources]cutSnapshot
}

// cutSnapshot is a resource's reading (u) when it drove a cut, with the time,
// the in-flight count, the throughput and the work held (in flight and
// waiting) then.
type cutSnapshot struct {
	on         bool
	at         time.Time
	u, n, x, w float64
}

// NewTarget returns a Target law starting at p.Initial (and p.Rate.Initial).
func NewTarget(p TargetParams) (*Target, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.Bounds = p.withDefaults()
	if p.Quantile == QuantileDefault {
		p.Quantile = P99
	}
	p.Headroom = orDefault(p.Headroom, defaultHeadroom)
	p.Tolerance = orDefault(p.Tolerance, defaultTargetTolerance)
	p.Gain = orDefault(p.Gain, defaultGain)
	p.UseRatio = orDefault(p.UseRatio, DefaultUseRatio)
	if p.PressureWindow == 0 {
		p.PressureWindow = DefaultPressureWindow
	}
	if p.Rate.Initial > 0 {
		p.Rate.Min = orDefault(p.Rate.Min, defaultRateMin)
		if p.Rate.Max == 0 {
			p.Rate.Max = math.Inf(1)
		}
		p.Rate.Headroom = orDefault(p.Rate.Headroom, defaultRateHeadroom)
	}
	return &Target{p: p, limit: p.Initial, rate: p.Rate.Initial}, nil
}

// DefaultPressureWindow is TargetParams.PressureWindow's default: PSI's avg10.
const DefaultPressureWindow = 10 * time.Second

// The defaults of TargetParams and RateParams, as fractions (of a target,
// of the no-queue latency, of the way to an estimate, of the admitted
// throughput) except defaultRateMin, in requests per second.
const (
	defaultHeadroom        = 0.15
	defaultTargetTolerance = 0.1
	defaultGain            = 0.5
	defaultRateMin         = 1
	defaultRateHeadroom    = 0.1
)

// How far a limit moves in one interval, as factors of the limit: a cut
// goes at most to maxCut × what is in use (the peak in flight), a raise at
// most to maxGrowth × the limit.
const (
	maxCut    = 0.5
	maxGrowth = 2
)

// The figures the law judges an episode of cuts by (see the package doc,
// "Latency the limit cannot fix"), all fractions:
const (
	// judgeShare: cuts are judged once the mean in flight (for memory, the
	// work held) has fallen to this share of where it was when the episode
	// (or a resource's first cut) began: by a fifth.
	judgeShare = 0.8
	// responsiveShare: latency counts as queueing when the mean latency
	// fell by at least this share of the fall Little's law predicts for
	// queueing (ΔN / X).
	responsiveShare = 0.1
	// noiseMargin is how many times the noise of an interval's mean
	// (meanNoise) that predicted fall must be to be judged at all.
	noiseMargin = 3
	// dropsUnmovedShare: drops still at this share of where they were once
	// the in-flight count has halved are not load: a fall of under 10 %.
	dropsUnmovedShare = 0.9
	// dropFloorMargin is how far above the drop floor (a drop ratio found
	// not to respond to load) drops are still tolerated: 25 %.
	dropFloorMargin = 1.25
)

// Limit returns the current limit.
func (t *Target) Limit() int { return t.limit }

// Rate returns the current token rate in requests per second, 0 when the law
// manages none.
func (t *Target) Rate() float64 { return t.rate }

// proposal accumulates the targets' proposals for one interval.
type proposal struct {
	violated bool
	severe   bool    // some violation is severe (see severeExcess)
	firm     bool    // some violation is firm (see firmExcess)
	fast     bool    // the growth ceiling is a slow start (no gain applied)
	cut      float64 // lowest proposal among violated targets
	cutWhy   Reason
	rateCut  float64 // throughput to set the rate to, among violated targets
	want     float64 // lowest proposal among all targets (growth ceiling)
	wantWhy  Reason
	latency  bool // the binding cut came from latency
	drops    bool // the binding cut came from drops
	knee     bool // latency's violation was of the knee only, not of the target
	// over marks the resources that are over their targets this interval,
	// and u holds every resource's reading.
	over [numResources]bool
	u    [numResources]float64
}

// severeExcess is how far over its bound a latency or drop ratio must be to
// cut at once: a quantile measured over one interval of a few hundred requests
// easily reads 25 % high by chance, a real overload (the backend at half speed)
// reads 70 % high or more. An excess over firmExcess (or, for a resource,
// beyond an eighth of the room left) that persists for a second interval is no
// longer chance either: it cuts the whole way, where a milder one goes Gain of
// the way.
const (
	severeExcess = 1.5
	firmExcess   = 1.25
)

func (pr *proposal) violate(est, rate float64, why Reason) {
	pr.violated = true
	if r, ok := resourceOf(why.Signal); ok {
		// A utilisation or a share of time cannot exceed 1, so severity is
		// measured against the room left: beyond a quarter of it.
		room := 1 - why.Bound
		pr.severe = pr.severe || why.Observed > why.Bound+room/4
		pr.firm = pr.firm || why.Observed > why.Bound+room/8
		// The reading itself is over the target (the memory budget is a
		// projection, which the model knows to move with the limit).
		pr.over[r] = pr.over[r] || why.Signal != SignalMemoryBudget
	} else {
		pr.severe = pr.severe || why.Observed > severeExcess*why.Bound
		pr.firm = pr.firm || why.Observed > firmExcess*why.Bound
	}
	if est < pr.cut {
		pr.cut, pr.cutWhy = est, why
		pr.latency = why.Signal == SignalLatency || why.Signal == SignalQueueing || why.Signal == SignalOverload
		pr.drops = why.Signal == SignalDrops
	}
	pr.rateCut = min(pr.rateCut, rate)
}

func (pr *proposal) allow(est float64, why Reason) {
	if est < pr.want {
		pr.want, pr.wantWhy = est, why
		pr.fast = false
	}
}

// allowFast is allow for a slow-start proposal, applied without the gain.
func (pr *proposal) allowFast(est float64, why Reason) {
	if est < pr.want {
		pr.want, pr.wantWhy = est, why
		pr.fast = true
	}
}

// Update applies one interval's sample.
func (t *Target) Update(s Sample) Decision {
	old, oldRate := t.limit, t.rate
	// While completions stop, and through the interval after (the latency
	// of what was stuck is the stall's), the limit holds: a raise would
	// read the few requests that came back as a service with room, a cut
	// would blame concurrency for a pause.
	after := t.stalled
	t.stalled = t.stalledIn(&s)
	if mean := seconds(s.Latency.Mean); mean > 0 && !t.stalled {
		t.lastMean = mean
	}
	switch {
	case t.stalled:
		t.observeRefused(&s)
		share, _ := s.answered()
		return decide(old, old, oldRate, oldRate, Reason{Signal: SignalStalled, Observed: share, Bound: stallShare})
	case after && s.completed() > 0:
		t.observeRefused(&s)
		return decide(old, old, oldRate, oldRate, Reason{Signal: SignalStalled})
	}
	x := s.throughput()
	mean := seconds(s.Latency.Mean)
	drops := s.dropRatio()
	use := inUse(&s, old, t.p.UseRatio)
	t.base.observe(mean, use, s.interval())
	t.observeRefused(&s)
	n := x * mean // mean in flight, by Little's law

	xm := t.observeThroughput(&s, x, mean)
	if why, to, ok := t.judgeKnee(&s, xm); ok {
		t.cut = cutEpisode{}
		t.limit = min(max(old, to), t.p.Max)
		return decide(old, t.limit, oldRate, t.rate, why)
	}
	if why, ok := t.judgeCuts(&s, n, x, mean, drops); ok {
		next := max(old, t.cut.limit)
		t.cut = cutEpisode{}
		t.limit = next
		return decide(old, next, oldRate, t.rate, why)
	}

	pr := proposal{cut: math.Inf(1), rateCut: math.Inf(1), want: math.Inf(1)}
	t.proposeLatency(&pr, &s, x, n, mean)
	t.forgetDropFloor(&s, drops)
	t.proposeDrops(&pr, &s, x, n, drops)
	t.observeResources(&pr, &s, x, n, mean)

	next, why := old, pr.wantWhy
	acted := false // a violation was acted on (not paced)
	switch {
	case pr.violated && t.cutLast && s.MaxInFlight > old:
		// The last cut has not drained yet: this latency is the old limit's.
		why = pr.cutWhy
	case pr.violated && !pr.severe && !t.mild:
		t.mild = true
		why = pr.cutWhy
	case pr.violated:
		acted = true
		why = pr.cutWhy
		// At most halving what is in use: a limit far above the in-flight
		// count protects nothing until it is cut below it.
		cut := max(pr.cut, maxCut*float64(min(old, max(s.MaxInFlight, 1))))
		if !pr.severe && !pr.firm {
			cut = float64(old) - t.p.Gain*(float64(old)-cut)
		}
		next = min(old, round(cut))
		if next < old {
			t.noteCut(&pr, &s, n, x, mean, drops, old)
			// Another cut ends a cut toward the knee's trial: the limit
			// from before it is not to come back over a later cut.
			t.kneeFrom = 0
			if pr.knee && pr.latency {
				t.kneeFrom, t.kneeX, t.kneeWait = old, t.recentX(), kneeJudge
			}
		}
	case math.IsInf(pr.want, 1):
		why = Reason{Signal: SignalNoData} // and the episode of cuts waits
	case !use:
		why = Reason{Signal: SignalAppLimited, Observed: float64(s.MaxInFlight), Bound: float64(old)}
		t.endEpisode(&s)
	default:
		t.endEpisode(&s)
		if gap := pr.want - float64(old); gap >= 1 {
			g := t.p.Gain
			if pr.fast {
				g = 1
			}
			next = old + max(1, round(g*gap))
			next = min(next, maxGrowth*old)
			if pr.fast {
				t.slowX = x
			}
		}
	}
	if !pr.violated {
		t.mild = false
	}
	t.limit = min(max(next, t.p.Min), t.p.Max)
	if t.cutLast = t.limit < old; t.cutLast {
		t.slowX = 0
	}
	if t.cutLast && !pr.firm && !pr.severe {
		// A mild excess is looked at twice afresh after a cut; a firm one
		// that is still there once the cut has drained is not chance.
		t.mild = false
	}
	rs := t.updateRate(&s, &pr, n, acted)
	switch {
	case t.limit == old && t.rate != oldRate && rs != SignalNone:
		why = Reason{Signal: rs, Observed: x, Bound: oldRate}
	case t.limit == old && !pr.violated:
		if u, ok := t.unmovedReason(); ok {
			why = u
		}
	}
	return decide(old, t.limit, oldRate, t.rate, why)
}

// stalledIn reports that completions did not keep up with what was in
// flight in s: the limit bound (requests waited or were refused, so the
// slots stayed full: at least min(InFlightStart, InFlight) requests were in
// flight through the interval) or the gate refused arrivals to the silence
// (Sample.Silenced), yet what completed accounts, by Little's
// law, for under stallShare of that, where the latency last seen would have
// brought stallExpected completions or more. The service stopped answering for much
// of the interval (a pause, a hang), and the latency of the few that came
// back says nothing of those stuck.
func (t *Target) stalledIn(s *Sample) bool {
	share, held := s.answered()
	if held == 0 || share >= stallShare || t.lastMean == 0 || !(binds(s) || s.Silenced > 0) {
		return false
	}
	return float64(held)*s.interval().Seconds()/t.lastMean >= stallExpected
}

// binds reports that the limit bound in s: requests waited or were refused.
func binds(s *Sample) bool { return s.Rejected > 0 || s.Queued > 0 }

// kneeWindow is how many intervals the service's throughput is judged over
// (2 s at the default interval); throughputDrop is the share of the window's
// peak (over two intervals, which halves the noise of a count) under which
// the throughput counts as fallen, when the fall is also beyond three
// standard deviations of a count; and kneeFresh how far above the baseline
// an interval's mean may be and still confirm it (at the knee the mean is
// the service's own plus a little queueing, and the baseline, a lowest
// mean, reads low).
const (
	kneeWindow     = 8
	throughputDrop = 0.8
	kneeFresh      = 1.5
)

// observeThroughput adds an interval's throughput (averaged with the last
// one's) and limit to the window and judges it against the window's peak:
// fallen while the limit bound (requests waited or were refused) and was no
// lower than at the peak, the service lost capacity (it slowed, or lost
// workers) and the baseline is in doubt until an interval's mean comes
// within kneeFresh of it; fallen with the limit, the limit is below the knee
// (t.belowKnee). An interval that completed nothing tells nothing, nor
// does the first that completed something (a start's transient).
func (t *Target) observeThroughput(s *Sample, x, mean float64) float64 {
	if s.completed() == 0 {
		return 0
	}
	if !t.started {
		// The first interval that completed something is a start's
		// transient (a backlog drained, a shadow model's first guess) and
		// may read far above what the service completes: in the window,
		// the fall from it would read as a service that lost capacity,
		// or a cut toward the knee judged against it as one that cost
		// completions.
		t.started = true
		return x
	}
	xm := x
	if t.lastX > 0 {
		xm = (x + t.lastX) / 2
	}
	t.lastX = x
	peak, at := 0.0, 0
	for i, v := range t.xs {
		if v > peak {
			peak, at = v, t.ls[i]
		}
	}
	span := 2 * s.interval().Seconds()
	fell := binds(s) && xm < throughputDrop*peak &&
		(peak-xm)*span > 3*math.Sqrt(peak*span)
	t.belowKnee = fell && t.limit < at
	switch {
	case mean > 0 && mean <= kneeFresh*t.base.v:
		t.baseDoubt = false
	case fell && t.limit >= at:
		t.baseDoubt = true
		t.xs, t.ls = [kneeWindow]float64{}, [kneeWindow]int{}
		t.kneeFloor = 0 // the knee moved
	}
	if t.calm++; t.overloaded {
		t.calm = 0
	} else if t.calm >= kneeWindow {
		t.kneeFloor = 0 // the overload has ended
	}
	t.xs[t.xAt%kneeWindow], t.ls[t.xAt%kneeWindow] = xm, t.limit
	t.xAt++
	return xm
}

// recentX is the throughput over the last four intervals that completed
// something (the window's last two entries, of two intervals each).
func (t *Target) recentX() float64 {
	if t.xAt < 2 {
		return t.xs[0]
	}
	return (t.xs[(t.xAt-1)%kneeWindow] + t.xs[(t.xAt-2)%kneeWindow]) / 2
}

// kneeJudge is how many intervals after a cut toward the knee it is judged:
// one for what the old limit admitted to drain, four of throughput at the
// new limit (the noise of four intervals' count is half of one's).
const kneeJudge = 5

// kneeLoss is the share of its throughput a cut toward the knee may cost
// (over two intervals) and be kept, at least: completions that fall with a
// cut say the limit was at the knee, or below it (a service whose
// throughput grows with its share of the cores, beside a neighbour, has its
// knee higher than its latency shows). See kneeCost for the noise of the
// counts, which is larger at the rates of most services.
const kneeLoss = 0.03

// kneeCost is how far, in req/s, the throughput must fall after a cut
// toward the knee (from x, with intervals of iv) for the cut to be undone:
// kneeLoss of it, and twice the noise of the difference of two recentX of
// a steady service (each weighs its three intervals 1, 2, 1: a variance of
// 3/8 of one interval's count, Poisson, so the difference's standard
// deviation is √(0.75 x / iv)). At 1,500/s that is 134/s, 8.9 %: with the
// bare 3 % a service at its knee read as costing completions one cut in
// four by chance, and from a step to 3×C, which takes two cuts to the knee,
// nearly one step in two was undone (issue 27's fast-sweep, 26 → 51).
func kneeCost(x float64, iv time.Duration) float64 {
	return max(kneeLoss*x, 2*math.Sqrt(0.75*x/iv.Seconds()))
}

// judgeKnee judges a cut toward the knee while it is on trial. If the
// overload ends meanwhile, the cut is undone: the refusals that made the
// overload were a burst at about capacity, which a queue absorbs, not an
// excess the knee sheds (at 1×C a second's bursts refuse up to a sixth of
// the demand; a cut to the knee there, half of the limit, then refused
// twice what the law before it did for 1.5 % less goodput: issue 27, a hog
// at nice 5). kneeJudge intervals after the cut, if the throughput over
// the last four intervals fell by more than kneeCost from the four before
// the cut, the cut is undone too and no cut toward the knee goes below the
// old limit again (kneeFloor) until the overload has ended for kneeWindow
// intervals or the service loses capacity. It reports the reason, the
// limit to restore and true when it undoes the cut.
func (t *Target) judgeKnee(s *Sample, xm float64) (Reason, int, bool) {
	if t.kneeFrom == 0 || xm == 0 {
		return Reason{}, 0, false
	}
	from, was := t.kneeFrom, t.kneeX
	if !t.overloaded {
		t.kneeFrom = 0
		return Reason{Signal: SignalKneeBurst, Observed: t.refused, Bound: overloadShare * 3 / 4}, from, from > t.limit
	}
	if t.kneeWait--; t.kneeWait > 0 {
		return Reason{}, 0, false
	}
	t.kneeFrom = 0
	if xm = t.recentX(); was-xm <= kneeCost(was, s.interval()) || from <= t.limit {
		return Reason{}, 0, false
	}
	t.kneeFloor = from
	return Reason{Signal: SignalKneeCost, Observed: xm, Bound: was}, from, true
}

// kneeCuts reports whether the law may cut toward the knee: it judges the
// backend overloaded; the mean shows a queue of a quarter of the service
// time or more (kneeQueueing times the baseline: more than the noise of an
// interval's mean or of the baseline explains, while nearer the knee a cut
// may remove no queue, only throughput); the baseline the knee is
// estimated from is not in doubt; and the throughput has not fallen with
// the limit (completions that fall with it say the limit is at or below
// the knee, whatever the estimate); no cut toward it is on trial
// (judgeKnee); and the limit is above the knee's floor. Even then it does
// not while the service waits for CPU (cpuBound): it reports false and the
// pressure, for the decision's reason.
func (t *Target) kneeCuts(s *Sample, mean float64) (bool, float64) {
	if !t.overloaded || t.baseDoubt || t.belowKnee || t.kneeFrom != 0 ||
		t.limit <= t.kneeFloor || mean <= kneeQueueing*t.base.v {
		return false, 0
	}
	if p, ok := cpuBound(s); ok {
		return false, p
	}
	return true, 0
}

// kneePressure is the CPU pressure above which the guarded service counts
// as waiting for CPU (cpuBound).
const kneePressure = 0.1

// cpuBound reports the guarded service's CPU pressure and whether its
// runnable threads wait for a CPU (the pressure is known and over
// kneePressure): a service whose threads are its concurrency (one per
// request) then completes more the more of them run, its share of the
// cores beside a neighbour being set by that number, so the knee of a pool
// of workers (past it more in flight only queues) does not hold, and the
// law does not cut toward it (adaptive/sim's cpu-hog).
//
// The pressure is the guarded service's only (probe.cgroup, probe.pid_file
// or the cgroup with a limit around sluice; the host's only with
// probe.source = "host"), never the host's as a fallback when the service's
// is unknown. The host's is high whenever the machine is busy, whoever
// keeps it busy: in issue 27's lab (no source for the service, as a user
// runs sluice) it was over 10 % in every run, a sleeping pool of workers
// beside the load generator included, and the rule acting on it there
// bought no goodput on a CPU-bound backend (four runs, each way within the
// machine's noise) and cost p99 at 3xC (BENCHMARKS.md, issue 27, law7).
func cpuBound(s *Sample) (float64, bool) {
	p, ok := s.cpuPressure()
	return p, ok && p > kneePressure
}

// kneeQueueing is how many times the baseline the mean latency must be for
// the law to cut toward the knee, and the mean a cut toward it aims no
// lower than. Nearer the knee the law holds (or, below the knee's
// estimate, grows). At 2 (issue 27's first law) a cut stopped at twice the
// in-flight count that keeps the service busy: at 3×C from cold, with a
// baseline read at a limit already past the knee (13.5 ms for 15 workers of
// 10 ms), the law held 40 in flight where 19 keep them busy, and its cut
// never fired (the mean, 26 ms, under twice the baseline). A cut that does
// cost completions is undone (judgeKnee).
const kneeQueueing = 1.25

// noteCut records a cut from old in the episode of cuts, starting one if none
// is running: what latency and drops were, and for each resource over its
// target that has no reading yet, its reading.
func (t *Target) noteCut(pr *proposal, s *Sample, n, x, mean, drops float64, old int) {
	c := &t.cut
	if !c.active {
		*c = cutEpisode{active: true, inflight: n, mean: mean, drops: drops, limit: old}
	}
	c.looks = 0
	c.latencyCuts = c.latencyCuts || pr.latency
	c.dropCuts = c.dropCuts || pr.drops
	w := float64(max(0, s.InFlight) + max(0, s.QueueLength))
	for r := range c.res {
		if pr.over[r] && !c.res[r].on {
			c.res[r] = cutSnapshot{on: true, at: s.Now, u: pr.u[r], n: n, x: x, w: w}
		}
	}
	if pr.over[resPressure] {
		t.pressureCut = s.Now
	}
}

// endEpisode ends the episode of cuts after an interval with no violation:
// the cuts worked, or the excess went away. A CPU pressure reading awaiting
// judgement is kept while pressure stays over its target: between pressure
// cuts the law waits for the average (see the package doc, "The target
// law"), which is no violation.
func (t *Target) endEpisode(s *Sample) {
	c := &t.cut
	keep, limit := c.res[resPressure], c.limit
	p, ok := s.cpuPressure()
	*c = cutEpisode{}
	if ok && p > t.p.CPUPressure && t.p.CPUPressure > 0 && t.pressurePending(keep, s.Now) {
		c.active, c.res[resPressure], c.limit = true, keep, limit
	}
}

// judgeCuts judges the episode of cuts once they have drained (the peak in
// flight of the interval is within the limit, so its latency is the new
// limit's) and the interval completed something: the resources that drove
// cuts first (see judge), then latency and drops once the in-flight count has
// fallen by a fifth. If latency came from queueing, removing ΔN requests in
// flight shortens every wait by ΔN / X (Little's law); if the mean latency
// fell by less than a tenth of that, concurrency is not the cause, so the
// baseline adopts the current mean (judged only when ΔN / X is three times
// the noise of an interval's mean, see meanNoise). Drops are judged when the count has
// halved: a drop ratio within 10 % of where it was is not load, and becomes
// the drop floor. It reports the reason and true when cuts proved useless and
// the limit held before them should be restored.
func (t *Target) judgeCuts(s *Sample, n, x, mean, drops float64) (Reason, bool) {
	c := &t.cut
	if !c.active || s.completed() == 0 {
		return Reason{}, false
	}
	if c.looks++; c.looks > episodeLooks && !t.pressurePending(c.res[resPressure], s.Now) {
		// No cut for a while: what the episode began with says nothing
		// about the latency, drops or resources now.
		*c = cutEpisode{}
		return Reason{}, false
	}
	if s.MaxInFlight > t.limit {
		return Reason{}, false
	}
	pending := false
	for r := range c.res {
		if why, ok := t.judge(resource(r), s, n, x); ok {
			return why, true
		}
		pending = pending || c.res[r].on
	}
	if n > judgeShare*c.inflight {
		return Reason{}, false
	}
	// A fall of the in-flight count too small to tell from the noise of the
	// means is not judged.
	if fall := (c.inflight - n) / max(x, 1e-9); c.latencyCuts && mean > 0 && x > 0 &&
		fall >= noiseMargin*meanNoise(s) && c.mean-mean < responsiveShare*fall {
		t.base.v = mean
		return Reason{Signal: SignalUnresponsive, Observed: mean, Bound: c.mean}, true
	}
	if n > c.inflight/2 {
		return Reason{}, false
	}
	if c.dropCuts && drops > 0 && drops >= dropsUnmovedShare*c.drops {
		t.dropFloor = drops
		return Reason{Signal: SignalDropsUnmoved, Observed: drops, Bound: c.drops}, true
	}
	c.latencyCuts, c.dropCuts = false, false
	c.active = pending
	return Reason{}, false
}

// meanNoise is the standard error, in seconds, of the difference between two
// interval means of latency like s's: sqrt(2 / count) × the spread, taken as
// (p99 − p50) / 2.33 (the spread of a normal distribution with those
// quantiles; more than the standard deviation of the heavier tails latency
// has, so on the safe side).
func meanNoise(s *Sample) float64 {
	n := float64(max(1, s.Successes))
	spread := seconds(s.Latency.P99-s.Latency.P50) / 2.33
	return math.Sqrt(2/n) * spread
}

// episodeLooks is for how many intervals after its last cut an episode of
// cuts is judged: the cuts drain in an interval or two, and a violation that
// persists without cutting must not be judged much later against how things
// were when it began. Only intervals with completions count: the others (an
// open circuit breaker lets nothing through) tell nothing.
const episodeLooks = 8

// proposeLatency adds the latency target's proposal; it changes nothing
// else.
func (t *Target) proposeLatency(pr *proposal, s *Sample, x, n, mean float64) {
	target := seconds(t.p.Latency)
	p := seconds(s.Latency.Quantile(t.p.Quantile))
	if target == 0 || mean == 0 || p == 0 || x == 0 {
		return
	}
	queueing := max(0, mean-t.base.v)
	noQueue := max(0, p-queueing)
	h := t.p.Headroom
	aim := max(target*(1-h), noQueue*(1+t.p.Tolerance))
	high, sig := target*(1-h/3), SignalLatency
	if aim > high {
		high, sig = aim*(1+h/3), SignalQueueing
	}
	overloaded, kneeCut, cpuWait := false, false, 0.0
	if knee := noQueue * (1 + t.p.Tolerance); knee < aim && t.overloaded {
		// The knee is the aim, the target only a ceiling: past the knee
		// more in flight adds latency and no throughput. Where the backend
		// queues beyond doubt (kneeCuts), the knee is also the cut
		// threshold, with the dead band Headroom/3 above it.
		aim, overloaded = knee, true
		if kneeCut, cpuWait = t.kneeCuts(s, mean); kneeCut {
			high = min(high, knee*(1+h/3))
		} else if p <= knee*(1+h/3) || p > target*(1-h/3) {
			cpuWait = 0 // no cut toward the knee was withheld
		}
	}
	est := n + x*(aim-p)
	if kneeCut && p > high && p <= target*(1-h/3) {
		pr.knee = true
		// A cut toward the knee goes no lower than the in-flight count at
		// which the mean would be kneeQueueing times the baseline (Little's
		// law): what is left there is a queue no longer than the service
		// itself, which a baseline or a knee estimated wrong may hide; nor
		// below the limit a cut toward the knee was found to cost
		// completions at.
		est = max(est, x*kneeQueueing*t.base.v, float64(t.kneeFloor))
	}
	why := Reason{Signal: sig, Quantile: t.p.Quantile, Observed: p, Bound: high, Target: target}
	if overloaded {
		why = Reason{Signal: SignalOverload, Quantile: t.p.Quantile, Observed: p, Bound: aim, Target: target,
			Refused: t.refused, NoQueue: noQueue, CPUWait: cpuWait}
	}
	switch {
	case p > high:
		pr.violate(est, x, why)
	case p < aim && queueing <= t.p.Tolerance*t.base.v && (s.Rejected > 0 || s.Queued > 0) && t.keepsUp(x):
		// No queueing to speak of while the limit binds (requests waited or
		// were refused): latency does not depend on concurrency here, so the
		// limit may double (a slow start) up to the knee, while completions
		// keep up with the doublings.
		why = Reason{Signal: SignalNoQueueing, Observed: mean, Bound: t.base.v * (1 + t.p.Tolerance)}
		pr.allowFast(max(est, 2*float64(t.limit)), why)
	case overloaded:
		// Around the knee: what binds is the refused share and the knee,
		// not the target, and the reason says so.
		if p < aim {
			pr.allow(est, why)
		} else {
			pr.allow(float64(t.limit), why)
		}
	case p < aim:
		why.Signal, why.Bound = SignalLatency, aim
		pr.allow(est, why)
	default:
		pr.allow(float64(t.limit), why)
	}
}

// keepsUp reports whether completions kept up with the last slow start:
// none was made since the last cut, or the throughput x has grown by
// slowGrowth since. A doubling that bought no completions says the
// latency did not show the queue: a baseline adopted from a mean that did
// not fall with a cut (SignalUnresponsive) reads any mean near it as "no
// queueing", and in a starved lab run (the generator late by a second)
// the law doubled its limit 28 → 364 while goodput collapsed (issue 27).
func (t *Target) keepsUp(x float64) bool {
	return t.slowX == 0 || x >= slowGrowth*t.slowX
}

// slowGrowth is how much the throughput must have grown since the last
// slow start for another: a quarter, beyond the noise of one interval's
// count (at 250/s, 62 a quarter second, 13 %); a doubling of the limit
// that binds doubles the completions of a service with room.
const slowGrowth = 1.25

// overloadShare is the share of the demand the gate must turn away for the
// law to take the backend as overloaded: more than a burst at about capacity
// is refused (a few per cent), less than any sustained excess over it.
const overloadShare = 0.1

// refusedWeight is the weight of one interval in Target.refused: a sustained
// excess shows over a second or so, not in one interval of a few hundred
// random arrivals.
const refusedWeight = 0.25

// observeRefused updates the moving average of the share of the demand the
// gate turned away: requests refused for concurrency, queue or fair share,
// and by the managed rate when the law manages one (a static quota's
// refusals are the clients' excess, not the service's), against those
// refused and served. The backend counts as overloaded from when the average
// passes overloadShare until it falls under three quarters of it, so an
// excess of about overloadShare does not flip the aim every few intervals.
func (t *Target) observeRefused(s *Sample) {
	refused := max(0, s.Rejected)
	if t.p.Rate.Initial > 0 {
		refused += max(0, s.RateRejected)
	}
	d := float64(refused + s.completed())
	if d == 0 {
		return
	}
	t.refused += refusedWeight * (float64(refused)/d - t.refused)
	switch {
	case t.refused > overloadShare:
		t.overloaded = true
	case t.refused < overloadShare*3/4:
		t.overloaded = false
	}
}

// forgetDropFloor forgets the drop floor once drops have fallen under half
// of it (what held them up has gone). An interval with no completion tells
// nothing about drops.
func (t *Target) forgetDropFloor(s *Sample, drops float64) {
	if s.completed() > 0 && drops < t.dropFloor/2 {
		t.dropFloor = 0
	}
}

// proposeDrops adds the drop ratio's proposal: above the quantile's budget
// (or the drop floor found not to respond to load) it is a violation. An
// interval with no completion tells nothing about drops.
func (t *Target) proposeDrops(pr *proposal, s *Sample, x, n, drops float64) {
	if s.completed() == 0 {
		return
	}
	budget := max(t.p.Quantile.budget(), t.dropFloor*dropFloorMargin)
	if drops > budget {
		pr.violate(n*(1-drops), x*(1-drops), Reason{Signal: SignalDrops, Observed: drops, Bound: budget})
	}
}

var targetLaw = LawKind{
	Name:        "target",
	Doc:         "keeps every latency, CPU, memory and CPU pressure target at once (the default)",
	NeedsTarget: true,
	ManagesRate: true,
	Type:        reflect.TypeFor[*Target](),
	New: func(s LawSettings) (Law, error) {
		return NewTarget(TargetParams{Bounds: s.Bounds, Latency: s.Latency, Quantile: s.Quantile,
			CPU: s.CPU, Memory: s.Memory, CPUPressure: s.CPUPressure,
			PressureWindow: s.PressureWindow, Rate: s.Rate})
	},
}
