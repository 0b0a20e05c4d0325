package gate

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/limits"
	"github.com/sluicehq/sluice/probe"
)

// Run is the control loop: it calls Tick every Config.Interval (following
// reloads that change it) until ctx ends, then saves the state file one last
// time and returns that save's error (nil without a state file). Start it in
// one goroutine and stop it by cancelling ctx.
func (g *Gate) Run(ctx context.Context) error {
	iv := g.interval()
	tk := time.NewTicker(iv)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return g.SaveState()
		case <-tk.C:
			g.Tick(g.now())
			if n := g.interval(); n != iv {
				iv = n
				tk.Reset(iv)
			}
		}
	}
}

func (g *Gate) interval() time.Duration {
	if iv := g.table.Load().cfg.Interval; iv > 0 {
		return iv
	}
	return adaptive.DefaultInterval
}

// Tick ends a control interval at now: one resource sample, then for every
// group a probe snapshot, an adaptive.Sample, the law's decision applied and
// the queue bound and floor published; the state file is saved when
// Config.SaveInterval has passed since the last save. A now earlier than the
// previous tick's is taken as that one. Run calls Tick; tests call it directly
// with chosen instants.
func (g *Gate) Tick(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Before(g.lastTick) {
		now = g.lastTick
	}
	elapsed := max(now.Sub(g.lastTick), time.Millisecond)
	g.lastTick = now
	g.ticks++

	var res probe.Resources
	if g.resources != nil {
		res = g.resources.Sample(now)
	} else {
		res = unknownResources(now, "no resource sampler")
	}
	g.status.Store(&gateStatus{resources: res, ticks: g.ticks, at: now})

	t := g.table.Load()
	for _, r := range t.routes {
		g.tickGroup(r.g, now, elapsed, &res)
	}
	g.dropRetired()
	if g.statePath != "" && now.Sub(g.lastSave) >= t.cfg.SaveInterval {
		g.save(now)
	}
}

// addRejections adds to s the rejections of an interval, by reason, from
// the cumulative counts cur and prev: rate, concurrency stage, or shed.
func addRejections(s *adaptive.Sample, cur, prev *[adaptive.NumRejections]uint64) {
	for why := range cur {
		n := int(cur[why] - prev[why])
		switch r := adaptive.RejectReason(why); {
		case r == adaptive.RejectRate:
			s.RateRejected += n
		case stageReason(r):
			s.Rejected += n
		case r == adaptive.RejectPriority || r == adaptive.RejectCPU || r == adaptive.RejectMemory:
			s.Shed += n
		}
	}
}

// countSnap is a copy of a group's cumulative counters.
type countSnap struct {
	arrived, stage [adaptive.NumPriorities]uint64
	rejected       [adaptive.NumRejections]uint64
	queued         uint64
	canceled       uint64
	silenced       uint64
	shadow         [adaptive.NumRejections]uint64 // would-be rejections (shadow.go)
	shadowStage    [adaptive.NumPriorities]uint64
}

func (gr *group) counts() (s countSnap) {
	for i := range s.arrived {
		s.arrived[i] = gr.c.arrived[i].Load()
		s.stage[i] = gr.c.stage[i].Load()
	}
	for i := range s.rejected {
		s.rejected[i] = gr.c.rejected[i].Load()
	}
	s.queued = gr.c.queued.Load()
	s.canceled = gr.c.canceled.Load()
	s.silenced = gr.c.silenced.Load()
	gr.shadowCounts(&s)
	return s
}

// addDone counts the completions of a recorder snapshot.
func (gr *group) addDone(lat *probe.Snapshot) {
	gr.c.done[Success].Add(lat.Successes)
	gr.c.done[Dropped].Add(lat.Drops)
	gr.c.done[Ignored].Add(lat.Ignored)
}

// deriveArrivals adds to cur the arrivals of the group's own priority since
// prev, which the hot path does not count (see counters): every request that
// arrived has left the gate (completed: done; rejected; canceled) or is still
// in it (in flight or queued), so arrivals = left + inGate − inGate before,
// less the arrivals of the other priorities, which are counted.
func (gr *group) deriveArrivals(cur, prev *countSnap, completed uint64, inGate int) {
	left := int64(completed) + int64(cur.canceled-prev.canceled)
	for i := range cur.rejected {
		left += int64(cur.rejected[i] - prev.rejected[i])
	}
	n := left + int64(inGate-gr.lastInGate)
	for p := range cur.arrived {
		if adaptive.Priority(p) != gr.prio {
			n -= int64(cur.arrived[p] - prev.arrived[p])
		}
	}
	gr.lastInGate = inGate
	if n > 0 {
		gr.c.arrived[gr.prio].Add(uint64(n))
		cur.arrived[gr.prio] += uint64(n)
	}
}

// tickInfo is what one tick saw and decided for a group, for the read-outs.
type tickInfo struct {
	at        time.Time
	sample    adaptive.Sample
	latency   probe.Snapshot
	queueWait probe.Snapshot
	decision  adaptive.Decision
	floor     adaptive.Floor
	bound     adaptive.QueueBound
	unmoved   adaptive.Unmoved
}

// lastChange is the law's last change of a group's limit or rate.
type lastChange struct {
	at             time.Time
	from, to       int
	rateFrom, rate float64
	reason         string
}

// tickTime is the instant a group's recorders are rotated to at its n-th
// tick: they count ticks, one sub-window each, so a snapshot holds exactly
// what was recorded since the previous tick however irregular the ticks are
// (the middle of the sub-window keeps the ring's arithmetic away from its
// edges).
func (gr *group) tickTime(n int64) time.Time {
	return recorderEpoch.Add(time.Duration(n)*gr.recSub + gr.recSub/2)
}

// tickGroup runs one control interval of gr, in the order of adaptive/sim's
// gate model: law, queue wait, floor.
func (g *Gate) tickGroup(gr *group, now time.Time, elapsed time.Duration, res *probe.Resources) {
	if c := gr.c; now.Sub(c.decayedAt) >= rejectedKeysDecay {
		if !c.decayedAt.IsZero() {
			c.rejectedKeys.Decay()
			c.shadowKeys.Decay()
		}
		c.decayedAt = now
	}
	s, lat, qwait := g.sampleGroup(gr, now, elapsed, res)
	limit, inflight := s.Limit, s.InFlight

	// The law, then the queue bound, then the floor (adaptive/sim's order).
	rateFrom := lawRate(gr.pol.law)
	d := gr.pol.law.Update(s)
	if d.Limit >= 1 && d.Limit != limit {
		_ = gr.conc.SetLimit(min(d.Limit, limits.MaxConcurrency)) // in range: checked above
	}
	if d.Rate > 0 && gr.managedMax > 0 && d.Rate != rateFrom {
		_ = gr.rate.setRate(d.Rate) // a law's rate is positive and finite
	}
	qb := *gr.bound.Load()
	if gr.pol.qw != nil {
		qb = gr.pol.qw.Update(s)
		gr.publishBound(qb)
		var busy time.Duration
		if since := gr.busySince.Load(); since != 0 {
			busy = now.Sub(g.at(since))
		}
		if _, lifo := qb.Arrival(adaptive.Sheddable, busy); gr.conc.Order() != orderOf(lifo) {
			_ = gr.conc.SetOrder(orderOf(lifo))
		}
	}
	if lat.Successes > 0 {
		gr.silence.meanNs.Store(int64(lat.Mean))
	}
	// The interval between completions, which with a waiter's position
	// tells its wait (adaptive.Positions): unknown while nothing is in
	// flight, at least the interval while nothing completed.
	switch done := lat.Successes + lat.Drops; {
	case done > 0:
		gr.gapNs.Store(int64(elapsed) / int64(done))
	case inflight > 0:
		gr.gapNs.Store(int64(elapsed))
	default:
		gr.gapNs.Store(0)
	}
	// The guard sheds on no signal the law found its limit does not move.
	unmoved := adaptive.UnmovedOf(gr.pol.law)
	floor := gr.pol.guard.Update(unmoved.Mask(s)).Max(gr.pol.shed.Update(s))
	gr.floor.Store(floor.Pack())

	gr.lastInflight = inflight
	gr.addDone(&lat)
	g.reportTick(gr, now, limit, rateFrom, d, unmoved)
	gr.info.Store(&tickInfo{at: now, sample: s, latency: lat, queueWait: qwait, decision: d, floor: floor,
		bound: qb, unmoved: unmoved})

	if gr.keys != nil {
		gr.keys.sweep(int(gr.recTicks % keyShards))
	}
	if rl := gr.rate; rl != nil && rl.keyed != nil && now.Sub(gr.lastKeyed) >= gr.keyedEvery {
		rl.keyed.Sweep(now)
		gr.lastKeyed = now
	}
}

// sampleGroup is gr's adaptive.Sample of the interval of length elapsed
// that ends at now, with the latency and queue-wait snapshots it was made
// of. It moves gr's recorder ticks and its previous counts on.
func (g *Gate) sampleGroup(gr *group, now time.Time, elapsed time.Duration, res *probe.Resources) (adaptive.Sample, probe.Snapshot, probe.Snapshot) {
	gr.recTicks++
	rt := gr.tickTime(gr.recTicks)
	lat := gr.lat.Snapshot(rt)
	qwait := gr.qwait.Snapshot(rt)
	cur := gr.counts()
	prev := gr.prev
	inflight, queued := gr.inFlight(), gr.conc.Queued() // in shadow, those beyond the limit too
	gr.deriveArrivals(&cur, &prev, lat.Count, inflight+queued)
	gr.prev = cur
	limit := gr.conc.Limit()
	s := adaptive.Sample{
		Now:           now,
		Interval:      elapsed,
		Limit:         limit,
		InFlight:      inflight,
		InFlightStart: gr.lastInflight,
		MaxInFlight:   max(lat.MaxInflight, gr.lastInflight, inflight),
		Successes:     int(lat.Successes),
		Drops:         int(lat.Drops),
		Queued:        int(cur.queued - prev.queued),
		QueueLength:   queued,
		QueueCapacity: gr.conc.MaxQueue(),
		QueueDrained:  gr.drained.Swap(queued == 0) || queued == 0,
		Latency: adaptive.Latency{Min: lat.Min, Mean: lat.Mean, P50: lat.P50, P90: lat.P90,
			P95: lat.P95, P99: lat.P99, P999: lat.P999},
		MinRTT:      lat.MinRTT,
		Throughput:  float64(lat.Successes+lat.Drops) / elapsed.Seconds(),
		CPU:         res.CPU.Value,
		CPUKnown:    res.CPU.Known,
		Memory:      res.Memory.Value,
		MemoryKnown: res.Memory.Known,
	}
	if p := res.CPUPressure; p.Known {
		s.CPUPressure, s.CPUPressureKnown = p.Value, true
	}
	if qwait.Successes > 0 {
		s.QueueWaitMin, s.QueueWaitMax = qwait.Min, qwait.Max
	}
	addRejections(&s, &cur.rejected, &prev.rejected)
	s.Silenced = int(cur.silenced - prev.silenced) // counted in rejected[queue_full] too
	s.Rejected -= s.Silenced
	for p := range s.ByPriority {
		s.ByPriority[p] = adaptive.PriorityCount{
			Arrived:  int(cur.arrived[p] - prev.arrived[p]),
			Rejected: int(cur.stage[p] - prev.stage[p]),
		}
	}
	gr.shadowSample(&s, &cur, &prev, int64(now.Sub(g.base)))
	return s, lat, qwait
}

// reportTick records and reports what a tick of gr changed: the law's
// decision d (from limit and rate rateFrom) and the signals it found
// unmoved.
func (g *Gate) reportTick(gr *group, now time.Time, limit int, rateFrom float64, d adaptive.Decision, unmoved adaptive.Unmoved) {
	if d.Changed {
		ch := &lastChange{at: now, from: limit, to: d.Limit, rateFrom: rateFrom, rate: d.Rate, reason: d.Reason.String()}
		gr.change.Store(ch)
		if g.onChange != nil {
			g.onChange(Change{Group: gr.name, At: now, From: limit, To: d.Limit,
				RateFrom: rateFrom, Rate: d.Rate, Reason: ch.reason})
		}
	}
	if unmoved != gr.unmoved {
		if g.onUnmoved != nil {
			uc := UnmovedChange{Group: gr.name, At: now, Before: gr.unmoved, Now: unmoved}
			if unmoved&^gr.unmoved != 0 {
				uc.Reason = d.Reason.String()
			}
			g.onUnmoved(uc)
		}
		gr.unmoved = unmoved
	}
}

func orderOf(lifo bool) limits.Order {
	if lifo {
		return limits.LIFO
	}
	return limits.FIFO
}
