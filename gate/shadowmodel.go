package gate

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/internal/hist"
)

// enforcement is the model of enforcement a shadowed group decides and
// learns on (see the package doc, "Shadow mode"). In shadow every request
// reaches the service, whose queue grows under a load enforcement would
// have refused, so the service's latency and the slots held while it lasts
// are not what enforcement would see: a law steering by them cuts its limit
// toward its minimum under exactly the load shadow is meant to preview
// (issue 28). So a shadowed group takes no slot: each arrival is decided by
// this model, a copy of the concurrency stage (the limit in force, the
// queue with its bound and the arrival refusal of a wait that will not be
// served in time) in front of a model of the service with the capacity and
// the latency measured on the real one: W = C·s servers, C the most
// successes the real service completed per second lately (a service with a
// queue of its own completes at its capacity) and s its own mean latency,
// that of the requests that found no more in flight in the real service
// than in the model (clean: their latency is what enforcement would have
// measured) and fewer than W (free: a server was free for them, so their
// latency holds no wait in the real service's own queue, which the model
// adds itself), over the last minService of them, however many intervals
// they took to come, and their median until there are minService (at a
// cold start beyond C the first few are the only ones). A request the
// model admits starts when the first of the W servers is free (a FIFO
// queue of W servers) and takes a service time drawn from that latency's
// quantiles; a waiter of the gate's queue takes the slot of the next to
// end.
//
// The law of the group is given the interval as the model saw it: its
// in-flight count, completions, queue and would-be refusals, and the latency
// of the interval's clean requests when there are enough of them and the
// service is measured, else the service's own distribution plus the mean
// wait of the model's admissions for a server, once its servers were sized
// (C measured) when the interval began: before, nothing waits for one, and
// the law would take for its baseline a latency without the queue that
// enforcement's first interval has.
//
// All methods hold mu: a shadowed group's arrivals serialise on it, as they
// would not enforcing (a preview costs that); an arrival allocates nothing
// but when the limit rises past the model's slices.
type enforcement struct {
	mu sync.Mutex

	// calls are the requests in the model's service, a heap by end (n of
	// them); free is when each of its servers is next free (ns), a heap,
	// least first: W of them, or fewer while fewer are ever busy at once.
	// q is the number waiting in the gate's queue, since queueSince (ns; 0
	// while none waits).
	calls      []modelCall
	n          int
	free       []int64
	q          int
	queueSince int64
	rng        rand.PCG // service times

	// capacity is C (requests per second) and service s's figures, the
	// service's own latency distribution (Mean is s); zero while unknown
	// (then the model's service ends nothing), until the first clean
	// completions: s their median so far, C unbounded until the first tick.
	capacity float64
	service  adaptive.Latency
	// xs are the last intervals' real successes per second (capacityMean
	// intervals averaged), of which capacity is the largest; last the
	// last capacityMean intervals' own, the xAt-th at xAt mod capacityMean.
	xs   [capacityWindow]float64
	xAt  int
	last [capacityMean]float64
	// serviceAt is the tick count at which service was measured (0: not
	// yet on minService clean completions); it is measured again when it is
	// older than serviceWindow ticks. sampled holds the clean successes
	// since it was last measured (or since the start), over as many
	// intervals as it takes to gather minService: under a load beyond C
	// clean requests are few, and a high first estimate must be corrected
	// by the next minService of them, however slowly they come.
	serviceAt, ticks int
	sampled          *hist.Histogram

	// The interval's account (reset at each tick): completions; the
	// requests queued; the clean requests dropped; the peak of n and n at
	// the start; whether the queue was empty at some instant; the waits
	// the queue's bound let in, least and most; the sum and number of the
	// admissions' waits for one of the W (ns).
	done, queued, cleanDrops int
	peak, inflightStart      int
	drained                  bool
	waitMin, waitMax         time.Duration
	startWait, starts        float64
	clean                    *hist.Histogram // latency of the interval's clean completions
}

// modelCall is a request in the model's service: when it was admitted,
// when it ends (ns; unknownEnd while the service's latency is not known),
// and its service time's quantile.
type modelCall struct {
	adm, end int64
	u        float64
}

const unknownEnd = math.MaxInt64

// Figures of the model.
const (
	// capacityWindow is how many intervals the capacity is the peak of:
	// 30 s at the default interval. In shadow an overloaded service's
	// successes fall far below what it completes (its clients give up and
	// it serves requests nobody waits for), so the peak is kept that long.
	capacityWindow = 120
	// capacityMean is how many intervals' successes each figure the
	// capacity is the peak of averages: a second at the default interval.
	// A busy machine hands completions on in bursts (an interval of twice
	// C after one of none), and the peak of shorter averages took a burst
	// for capacity: 1.1–1.25 × C in the lab at 3× in shadow.
	capacityMean = 4
	// serviceWindow is how many ticks a measure of the service's own
	// latency is kept before a later one may replace it whatever its
	// figure: a minute at the default interval.
	serviceWindow = 240
	// minClean is how many clean completions an interval needs for its
	// latency to be the law's, and minService how many the service's own
	// latency is measured on (a tail of fewer is one outlier).
	minClean   = 10
	minService = 100
)

// shadowMark is what shadow mode made of an admitted request (Pass.how):
// the zero mark for one that enforcement admitted as it was.
type shadowMark struct {
	// why is the reason enforcement would have refused the request for
	// (RejectNone: it would not have; a shadowed rate rule's refusal in a
	// group that enforces is RejectRate on a request that holds a slot).
	why adaptive.RejectReason
	// slotless: a shadowed group admitted the request without a slot (the
	// model of enforcement decided its concurrency stage).
	slotless bool
	// within: the model admitted it to the service (a slot of the model).
	within bool
	// clean: the real service held no more requests than the model then,
	// so its latency is what enforcement would have measured.
	clean bool
	// free: the real service held fewer requests than the model's W then
	// (or W was not known), so one of its servers was free and its latency
	// is the service's own, without a wait in its queue.
	free bool
}

// advance moves the model to now (ns): the calls that ended leave its
// service, each handing its slot to a waiter, and waiters take the slots a
// raised limit frees.
func (m *enforcement) advance(now int64, limit int) {
	for m.n > 0 && m.calls[0].end <= now {
		t := m.pop()
		m.done++
		if m.q > 0 && m.n < limit {
			m.q--
			m.push(t, limit)
		}
	}
	for m.q > 0 && m.n < limit {
		m.q--
		m.push(now, limit)
	}
	if m.q == 0 {
		m.queueSince = 0
		m.drained = true
	}
}

// workers is W, the calls the model's service has in service at once
// (0: unknown).
func (m *enforcement) workers() int {
	if m.service.Mean <= 0 || m.capacity <= 0 {
		return 0
	}
	w := m.capacity * m.service.Mean.Seconds()
	if math.IsInf(w, 1) || w > 1<<30 {
		return 1 << 30
	}
	return max(1, int(math.Round(w)))
}

// push admits a call at t (ns) into the model's service: it starts when
// the first of the W servers is free (at once with fewer in the service)
// and ends a service time later, drawn from the service's own latency
// distribution. The slices grow to the limit and to W (allocating only when
// they rise past them).
func (m *enforcement) push(t int64, limit int) {
	if m.n == len(m.calls) {
		m.calls = slices.Grow(m.calls[:m.n], max(m.n, limit, 16))[:max(2*m.n, limit, 16)]
	}
	c := modelCall{adm: t, end: unknownEnd, u: float64(m.rng.Uint64()>>11) / (1 << 53)}
	m.schedule(&c)
	m.calls[m.n] = c
	m.n++
	m.up(m.n - 1)
	m.peak = max(m.peak, m.n)
}

// schedule sets c's end, once the service is known.
func (m *enforcement) schedule(c *modelCall) {
	w := m.workers()
	if w == 0 {
		return
	}
	m.servers(min(w, max(m.n+1, 16)), w)
	start := max(c.adm, m.free[0])
	c.end = start + int64(serviceTime(&m.service, c.u))
	m.free[0] = c.end
	siftFree(m.free, 0)
	m.startWait += float64(start - c.adm)
	m.starts++
}

// servers makes the model's servers at least keep of them (those added
// free: with fewer calls in the service than servers, one is) and at most
// w (dropping the first to be free: fewer servers make the next wait).
func (m *enforcement) servers(keep, w int) {
	for len(m.free) < keep {
		m.free = append(m.free, 0)
		for i := len(m.free) - 1; i > 0 && m.free[(i-1)/2] > m.free[i]; i = (i - 1) / 2 {
			m.free[(i-1)/2], m.free[i] = m.free[i], m.free[(i-1)/2]
		}
	}
	for len(m.free) > w {
		last := len(m.free) - 1
		m.free[0] = m.free[last]
		m.free = m.free[:last]
		siftFree(m.free, 0)
	}
}

// siftFree restores the heap of free instants f from i down.
func siftFree(f []int64, i int) {
	for {
		l, least := 2*i+1, i
		if l < len(f) && f[l] < f[least] {
			least = l
		}
		if r := l + 1; r < len(f) && f[r] < f[least] {
			least = r
		}
		if least == i {
			return
		}
		f[i], f[least] = f[least], f[i]
		i = least
	}
}

// serviceTime is the u-quantile of the service's latency, linear between
// the quantiles known, scaled so that the times drawn have the service's
// mean (which W = C·s is made of).
func serviceTime(l *adaptive.Latency, u float64) time.Duration {
	qs := [...]float64{0, 0.5, 0.9, 0.95, 0.99, 0.999, 1}
	vs := [...]float64{float64(l.Min), float64(l.P50), float64(l.P90), float64(l.P95), float64(l.P99), float64(l.P999), float64(l.P999)}
	var mean, v float64
	for i := 1; i < len(qs); i++ {
		mean += (vs[i-1] + vs[i]) / 2 * (qs[i] - qs[i-1])
		if u >= qs[i-1] && u <= qs[i] {
			v = vs[i-1] + (u-qs[i-1])/(qs[i]-qs[i-1])*(vs[i]-vs[i-1])
		}
	}
	if mean <= 0 {
		return l.Mean
	}
	return time.Duration(v * float64(l.Mean) / mean)
}

// up and down restore the heap of calls by end from i; pop removes its
// first and returns its end.
func (m *enforcement) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if m.calls[p].end <= m.calls[i].end {
			return
		}
		m.calls[p], m.calls[i] = m.calls[i], m.calls[p]
		i = p
	}
}

func (m *enforcement) down(i int) {
	for {
		l, least := 2*i+1, i
		if l < m.n && m.calls[l].end < m.calls[least].end {
			least = l
		}
		if r := l + 1; r < m.n && m.calls[r].end < m.calls[least].end {
			least = r
		}
		if least == i {
			return
		}
		m.calls[i], m.calls[least] = m.calls[least], m.calls[i]
		i = least
	}
}

func (m *enforcement) pop() int64 {
	end := m.calls[0].end
	m.n--
	m.calls[0] = m.calls[m.n]
	m.down(0)
	return end
}

// gap is the model's interval between completions now (0: unknown).
func (m *enforcement) gap() time.Duration {
	w := m.workers()
	if w == 0 || m.n == 0 {
		return 0
	}
	return m.service.Mean / time.Duration(min(m.n, w))
}

// arrive decides an arrival at now (ns) of priority p, as enforcement would
// with the limit, the queue bound maxQueue and the group's published queue
// bound qb, as the arrival's mark (slotless): a slot (RejectNone, within),
// a place in the queue (RejectNone), or a refusal's reason. inFlight is the
// number of requests the real service holds; the arrival is clean when it
// is no more than the model's.
func (m *enforcement) arrive(now int64, p adaptive.Priority, limit, maxQueue int, qb *adaptive.QueueBound, inFlight int) shadowMark {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(now, limit)
	w := m.workers()
	mark := shadowMark{slotless: true, clean: inFlight <= m.n, free: w == 0 || inFlight < w}
	if m.q == 0 && m.n < limit {
		m.push(now, limit)
		mark.within = true
		return mark
	}
	if maxQueue == 0 {
		mark.why = adaptive.RejectConcurrency
		return mark
	}
	var busy time.Duration
	if m.queueSince != 0 {
		busy = time.Duration(now - m.queueSince)
	}
	wait, _ := qb.Arrival(p, busy)
	if wait <= 0 {
		mark.why = adaptive.RejectQueueTimeout
		return mark
	}
	gap := m.gap()
	pos := adaptive.Positions(wait, gap, 0)
	if pos < 0 || m.q+1 > maxQueue || (pos > 0 && m.q+1 > pos) {
		mark.why = adaptive.RejectQueueFull
		return mark
	}
	if m.q == 0 {
		m.queueSince = now
	}
	m.q++
	m.queued++
	if gap > 0 {
		w := time.Duration(m.q) * gap
		if m.waitMin == 0 || w < m.waitMin {
			m.waitMin = w
		}
		m.waitMax = max(m.waitMax, w)
	}
	return mark
}

// known schedules the calls admitted while the service's latency was not
// known, in the order they were admitted.
func (m *enforcement) known() {
	cs := m.calls[:m.n]
	clear(m.free) // every server free: the calls are scheduled anew
	slices.SortFunc(cs, func(a, b modelCall) int { return cmp.Compare(a.adm, b.adm) })
	n := m.n
	m.n = 0
	for i := range n {
		m.schedule(&cs[i])
		m.n++
		m.up(i)
	}
}

// leave ends a shadowed request that ran for latency with outcome o: a
// clean one's latency is what enforcement would have measured. Until
// minService of them have been measured, the service's own latency is the
// median of those so far, and its capacity unbounded until the first tick
// measures it. The median, not the mean: at a cold start beyond C the first
// ~limit requests are the only clean ones for a while, and those that paid
// for opening connections on a machine busy with the shadowed overload
// (twice the time, in the lab) would otherwise double the model's servers
// and its knee.
func (m *enforcement) leave(mark shadowMark, latency time.Duration, o Outcome) {
	if !mark.clean {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch o {
	case Success:
		if m.clean == nil {
			m.clean, m.sampled = new(hist.Histogram), new(hist.Histogram)
		}
		m.clean.Add(latency)
		if !mark.free {
			return
		}
		m.sampled.Add(latency)
		if m.serviceAt == 0 {
			med := m.sampled.Quantile(0.5)
			m.service = adaptive.Latency{Min: med, Mean: med, P50: med, P90: med, P95: med, P99: med, P999: med}
			if m.capacity == 0 {
				m.capacity = math.Inf(1)
			}
			m.known()
		}
	case Dropped:
		m.cleanDrops++
	}
}

// tick ends the model's interval at now (ns): it measures the real service
// from the interval's real successes (s.Successes) and the clean latencies
// gathered, rewrites s (the sample of the real interval) as the model saw
// it, and starts the next interval. limit is the limit in force.
func (m *enforcement) tick(now int64, limit int, s *adaptive.Sample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(now, limit)
	m.ticks++
	elapsed := s.Interval.Seconds()
	if elapsed <= 0 {
		elapsed = adaptive.DefaultInterval.Seconds()
	}

	// The capacity: the most the real service completed per second over
	// the window (capacityMean intervals averaged, which halves a count's
	// noise and spreads a burst), successes only: a request that failed
	// fast (a refused connection, a 503 of the service's own queue) is no
	// work done.
	sized := m.capacity > 0 && !math.IsInf(m.capacity, 1) // the interval's servers were C·s
	if x := float64(s.Successes) / elapsed; x > 0 {
		m.last[m.xAt%capacityMean] = x
		var sum float64
		n := min(m.xAt+1, capacityMean)
		for _, v := range m.last[:n] {
			sum += v
		}
		m.xs[m.xAt%capacityWindow] = sum / float64(n)
		m.xAt++
		m.capacity = 0
		for _, v := range m.xs {
			m.capacity = max(m.capacity, v)
		}
	}
	// The law's latency: the interval's clean requests' once the service
	// is measured (before, they are the few the provisional median is
	// robust to); else the service's own and the mean wait for one of its
	// W of the interval's admissions.
	m.measureService()
	var lat adaptive.Latency
	if m.clean != nil && m.clean.Count() >= minClean && m.serviceAt != 0 {
		lat = latencyOf(m.clean)
	} else if m.service.Mean > 0 && m.starts > 0 && sized {
		w := time.Duration(m.startWait / m.starts)
		sv := m.service
		lat = adaptive.Latency{Min: sv.Min + w, Mean: sv.Mean + w, P50: sv.P50 + w, P90: sv.P90 + w,
			P95: sv.P95 + w, P99: sv.P99 + w, P999: sv.P999 + w}
	}

	drops := min(m.cleanDrops, m.done)
	s.InFlight = m.n
	s.InFlightStart = m.inflightStart
	s.MaxInFlight = max(m.peak, m.inflightStart)
	s.Successes, s.Drops = m.done-drops, drops
	s.Throughput = float64(m.done) / elapsed
	s.Queued = m.queued
	s.QueueLength = m.q
	s.QueueDrained = m.drained || m.q == 0
	s.QueueWaitMin, s.QueueWaitMax = m.waitMin, m.waitMax
	s.Latency = lat

	m.inflightStart = m.n
	m.done, m.queued, m.cleanDrops = 0, 0, 0
	m.peak, m.drained = m.n, m.q == 0
	m.waitMin, m.waitMax = 0, 0
	m.startWait, m.starts = 0, 0
	if m.clean != nil {
		m.clean.Reset()
	}
}

// measureService measures the service's own latency on the clean
// successes gathered, once there are minService of them: the lowest mean
// measured lately (a measure older than serviceWindow ticks is replaced
// whatever its figure), each measure on the next minService.
func (m *enforcement) measureService() {
	if m.sampled == nil || m.sampled.Count() < minService {
		return
	}
	if m.serviceAt == 0 || m.sampled.Mean() < m.service.Mean || m.ticks-m.serviceAt > serviceWindow {
		first := m.serviceAt == 0
		m.service, m.serviceAt = latencyOf(m.sampled), m.ticks
		if first {
			m.known()
		}
	}
	m.sampled.Reset()
}

// latencyOf is the latency distribution counted in h.
func latencyOf(h *hist.Histogram) adaptive.Latency {
	var q [5]time.Duration
	h.Quantiles([]float64{0.5, 0.9, 0.95, 0.99, 0.999}, q[:])
	return adaptive.Latency{Min: h.Min(), Mean: h.Mean(), P50: q[0], P90: q[1], P95: q[2], P99: q[3], P999: q[4]}
}

// waiting is the model's queue length at now (ns), with limit in force,
// for the read-outs.
func (m *enforcement) waiting(now int64, limit int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(now, limit)
	return m.q
}

// inService is the number of requests in the model's service at now (ns),
// with limit in force.
func (m *enforcement) inService(now int64, limit int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(now, limit)
	return m.n
}
