package adaptive

import "time"

// Order is the service order of a wait queue among equal priorities.
type Order uint8

// Queue orders. OrderAdaptive (the zero value) is FIFO while the queue drains and
// LIFO while a standing queue persists.
const (
	OrderAdaptive Order = iota
	OrderFIFO
	OrderLIFO
)

// String returns "adaptive", "fifo" or "lifo".
func (o Order) String() string {
	switch o {
	case OrderFIFO:
		return "fifo"
	case OrderLIFO:
		return "lifo"
	}
	return "adaptive"
}

// ParseOrder parses "adaptive", "fifo" or "lifo".
func ParseOrder(s string) (Order, bool) {
	switch s {
	case "adaptive":
		return OrderAdaptive, true
	case "fifo":
		return OrderFIFO, true
	case "lifo":
		return OrderLIFO, true
	}
	return OrderAdaptive, false
}

// CoDel's defaults, QueueWaitParams' (and a group's queue.codel_target and
// codel_interval).
const (
	DefaultCodelTarget   = 5 * time.Millisecond
	DefaultCodelInterval = 100 * time.Millisecond
)

// QueueWaitParams configures QueueWait. Zero fields mean the defaults.
type QueueWaitParams struct {
	// Target is the wait bound while a standing queue persists, and the wait below
	// which the queue counts as draining; default 5 ms (CoDel's target).
	Target time.Duration
	// Interval is the wait bound for bursts, and how long waits must stay above
	// Target for the queue to count as standing; default 100 ms (CoDel's interval).
	Interval time.Duration
	// Order is the queue order; default OrderAdaptive.
	Order Order
	// Latency, when set, is the operator's latency target for Quantile (default
	// P99). A waiter is then allowed at most the budget the target leaves over
	// the upstream latency, but never less than Target: waiting longer would
	// only make it late. The upstream latency used is a decaying peak of
	// Sample.Latency.Quantile(Quantile) (halving its excess over the current
	// value in about 6 s), because when load rises the upstream latency climbs
	// within an interval while waiters are still being admitted; and it is
	// the latency of a full limit (fullLimitRise), which a waiter is served
	// into. An interval without completions keeps the last budget. Critical
	// waiters are not capped: a critical request served a little late beats one
	// refused.
	Latency  time.Duration
	Quantile Quantile
}

// Validate reports every problem with the params.
func (p QueueWaitParams) Validate() error {
	var pr problems
	if p.Target < 0 {
		pr.add("queue wait target %v must be positive", p.Target)
	}
	if p.Interval < 0 {
		pr.add("queue wait interval %v must be positive", p.Interval)
	}
	t, i := p.Target, p.Interval
	if t == 0 {
		t = DefaultCodelTarget
	}
	if i == 0 {
		i = DefaultCodelInterval
	}
	if t > 0 && i > 0 && i < t {
		pr.add("queue wait interval %v is below target %v", i, t)
	}
	if p.Order > OrderLIFO {
		pr.add("unknown queue order %d", p.Order)
	}
	if p.Latency < 0 {
		pr.add("queue wait latency target %v must be positive", p.Latency)
	}
	if p.Quantile > Mean {
		pr.add("unknown latency quantile %d", p.Quantile)
	}
	return pr.err()
}

// QueueBound is how new waiters queue: their maximum wait (the gate also caps it
// by the request's deadline) and whether the queue serves newest first.
type QueueBound struct {
	// Wait is the bound for waiters below Critical.
	Wait time.Duration
	// Critical is the bound for Critical waiters, always Interval: the queue
	// serves them first, so they wait only for the next free slot, and they
	// keep this bound even while a standing queue of lower priorities is cut
	// short.
	Critical time.Duration
	LIFO     bool
	Standing bool // a standing queue persists

	// StandingWait is the bound for waiters below Critical while a
	// standing queue persists (Target, capped by the latency budget as Wait
	// is); Wait is StandingWait while Standing.
	StandingWait time.Duration
	// Busy is how long the queue must have stayed non-empty for an arrival
	// to find it standing (Interval), whatever the last interval's sample
	// said: CoDel's judgement made per request, which sees a standing queue
	// within Busy of its start instead of at the next control tick. Zero:
	// only Standing counts (no CoDel).
	Busy time.Duration
	// Adaptive makes the queue serve newest first while it stands
	// (OrderAdaptive), by Standing or by Busy.
	Adaptive bool
}

// For returns the wait bound of a waiter of priority p.
func (b QueueBound) For(p Priority) time.Duration {
	if p >= Critical {
		return b.Critical
	}
	return b.Wait
}

// Arrival returns, for a request of priority p that finds no free slot and
// a queue that has been non-empty for busy (0: empty), the longest it may
// wait and whether the queue now serves newest first: a queue non-empty for
// Busy is standing, so waiters below Critical may wait only StandingWait
// and an adaptive queue turns LIFO, at once rather than at the next tick.
func (b QueueBound) Arrival(p Priority, busy time.Duration) (wait time.Duration, lifo bool) {
	standing := b.Busy > 0 && busy >= b.Busy
	lifo = b.LIFO || (b.Adaptive && standing)
	switch {
	case p >= Critical:
		return b.Critical, lifo
	case standing:
		return min(b.Wait, b.StandingWait), lifo
	}
	return b.Wait, lifo
}

// Positions is how far back in the queue (1: served next) a request may
// wait and still expect a slot within wait: slots free about one per gap
// (the group's recent service interval), unless none has freed for idle
// (since the last slot handed to a waiter, or since the queue formed) and
// that silence is longer than stallGaps gaps: it is then the gap now, and a
// stalled service refuses its arrivals as the silence grows. It returns 0 when there is nothing to go by (no gap known,
// no silence), and −1 when not even the next slot is expected within wait:
// the request is refused at once rather than left to wait for its refusal.
func Positions(wait, gap, idle time.Duration) int {
	g := gap
	if idle > stallGaps*gap {
		g = idle
	}
	switch {
	case g <= 0:
		return 0
	case wait < g:
		return -1
	}
	return int(min(wait/g, 1<<30))
}

// QueueWait bounds queue waits in the style of CoDel (Nichols & Jacobson, 2012)
// as adapted by Facebook for server queues ("Fail at Scale", Maurer 2015): if the
// queue has not drained for a whole Interval, it is standing and new waiters may
// wait only Target; otherwise they may wait Interval, which absorbs bursts.
// Critical waiters always get the burst bound (QueueBound.For): they are served
// first, so they wait only for the next free slot. With OrderAdaptive the queue
// also turns LIFO while standing, so the requests served
// are the fresh ones whose clients are still waiting ("adaptive LIFO").
//
// The queue counts as draining in an interval when nothing was turned away at the
// concurrency stage (Sample.Rejected is 0: no waiter timed out or found the queue
// full) and either it was empty at some moment (Sample.QueueDrained, or
// QueueLength 0 at Now) or, while it runs FIFO, a request left it after waiting
// less than Target (CoDel's minimum sojourn time). The sojourn test is not used
// under LIFO, where the newest waiter is served at once even from a queue that
// never empties; and a queue bounded at Target under overload empties now and
// then as waiters time out, which is why rejections veto draining.
//
// With a latency target set, the bound is also capped by the budget the target
// leaves over the upstream latency, so a waiter is not kept only to be served
// late (it is better refused at once, with Retry-After).
//
// Between samples the gate judges each arrival itself with the published
// bound (QueueBound.Arrival): a queue that has stayed non-empty for Interval
// is standing for that request at once. And it refuses at arrival a request
// that would not be served within its bound (Positions): the position it
// would take in the queue times the group's recent service interval.
//
// The gate feeds it the control interval's sample. Not safe for concurrent
// use; publish the QueueBound it returns.
type QueueWait struct {
	p        QueueWaitParams
	drained  time.Time // last time the queue was seen draining
	standing bool
	budget   time.Duration // latency budget left for waiting; 0 = none
	peak     time.Duration // decaying peak of the upstream latency quantile
}

// peakDecay is the per-sample decay of QueueWait's upstream latency peak.
const peakDecay = 0.97

// NewQueueWait returns a controller that sees no standing queue yet.
func NewQueueWait(p QueueWaitParams) (*QueueWait, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Target == 0 {
		p.Target = DefaultCodelTarget
	}
	if p.Interval == 0 {
		p.Interval = DefaultCodelInterval
	}
	return &QueueWait{p: p}, nil
}

// Update applies one sample and returns the bound for new waiters.
func (q *QueueWait) Update(s Sample) QueueBound {
	lifo := q.Bound().LIFO
	draining := s.Rejected <= 0 && (s.QueueDrained || s.QueueLength <= 0 ||
		(!lifo && s.QueueWaitMax > 0 && s.QueueWaitMin < q.p.Target))
	if draining || q.drained.IsZero() {
		q.drained = s.Now
		q.standing = false
	} else {
		q.standing = s.Now.Sub(q.drained) >= q.p.Interval
	}
	// An interval that completed nothing (a stall) keeps the budget: its
	// latency is unknown, not low, and without a budget a waiter's bound
	// would go back to Interval just when nothing is served.
	if up := s.Latency.Quantile(q.p.Quantile); q.p.Latency > 0 && up > 0 {
		up += fullLimitRise(&s)
		q.peak = max(up, time.Duration(float64(q.peak)*peakDecay))
		q.budget = max(q.p.Latency-q.peak, q.p.Target)
	}
	return q.Bound()
}

// Bound returns the current bound.
func (q *QueueWait) Bound() QueueBound {
	b := QueueBound{Wait: q.p.Interval, Critical: q.p.Interval, Standing: q.standing,
		StandingWait: q.p.Target, Busy: q.p.Interval, Adaptive: q.p.Order == OrderAdaptive}
	if q.standing {
		b.Wait = q.p.Target
	}
	if q.budget > 0 {
		b.Wait = min(b.Wait, q.budget)
		b.StandingWait = min(b.StandingWait, q.budget)
	}
	b.LIFO = q.p.Order == OrderLIFO || (q.p.Order == OrderAdaptive && q.standing)
	return b
}

// fullLimitRise is how much higher than s measured it the upstream latency
// is once the limit is full, as it is whenever a request waits in the queue:
// by Little's law each request in flight beyond the mean the interval had
// (throughput × mean latency) adds a completion interval (1 / throughput)
// to every latency, so (limit − mean in flight) / throughput. A waiter is
// served into a full limit, and its wait adds to that latency, not to the
// lower one measured while the limit had room (issue 27: at 1×C a limit of
// 104 held 80 in flight, and at a step to 3×C the queue's waits came on top
// of the upstream p99 of the full limit: 109 ms against a 100 ms target).
// Only while the limit is in use on average (the mean in flight at least
// DefaultUseRatio of it, so the rise is at most the mean latency): the
// throughput of a service far below its limit says nothing of how fast it
// serves a full one (a burst into a quiet group). Zero when nothing
// completed.
func fullLimitRise(s *Sample) time.Duration {
	x := s.throughput()
	if x <= 0 || s.Limit <= 0 {
		return 0
	}
	n := x * s.Latency.Mean.Seconds()
	if room := float64(s.Limit) - n; room > 0 && n >= DefaultUseRatio*float64(s.Limit) {
		return time.Duration(room / x * float64(time.Second))
	}
	return 0
}

// stallGaps is how many intervals between completions the queue must go
// without handing a slot out for the silence to count (Positions): slots
// free at random moments, and a silence of a few gaps is chance (one of
// four gaps or more, for completions like a Poisson stream's, about once
// in fifty), while a service that stopped goes silent for as long as it
// stops.
const stallGaps = 4

// Silent reports whether an arrival of priority p finds the service
// stalled: inflight requests are in flight and none has completed for
// silence, as long as silentCompletions of them would take at the mean
// upstream latency of the last interval (Little's law: n in flight with a
// mean latency m complete one per m/n). The service has stopped (a
// stop-the-world pause, a hang), and a request admitted now waits for the
// stall whatever slot it gets (issue 27: at 0.8×C a limit of 71 filled
// within 60 ms of each 300 ms stall, and every one of those requests came
// back late). The gate refuses such an arrival at once (RejectQueueFull:
// it will not be served within any bound), free slot or not, in a group
// with a queue and a latency target, until a completion ends the silence,
// and counts it in Sample.Silenced, not
// Rejected; a Critical one is still admitted (served a little late beats
// refused). Nothing is judged without a mean (mean 0) or
// with nothing in flight: the silence of an idle service is no stall, and
// it starts when a request is admitted with nothing else in flight.
func Silent(p Priority, inflight int, silence, mean time.Duration) bool {
	return p < Critical && inflight > 0 && mean > 0 &&
		time.Duration(inflight)*silence >= silentCompletions*mean
}

// silentCompletions is how many completions a silence must have gone
// without to count (Silent): for completions like a Poisson stream's, an
// arrival finds such a silence by chance with probability (1 + k)·e^−k
// (arrivals land in long silences more often), one in about 12,000 for
// k = 12. At 1,200 req/s with 12 in flight (a mean of 10 ms) it is the
// first 10 ms of a stall.
const silentCompletions = 12

// SilenceGrain is the resolution at which the gate notes the instant of
// the last completion (Silent's silence): one is stored only when it is
// this much later than the one stored, so that at a high rate most
// completions only read the field every core shares. It is a two-hundredth
// of the silence Silent needs at 1,200 req/s with 12 in flight (10 ms).
const SilenceGrain = 50 * time.Microsecond
