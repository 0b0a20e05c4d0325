package adaptive

import (
	"math"
	"time"
)

// TargetParams configures Target. Zero fields mean the defaults; at least one of
// Latency, CPU and Memory must be set.
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

	// Headroom is how far below a target the law aims when it raises the limit, as
	// a fraction of the target, in [0, 0.5); default 0.15. A latency quantile is
	// cut only above target × (1 − Headroom/3), so between the two is a dead band
	// where the limit holds; the rest of the target is left for the gate's queue
	// wait, which the upstream latency the law sees does not include.
	// Utilisation targets aim at target × (1 − Headroom/2) and are cut above the
	// target itself.
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
	if p.Latency == 0 && p.CPU == 0 && p.Memory == 0 {
		pr.add("target law needs at least one target (latency, cpu or memory)")
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
// quantile, CPU and memory utilisation) at once, approaching the largest limit
// that meets all of them. It is sluice's default law.
//
// # Model
//
// Each interval every configured target proposes a limit and the most restrictive
// proposal wins. For the latency target the proposal comes from Little's law
// (L = λW; Little 1961): the mean number in flight is N = X × mean, with X the
// completion rate. When the backend queues, adding ΔN requests in flight delays
// every request by ΔN / X, which shifts the quantile p by the same amount, so the
// in-flight count that puts p at the aim a is
//
//	estimate = N + X × (a − p)
//
// The law jumps there instead of creeping: a cut goes the whole way (at most
// halving per interval), a raise goes Gain of the way (at most doubling per
// interval). Below the backend's knee latency does not respond to concurrency:
// while the limit binds (requests wait or are refused) and the mean latency is
// within Tolerance of its no-load baseline (below), the limit doubles per
// interval (a slow start, SignalNoQueueing) until queueing shows.
//
// The aim is target × (1 − Headroom) and the limit is cut only when p exceeds
// target × (1 − Headroom/3): the band in between is a dead band, which keeps
// the limit still under steady load, and the last Headroom/3 of the target is
// left for the time requests wait in the gate's queue (bounded by QueueWait to
// what the target leaves), so the end-to-end quantile stays within the target.
//
// # Latency the limit cannot fix
//
// A backend can be slow without queueing (its baseline latency is itself near or
// above the target). Cutting the limit then only rejects work. The law separates
// queueing from baseline latency: the queueing delay is the mean latency above
// the baseline (the lowest interval mean, which rises only while the limit is not
// in use), and the no-queue quantile is pnq = p − (mean − baseline). The aim
// becomes max(target × (1 − Headroom), pnq × (1 + Tolerance)): when the target is
// unreachable, only Tolerance of queueing is allowed (SignalQueueing) and the
// limit neither collapses nor grows without bound. If a backend becomes slow while
// the limit is in use, the baseline is stale; the law notices when cutting the
// in-flight count by a fifth or more did not shorten the mean latency by a
// tenth of what Little's law predicts for queueing (ΔN / X), adopts the
// current mean as the baseline and restores the limit it had before the cuts
// (SignalUnresponsive). Drops are treated alike: a drop ratio above the
// quantile's budget (1 % for p99) is a violation, unless halving concurrency did
// not reduce it, in which case the errors are not load and are tolerated.
//
// # Overload
//
// Above the knee a backend's throughput no longer grows with concurrency, only
// its queue does: every request in flight beyond the knee adds its share of
// waiting to every other (ΔN / X, Little's law) and nothing to goodput. Below
// or near capacity that queue is worth having, since it absorbs the bursts of
// random arrivals that a tighter limit would refuse; under a sustained excess
// it never drains and only costs latency (and the answers that come too late).
// So while the limit turns away more than a tenth of the demand
// (overloadShare), the law aims the quantile at its no-queue level plus
// Tolerance, the knee, instead of at the target (SignalOverload): the backend
// stays at full throughput with a short queue, and the waiting happens in the
// gate's queue, which sheds it. When the excess ends, the aim returns to the
// target.
//
// # Resources
//
// CPU: utilisation is proportional to throughput, so above the target the law
// aims the throughput at X × aim / cpu and converts it to a limit with Little's
// law at the no-queue latency: estimate = X × aim / cpu × min(mean, baseline ×
// (1 + Tolerance)).
//
// Memory must never exceed its target, and the gate's queue holds memory too,
// so the law budgets the worst case. It learns memory ≈ base + perRequest ×
// (in flight + waiting) by least squares with forgetting and keeps base +
// perRequest × (limit + Sample.QueueCapacity) at or below the aim: a full queue
// on top of a full limit still fits (SignalMemoryBudget). Until the fit is
// usable, or if memory does not rise with held work, it falls back to
// proportional control on the observed utilisation: estimate = limit × aim /
// memory. CPU and memory aim at target × (1 − Headroom/2) and cut above the
// target.
//
// # Pacing
//
// A cut takes effect only once the requests admitted under the old limit have
// drained, so while the peak in flight of the interval still exceeded the limit
// the law just cut to, it does not cut again on their latency. A mild excess
// must persist for two intervals before it cuts, so
// the noise of a quantile measured over one interval does not saw the limit; a
// larger excess (50 % over a latency bound, or beyond a quarter of the room left
// above a utilisation target) cuts at once, and the whole way; a mild one goes
// Gain of the way.
//
// # Token rate
//
// With Rate set, the law also manages a token rate: when a target is exceeded the
// rate becomes (1 + Rate.Headroom) × the admitted throughput at that moment (for
// CPU and memory, scaled by aim / utilisation), never higher than it was, when
// the law acts on the excess (it is paced as cuts of the limit are); while
// the rate turns requests away and every target has headroom, it grows by the
// same factor the limit could (at most 25 % per interval).
//
// Not safe for concurrent use.
type Target struct {
	p     TargetParams
	limit int
	rate  float64
	base  baseline
	// cut is the episode of consecutive cuts, to tell whether cutting helps.
	cut struct {
		active      bool
		inflight    float64 // N when the episode began
		mean        float64 // mean latency when it began
		drops       float64 // drop ratio when it began
		limit       int     // limit before the first cut
		latencyCuts bool    // a latency target drove a cut
		dropCuts    bool    // drops drove a cut
	}
	// dropFloor is a drop ratio found not to respond to load; drops up to it are
	// tolerated.
	dropFloor float64
	// cutLast: the last decision cut the limit; mild: the last interval had a
	// mild violation that was not acted on.
	cutLast, mild bool
	// refused is the share of the demand the limit turned away, a moving
	// average over intervals (observeRefused).
	refused float64
	mem     memModel
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
	p.Headroom = orDefault(p.Headroom, 0.15)
	p.Tolerance = orDefault(p.Tolerance, 0.1)
	p.Gain = orDefault(p.Gain, 0.5)
	p.UseRatio = orDefault(p.UseRatio, DefaultUseRatio)
	if p.Rate.Initial > 0 {
		p.Rate.Min = orDefault(p.Rate.Min, 1)
		if p.Rate.Max == 0 {
			p.Rate.Max = math.Inf(1)
		}
		p.Rate.Headroom = orDefault(p.Rate.Headroom, 0.1)
	}
	return &Target{p: p, limit: p.Initial, rate: p.Rate.Initial}, nil
}

// Limit returns the current limit.
func (t *Target) Limit() int { return t.limit }

// Rate returns the current token rate in requests per second, 0 when the law
// manages none.
func (t *Target) Rate() float64 { return t.rate }

// proposal accumulates the targets' proposals for one interval.
type proposal struct {
	violated bool
	severe   bool    // some violation is severe (see severeExcess)
	fast     bool    // the growth ceiling is a slow start (no gain applied)
	cut      float64 // lowest proposal among violated targets
	cutWhy   Reason
	rateCut  float64 // throughput to set the rate to, among violated targets
	want     float64 // lowest proposal among all targets (growth ceiling)
	wantWhy  Reason
	latency  bool // the binding cut came from latency
	drops    bool // the binding cut came from drops
}

// severeExcess is how far over its bound a latency or drop ratio must be to
// cut at once: a quantile measured over one interval of a few hundred requests
// easily reads 25 % high by chance, a real overload (the backend at half speed)
// reads 70 % high or more.
const severeExcess = 1.5

func (pr *proposal) violate(est, rate float64, why Reason) {
	pr.violated = true
	switch why.Signal {
	case SignalCPU, SignalMemory, SignalMemoryBudget:
		// A utilisation cannot exceed 1, so severity is measured against the
		// room left: beyond a quarter of it.
		pr.severe = pr.severe || why.Observed > why.Bound+(1-why.Bound)/4
	default:
		pr.severe = pr.severe || why.Observed > severeExcess*why.Bound
	}
	if est < pr.cut {
		pr.cut, pr.cutWhy = est, why
		pr.latency = why.Signal == SignalLatency || why.Signal == SignalQueueing
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
	x := s.throughput()
	mean := seconds(s.Latency.Mean)
	drops := s.dropRatio()
	use := inUse(&s, old, t.p.UseRatio)
	t.base.observe(mean, use, s.interval())
	t.observeRefused(&s)
	n := x * mean // mean in flight, by Little's law

	if why, ok := t.checkCuts(s.MaxInFlight <= old, n, x, mean, drops); ok {
		next := max(old, t.cut.limit)
		t.cut.active = false
		t.limit = next
		return decide(old, next, oldRate, t.rate, why)
	}

	pr := proposal{cut: math.Inf(1), rateCut: math.Inf(1), want: math.Inf(1)}
	t.latency(&pr, &s, x, n, mean)
	t.drops(&pr, x, n, drops)
	t.resources(&pr, &s, x, n, mean)

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
		cut := max(pr.cut, 0.5*float64(old))
		if !pr.severe {
			cut = float64(old) - t.p.Gain*(float64(old)-cut)
		}
		next = min(old, round(cut))
		if next < old && !t.cut.active {
			t.cut.active = true
			t.cut.inflight, t.cut.mean, t.cut.drops, t.cut.limit = n, mean, drops, old
			t.cut.latencyCuts, t.cut.dropCuts = false, false
		}
		if next < old {
			t.cut.latencyCuts = t.cut.latencyCuts || pr.latency
			t.cut.dropCuts = t.cut.dropCuts || pr.drops
		}
	case math.IsInf(pr.want, 1):
		why = Reason{Signal: SignalNoData}
		t.cut.active = false
	case !use:
		why = Reason{Signal: SignalAppLimited, Observed: float64(s.MaxInFlight), Bound: float64(old)}
		t.cut.active = false
	default:
		t.cut.active = false
		if gap := pr.want - float64(old); gap >= 1 {
			g := t.p.Gain
			if pr.fast {
				g = 1
			}
			next = old + max(1, round(g*gap))
			next = min(next, 2*old)
		}
	}
	if !pr.violated {
		t.mild = false
	}
	t.limit = min(max(next, t.p.Min), t.p.Max)
	t.cutLast = t.limit < old
	if t.cutLast {
		t.mild = false
	}
	t.updateRate(&s, &pr, n, acted)
	if t.limit == old && t.rate != oldRate && !pr.violated {
		why = Reason{Signal: SignalRate, Observed: x, Bound: oldRate}
	}
	return decide(old, t.limit, oldRate, t.rate, why)
}

// checkCuts judges a cut episode once the cuts have drained (the peak in flight
// of the interval is within the limit, so its latency is the new limit's) and
// taken the in-flight count down by a fifth. If latency came from queueing,
// removing ΔN requests in flight shortens every wait by ΔN / X (Little's law);
// if the mean latency fell by less than a tenth of that, concurrency is not the
// cause, so the baseline adopts the current mean. It reports the reason and true
// when latency cuts proved useless and the limit should be restored. Drops are
// judged when the count has halved: a drop ratio within 10 % of where it was is
// not load, and becomes the drop floor.
func (t *Target) checkCuts(drained bool, n, x, mean, drops float64) (Reason, bool) {
	c := &t.cut
	if !c.active || !drained || n > 0.8*c.inflight {
		return Reason{}, false
	}
	if c.latencyCuts && mean > 0 && x > 0 && c.mean-mean < 0.1*(c.inflight-n)/x {
		c.active = false
		t.base.v = mean
		return Reason{Signal: SignalUnresponsive, Observed: mean, Bound: c.mean}, true
	}
	if n > c.inflight/2 {
		return Reason{}, false
	}
	c.active = false
	if c.dropCuts && drops > 0 && drops >= 0.9*c.drops {
		t.dropFloor = drops
	}
	return Reason{}, false
}

// latency adds the latency target's proposal.
func (t *Target) latency(pr *proposal, s *Sample, x, n, mean float64) {
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
	overloaded := false
	if knee := noQueue * (1 + t.p.Tolerance); knee < aim && t.refused > overloadShare {
		aim, overloaded = knee, true
	}
	est := n + x*(aim-p)
	why := Reason{Signal: sig, Quantile: t.p.Quantile, Observed: p, Bound: high, Target: target}
	switch {
	case p > high:
		pr.violate(est, x, why)
	case p < aim && queueing <= t.p.Tolerance*t.base.v && (s.Rejected > 0 || s.Queued > 0):
		// No queueing to speak of while the limit binds (requests waited or
		// were refused): latency does not depend on concurrency here, so the
		// limit may double (a slow start) up to the knee.
		why = Reason{Signal: SignalNoQueueing, Observed: mean, Bound: t.base.v * (1 + t.p.Tolerance)}
		pr.allowFast(max(est, 2*float64(t.limit)), why)
	case p < aim:
		why.Signal, why.Bound = SignalLatency, aim
		pr.allow(est, why)
	case overloaded:
		why.Signal, why.Bound = SignalOverload, aim
		pr.allow(float64(t.limit), why)
	default:
		pr.allow(float64(t.limit), why)
	}
}

// overloadShare is the share of the demand the limit must turn away for the
// law to take the backend as overloaded: more than a burst at about capacity
// is refused (a few per cent), less than any sustained excess over it.
const overloadShare = 0.1

// refusedWeight is the weight of one interval in Target.refused: a sustained
// excess shows over a second or so, not in one interval of a few hundred
// random arrivals.
const refusedWeight = 0.25

// observeRefused updates the moving average of the share of the demand the
// limit turned away (requests refused for concurrency, queue or fair share,
// against those refused and served).
func (t *Target) observeRefused(s *Sample) {
	d := float64(s.Rejected + s.Successes + s.Drops)
	if d == 0 {
		return
	}
	t.refused += refusedWeight * (float64(s.Rejected)/d - t.refused)
}

// drops adds the drop ratio's proposal: above the quantile's budget (or the
// drop floor found not to respond to load) it is a violation.
func (t *Target) drops(pr *proposal, x, n, drops float64) {
	if drops < t.dropFloor/2 {
		t.dropFloor = 0
	}
	budget := max(t.p.Quantile.budget(), t.dropFloor*1.25)
	if drops > budget {
		pr.violate(n*(1-drops), x*(1-drops), Reason{Signal: SignalDrops, Observed: drops, Bound: budget})
	}
}

// resources adds the CPU and memory targets' proposals.
func (t *Target) resources(pr *proposal, s *Sample, x, n, mean float64) {
	h := t.p.Headroom / 2
	if u, ok := s.cpu(); ok && t.p.CPU > 0 {
		aim := t.p.CPU * (1 - h)
		why := Reason{Signal: SignalCPU, Observed: u, Bound: t.p.CPU}
		switch {
		case u > t.p.CPU:
			w := mean
			if t.base.v > 0 {
				w = min(mean, t.base.v*(1+t.p.Tolerance))
			}
			pr.violate(x*aim/u*w, x*aim/u, why)
		case u < aim:
			pr.allow(n*aim/max(u, 0.01), why)
		default:
			pr.allow(float64(t.limit), why)
		}
	}
	if u, ok := s.memory(); ok && t.p.Memory > 0 {
		held := float64(max(0, s.InFlight) + max(0, s.QueueLength))
		t.mem.add(held, u)
		aim := t.p.Memory * (1 - h)
		lim := float64(t.limit)
		if slots, proj, ok := t.mem.budget(aim, u, held, t.limit, max(0, s.QueueCapacity)); ok {
			why := Reason{Signal: SignalMemoryBudget, Observed: proj, Bound: t.p.Memory}
			switch {
			case u > t.p.Memory:
				pr.severe = true // memory over its target must not wait for a second look
				pr.violate(min(slots, lim*aim/u), x*aim/u, Reason{Signal: SignalMemory, Observed: u, Bound: t.p.Memory})
			case proj > t.p.Memory:
				pr.violate(slots, x*aim/proj, why)
			case proj < aim:
				pr.allow(slots, why)
			default:
				pr.allow(lim, why)
			}
			return
		}
		why := Reason{Signal: SignalMemory, Observed: u, Bound: t.p.Memory}
		switch {
		case u > t.p.Memory:
			pr.severe = true
			pr.violate(lim*aim/u, x*aim/u, why)
		case u < aim:
			pr.allow(lim*aim/max(u, 0.01), why)
		default:
			pr.allow(lim, why)
		}
	}
}
