package sim

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/internal/hist"
)

// epoch is virtual time zero, as wall-clock time handed to the policy pieces.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// minRTTWindow is how many intervals the model probe's min RTT spans (30 s at
// 250 ms), like probe's long window.
const minRTTWindow = 120

type reqState uint8

const (
	stFree reqState = iota
	stPending
	stWaiting
	stBackendQueued
	stServing
	stReturning // served, its answer on its way to the proxy (Host)
	stFailing   // sent to a backend in an outage, about to fail
)

// request is one attempt of a client request.
type request struct {
	gen      uint32
	state    reqState
	prio     adaptive.Priority
	tenant   uint8
	attempt  uint8
	gone     bool // its client gave up while the backend holds it
	first    int64
	arrive   int64
	admit    int64
	enq      int64
	deadline int64
	pos      int32 // waiting: how far back in the queue it may stand (0: any)
}

// interval accumulates what the gate and probe see in one control interval.
type interval struct {
	maxInflight, startInflight           int
	successes, drops                     int
	rejected, rateRejected, shed, queued int
	silenced                             int // refused to a silent service (adaptive.Silent)
	waitMin, waitMax                     int64
	waitSeen                             bool
	drained                              bool            // the queue was empty at some moment
	lat                                  *hist.Histogram // upstream latency of successes
	byPrio                               [adaptive.NumPriorities]adaptive.PriorityCount
	// for the report's series
	attempts, good, late, rejects int
}

// engine is one simulation run.
type engine struct {
	sc  *Scenario
	law adaptive.Law
	qw  *adaptive.QueueWait
	sh  *adaptive.PriorityShedder
	gd  *adaptive.ResourceGuard

	now       int64
	end       int64
	ev        eventHeap
	deadlines eventFIFO // client deadlines, in time order

	reqs []request
	free []int32

	arr                      arrivals
	rngSvc, rngMix, rngRetry *rand.Rand
	prioCum                  [adaptive.NumPriorities]float64
	tenantCum                []float64

	g  gateState
	b  backendState
	h  hostState
	iv interval

	minRTT   [minRTTWindow]int64
	minRTTAt int

	rec recorder

	overshoots int // admissions beyond the limit: the gate model's invariant is 0

	tracksMemory bool // the scenario models memory: track its peak event by event

	// psi is the model's PSI avg10: stall time accumulated since the last
	// update, the average, and when it is next updated.
	psi struct {
		acc, avg float64
		next     int64
	}
}

// Run simulates sc with law in charge of the limit and returns the report. The
// run is deterministic: the same scenario, seed and law give the same report.
// The law is used as is (Run calls its Update every interval), so pass a fresh
// one per run.
func Run(sc Scenario, law adaptive.Law) (*Report, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	sc = sc.withDefaults()
	e, err := newEngine(&sc, law)
	if err != nil {
		return nil, err
	}
	e.run()
	return e.rec.report(e), nil
}

func newEngine(sc *Scenario, law adaptive.Law) (*engine, error) {
	qw, err := adaptive.NewQueueWait(adaptive.QueueWaitParams{
		Target: sc.Gate.QueueTarget, Interval: sc.Gate.QueueInterval, Order: sc.Gate.Order,
		Latency: sc.Targets.Latency, Quantile: sc.Targets.Quantile})
	if err != nil {
		return nil, err
	}
	gd, err := adaptive.NewResourceGuard(sc.Gate.Guard)
	if err != nil {
		return nil, err
	}
	e := &engine{sc: sc, law: law, gd: gd}
	if !sc.Gate.NoCoDel {
		e.qw = qw
	}
	if !sc.Gate.NoShedder {
		if e.sh, err = adaptive.NewPriorityShedder(adaptive.ShedderParams{}); err != nil {
			return nil, err
		}
	}
	seed := sc.Seed
	e.arr = arrivals{segs: sc.Load, end: sc.Duration, capacity: sc.Service.Capacity(),
		rng: rand.New(rand.NewPCG(seed, 1))}
	e.rngSvc = rand.New(rand.NewPCG(seed, 2))
	e.rngMix = rand.New(rand.NewPCG(seed, 3))
	e.rngRetry = rand.New(rand.NewPCG(seed, 4))
	sum := 0.0
	for p, w := range sc.Priorities {
		sum += w
		e.prioCum[p] = sum
	}
	for p := range e.prioCum {
		e.prioCum[p] /= sum
	}
	sum = 0
	for _, w := range sc.Tenants {
		sum += w
		e.tenantCum = append(e.tenantCum, sum)
	}
	for i := range e.tenantCum {
		e.tenantCum[i] /= sum
	}
	e.end = int64(sc.Duration)
	e.g = gateState{limit: law.Limit(), maxQueue: max(sc.Gate.Queue, 0), fair: sc.Gate.Fair,
		held: make([]int, len(sc.Tenants)), use: make([]int, len(sc.Tenants)),
		breaker: breaker{on: sc.Gate.Breaker}}
	qb := adaptive.QueueBound{Wait: sc.Gate.MaxWait, Critical: sc.Gate.MaxWait, LIFO: sc.Gate.Order == adaptive.OrderLIFO}
	if e.qw != nil {
		qb = qw.Bound()
	}
	e.setBound(qb)
	if sc.Gate.Rate > 0 {
		e.g.rateOn = true
		if e.g.bucket, err = newTokenBucket(sc.Gate.Rate, sc.Gate.Burst); err != nil {
			return nil, err
		}
	}
	e.b.slow = 1
	e.b.workers = sc.Service.Workers
	e.b.cpu.hogW = 1
	e.b.cpu.rate, e.b.cpu.hogRate = 1, 1
	e.h.stretch = 1
	e.psi.next = psiPeriod
	e.tracksMemory = sc.Service.MemBase != 0 || sc.Service.MemPerRequest != 0 || sc.Service.MemPerQueued != 0
	e.iv.lat = new(hist.Histogram)
	e.rec.init(e)
	return e, nil
}

// latencyQuantiles are the quantiles of a Sample's Latency, ascending, as
// probe's Snapshot carries them.
var latencyQuantiles = [...]float64{0.5, 0.9, 0.95, 0.99, 0.999}

// noEvent is a time after every event.
const noEvent = int64(1<<63 - 1)

func (e *engine) run() {
	nextArrival := noEvent
	if t, ok := e.arr.next(0); ok {
		nextArrival = int64(t)
	}
	nextTick := int64(e.sc.Interval)
	for i, s := range e.sc.Slowdowns {
		e.ev.push(int64(s.At), evSlowdown, int32(i), 0)
	}
	for i, w := range e.sc.WorkerChanges {
		e.ev.push(int64(w.At), evWorkers, int32(i), 0)
	}
	for i, o := range e.sc.Outages {
		e.ev.push(int64(o.At), evOutageStart, int32(i), 0)
		e.ev.push(int64(o.At+o.For), evOutageEnd, int32(i), 0)
	}
	for i, h := range e.sc.Hogs {
		e.ev.push(int64(h.At), evHog, int32(i), 0)
	}
	for {
		// The next event is the earliest of the open-loop arrival, the control
		// tick, the oldest client deadline and the heap's top. Arrivals, ticks
		// and deadlines come in time order, so they stay out of the heap.
		at, src := nextArrival, 0
		if nextTick < at {
			at, src = nextTick, 1
		}
		if e.deadlines.len() > 0 && e.deadlines.peek().at < at {
			at, src = e.deadlines.peek().at, 2
		}
		if e.ev.len() > 0 && e.ev.ev[0].at < at {
			at, src = e.ev.ev[0].at, 3
		}
		if at > e.end {
			break
		}
		e.now = at
		switch src {
		case 0:
			e.newRequest()
			nextArrival = noEvent
			if t, ok := e.arr.next(time.Duration(e.now)); ok {
				nextArrival = int64(t)
			}
		case 1:
			e.tick()
			nextTick += int64(e.sc.Interval)
		case 2:
			ev := e.deadlines.pop()
			e.deadline(ev.id, ev.gen)
		case 3:
			ev := e.ev.pop()
			switch ev.kind {
			case evRetry:
				e.attempt(ev.id)
			case evQueueTimeout:
				e.queueTimeout(ev.id, ev.gen)
			case evDone:
				e.done(ev.id, ev.gen)
			case evSlowdown:
				e.b.slow = e.sc.Slowdowns[ev.id].Factor
			case evWorkers:
				e.setWorkers(e.sc.WorkerChanges[ev.id].Workers)
			case evOutageStart:
				e.outage(true)
			case evOutageEnd:
				e.outage(false)
			case evHog:
				e.setHog(e.sc.Hogs[ev.id])
			case evFail:
				e.fail(ev.id, ev.gen)
			case evCPUDone:
				e.cpuDone(ev.gen)
			case evReturn:
				e.returned(ev.id, ev.gen)
			}
		}
		if e.tracksMemory {
			e.rec.observeMemory(e)
		}
	}
}

// alloc returns a free request slot.
func (e *engine) alloc() int32 {
	if n := len(e.free); n > 0 {
		id := e.free[n-1]
		e.free = e.free[:n-1]
		return id
	}
	e.reqs = append(e.reqs, request{})
	return int32(len(e.reqs) - 1)
}

// freeReq returns slot id; its generation moves on so stale events are ignored.
func (e *engine) freeReq(id int32) {
	r := &e.reqs[id]
	r.state = stFree
	r.gen++
	e.free = append(e.free, id)
}

// newRequest starts a new client request from the open-loop process.
func (e *engine) newRequest() {
	id := e.alloc()
	r := &e.reqs[id]
	gen := r.gen
	*r = request{gen: gen, first: e.now}
	u := e.rngMix.Float64()
	for p, c := range e.prioCum {
		if u < c {
			r.prio = adaptive.Priority(p)
			break
		}
	}
	u = e.rngMix.Float64()
	for t, c := range e.tenantCum {
		if u < c {
			r.tenant = uint8(t)
			break
		}
	}
	e.rec.newRequest(e.now)
	e.attempt(id)
}

// attempt sends request id's current attempt to the gate.
func (e *engine) attempt(id int32) {
	r := &e.reqs[id]
	r.state = stPending
	r.arrive = e.now
	r.deadline = e.now + int64(e.sc.Clients.Timeout)
	r.gone = false
	e.deadlines.push(event{at: r.deadline, id: id, gen: r.gen, kind: evDeadline})
	e.iv.attempts++
	e.rec.attempt(e.now)
	if e.sc.Host.On() {
		e.hostCharge(e.sc.Host.Send)
	}
	e.enter(id)
}

// reject turns request id away and lets its client retry or give up.
func (e *engine) reject(id int32, why adaptive.RejectReason) {
	r := &e.reqs[id]
	switch why {
	case adaptive.RejectRate:
		e.iv.rateRejected++
	case adaptive.RejectCPU, adaptive.RejectMemory, adaptive.RejectPriority:
		e.iv.shed++
	case adaptive.RejectCircuitOpen: // the proxy's: the gate's sample does not see it
	case adaptive.RejectFairShare: // the key's own excess: not a level suffering (adaptive.PriorityCount)
		e.iv.rejected++
	default:
		e.iv.rejected++
		e.iv.byPrio[r.prio].Rejected++
	}
	e.refuse(id, why)
}

// refuse answers request id's attempt with a refusal for why, counted in
// the interval's sample by the caller (reject, or Silenced), and lets its
// client retry.
func (e *engine) refuse(id int32, why adaptive.RejectReason) {
	r := &e.reqs[id]
	if e.sc.Host.On() {
		e.hostCharge(e.sc.Host.Refuse)
	}
	e.iv.rejects++
	e.rec.reject(e.now, r.arrive, why)
	e.retryOrFail(id, true)
	e.freeReq(id)
}

// succeed records request id's success; the caller frees its slot.
func (e *engine) succeed(id int32) {
	r := &e.reqs[id]
	up := e.now - r.admit
	e2e := e.now - r.arrive
	if e.sc.Host.On() {
		e2e += e.clientTrip()
	}
	e.iv.successes++
	e.iv.lat.Add(time.Duration(up))
	e.g.breaker.result(e.now, true)
	good := e2e <= int64(e.sc.SLO)
	if good {
		e.iv.good++
	} else {
		e.iv.late++
	}
	e.rec.success(e.now, r, e2e, good)
	e.release(id)
}

// drop records that request id's client gave up on it, frees its gate slot and
// lets the client retry. The backend may still hold the request.
func (e *engine) drop(id int32) {
	r := &e.reqs[id]
	e.iv.drops++
	e.iv.late++
	e.rec.drop(e.now, r.arrive, e.now-r.arrive)
	e.release(id)
	e.retryOrFail(id, false)
}

// retryOrFail schedules the client's next attempt of request id in a new slot,
// or records the request as failed when it has no retries left.
func (e *engine) retryOrFail(id int32, rejected bool) {
	r := e.reqs[id]
	c := &e.sc.Clients
	if int(r.attempt) >= c.Retries {
		e.rec.fail(e.now, &r)
		return
	}
	delay := float64(c.Backoff) * (0.5 + e.rngRetry.Float64())
	switch {
	case c.AtOnce:
		delay = 0
	case rejected && c.RetryAfter:
		delay = float64(time.Second) * (1 + e.rngRetry.Float64())
	}
	nid := e.alloc()
	n := &e.reqs[nid]
	gen := n.gen
	*n = request{gen: gen, state: stPending, prio: r.prio, tenant: r.tenant, attempt: r.attempt + 1, first: r.first}
	e.ev.push(e.now+int64(delay), evRetry, nid, gen)
}

// tick ends a control interval: the gate builds the sample and runs the policy.
func (e *engine) tick() {
	iv := &e.iv
	sec := e.sc.Interval.Seconds()
	if e.sc.Host.On() {
		e.hostTick()
	}
	e.busyAdd(0)
	cpu := e.sc.Service.CPUBase + e.sc.Service.CPUPerWorker*e.b.busyArea/float64(e.sc.Interval)
	e.b.busyArea = 0
	pressure, pressureKnown := 0.0, false
	if e.sc.Service.Cores > 0 {
		cpu, pressure = e.cpuSample()
		pressureKnown = true
	}
	mem := e.memory()

	e.minRTT[e.minRTTAt%minRTTWindow] = int64(iv.lat.Min())
	e.minRTTAt++
	var minRTT int64
	for _, v := range e.minRTT {
		if v > 0 && (minRTT == 0 || v < minRTT) {
			minRTT = v
		}
	}
	s := adaptive.Sample{
		Now:           epoch.Add(time.Duration(e.now)),
		Interval:      e.sc.Interval,
		Limit:         e.g.limit,
		InFlight:      e.g.inflight,
		InFlightStart: iv.startInflight,
		MaxInFlight:   iv.maxInflight,
		Successes:     iv.successes,
		Drops:         iv.drops,
		Rejected:      iv.rejected,
		RateRejected:  iv.rateRejected,
		Silenced:      iv.silenced,
		Shed:          iv.shed,
		Queued:        iv.queued,
		QueueLength:   e.g.waiting,
		QueueCapacity: e.g.maxQueue,
		QueueDrained:  iv.drained || e.g.waiting == 0,
		Latency: adaptive.Latency{
			Min:  iv.lat.Min(),
			Mean: iv.lat.Mean(),
		},
		MinRTT:           time.Duration(minRTT),
		Throughput:       float64(iv.successes+iv.drops) / sec,
		CPU:              min(max(cpu, 0), 1),
		CPUKnown:         true,
		CPUPressure:      pressure,
		CPUPressureKnown: pressureKnown,
		Memory:           mem,
		MemoryKnown:      true,
		ByPriority:       iv.byPrio,
	}
	var q [len(latencyQuantiles)]time.Duration
	iv.lat.Quantiles(latencyQuantiles[:], q[:])
	s.Latency.P50, s.Latency.P90, s.Latency.P95, s.Latency.P99, s.Latency.P999 = q[0], q[1], q[2], q[3], q[4]
	if iv.waitSeen {
		s.QueueWaitMin, s.QueueWaitMax = time.Duration(iv.waitMin), time.Duration(iv.waitMax)
	}

	d := e.law.Update(s)
	e.setLimit(d.Limit)
	if d.Rate > 0 && e.g.rateOn && d.Rate != e.g.bucket.rate {
		e.g.bucket.setRate(d.Rate)
	}
	if e.qw != nil {
		e.setBound(e.qw.Update(s))
		var busy int64
		if e.g.busy {
			busy = e.now - e.g.busySince
		}
		_, e.g.lifo = e.g.bound.Arrival(adaptive.Sheddable, time.Duration(busy))
	}
	if iv.successes > 0 {
		e.g.meanNs = int64(iv.lat.Mean())
	}
	switch done := iv.successes + iv.drops; {
	case done > 0:
		e.g.gap = int64(e.sc.Interval) / int64(done)
	case e.g.inflight > 0:
		e.g.gap = int64(e.sc.Interval)
	default:
		e.g.gap = 0
	}
	floor := e.gd.Update(adaptive.UnmovedOf(e.law).Mask(s))
	if e.sh != nil {
		floor = floor.Max(e.sh.Update(s))
	}
	e.g.floor = floor

	e.rec.point(e, &s, d)

	lat := iv.lat
	lat.Reset()
	*iv = interval{lat: lat, maxInflight: e.g.inflight, startInflight: e.g.inflight, drained: e.g.waiting == 0}
}

// setBound publishes the queue's bound, capped by Gate.MaxWait as the gate
// caps it by queue.max_wait.
func (e *engine) setBound(qb adaptive.QueueBound) {
	if mw := e.sc.Gate.MaxWait; mw > 0 {
		qb.Wait, qb.Critical, qb.StandingWait = min(qb.Wait, mw), min(qb.Critical, mw), min(qb.StandingWait, mw)
	}
	e.g.bound, e.g.lifo = qb, qb.LIFO
}

// psiPeriod and psiDecay are the kernel's: PSI averages are updated every 2 s,
// avg10 decaying by e^(−2/10) each time.
const psiPeriod = int64(2 * time.Second)

var psiDecay = math.Exp(-2.0 / 10)

// cpuSample ends the interval of the CPU model: the CPU utilisation the probe
// would read (Service.CPUFrom) and the CPU pressure (Service.PSI).
func (e *engine) cpuSample() (cpu, pressure float64) {
	e.cpuAdvance()
	c := &e.b.cpu
	s := &e.sc.Service
	span := float64(e.sc.Interval) * s.Cores
	cpu = s.CPUBase + c.all/span
	if s.CPUFrom == CPUFromService {
		cpu = s.CPUBase + c.own/span
	}
	share := c.stall / float64(e.sc.Interval)
	e.psi.acc += c.stall
	c.own, c.all, c.stall = 0, 0, 0
	if s.PSI == PSIInterval {
		return cpu, share
	}
	for e.now >= e.psi.next {
		e.psi.avg = e.psi.avg*psiDecay + e.psi.acc/float64(psiPeriod)*(1-psiDecay)
		e.psi.acc = 0
		e.psi.next += psiPeriod
	}
	return cpu, min(e.psi.avg, 1)
}

// memory returns the model's current memory utilisation.
func (e *engine) memory() float64 {
	s := &e.sc.Service
	inBackend := e.b.busy + e.b.queued
	return s.MemBase + s.MemPerRequest*float64(inBackend) + s.MemPerQueued*float64(e.g.waiting)
}
