package load

import "time"

// event is one thing that happened to a request: a try came back (try),
// or the request is over (final). Both carry the arrival's intended
// offset, tenant and priority.
type event struct {
	final    bool
	intended time.Duration // the arrival's intended offset
	sentAt   time.Duration // try: when it went out
	latency  time.Duration // try: from sentAt; final: from intended
	kind     string
	status   int
	reason   string // a rejection's Sluice-Reason, else its status code
	sent     bool   // final: the first try went out
	tenant   int    // index into the mix, -1 for none
	priority int
	lag      time.Duration // final: how late the first try left its intended instant
}

// classAcc accumulates one tenant's or priority's figures.
type classAcc struct {
	Counts
	lat, rejects histogram
}

type secondAcc struct {
	Second
	lat histogram
}

// collector turns events into a Result. It is owned by one goroutine.
type collector struct {
	slo                 time.Duration
	sched               Schedule
	totals              Totals
	lat, rejects, lag   histogram
	seconds             []secondAcc
	tenants, priorities []classAcc
	phases              []classAcc
}

func newCollector(p Params) *collector {
	c := &collector{
		slo:     p.SLO,
		sched:   p.Schedule,
		lat:     newHistogram(3),
		rejects: newHistogram(3),
		lag:     newHistogram(3),
		totals:  Totals{ErrorsByKind: map[string]int64{}, RejectsByStatus: map[int]int64{}},
	}
	c.phases = make([]classAcc, len(p.Schedule))
	for i := range c.phases {
		c.phases[i].lat, c.phases[i].rejects = newHistogram(3), newHistogram(3)
	}
	c.tenants = newClasses(p.Tenants)
	c.priorities = newClasses(p.Priorities)
	return c
}

func newClasses(m Mix) []classAcc {
	out := make([]classAcc, len(m))
	for i := range out {
		out[i].lat, out[i].rejects = newHistogram(3), newHistogram(3)
	}
	return out
}

func (c *collector) second(at time.Duration) *secondAcc {
	i := int(max(at, 0) / time.Second)
	for len(c.seconds) <= i {
		t := len(c.seconds)
		c.seconds = append(c.seconds, secondAcc{
			Second: Second{T: t, Rate: c.sched.RateAt(time.Duration(t)*time.Second + time.Second/2)},
			lat:    newHistogram(2),
		})
	}
	return &c.seconds[i]
}

func (c *collector) add(e event) {
	if !e.final {
		c.totals.Attempts++
		c.second(e.sentAt).Attempts++
		if e.kind == KindRejected {
			c.totals.RejectedTries++
			c.rejects.record(e.latency)
			for _, a := range c.classesOf(e) {
				if a != nil {
					a.rejects.record(e.latency)
				}
			}
		}
		return
	}
	s := c.second(e.intended)
	lats := []histogram{c.lat, s.lat, {}, {}, {}}
	counts := []*Counts{&c.totals.Counts, nil, nil, nil}
	for i, a := range c.classesOf(e) {
		if a != nil {
			counts[1+i], lats[2+i] = &a.Counts, a.lat
		}
	}
	good := e.kind == KindOK && e.latency <= c.slo
	s.Offered++
	for _, n := range counts {
		if n == nil {
			continue
		}
		n.Offered++
		if e.sent {
			n.Sent++
		}
		switch e.kind {
		case KindOK:
			n.OK++
			if good {
				n.Good++
			}
		case KindRejected:
			n.Rejected++
		default:
			n.Errors++
		}
	}
	if e.sent {
		c.lag.record(e.lag)
	}
	switch e.kind {
	case KindOK:
		s.OK++
		if good {
			s.Good++
		}
		for _, h := range lats {
			if h.h != nil {
				h.record(e.latency)
			}
		}
	case KindRejected:
		s.Rejected++
		if s.Reasons == nil {
			s.Reasons = map[string]int64{}
		}
		s.Reasons[e.reason]++
		c.totals.RejectsByStatus[e.status]++
	default:
		s.Errors++
		c.totals.ErrorsByKind[e.kind]++
	}
}

// classesOf returns e's tenant, priority and phase, nil where it has none.
func (c *collector) classesOf(e event) [3]*classAcc {
	var out [3]*classAcc
	if e.tenant >= 0 {
		out[0] = &c.tenants[e.tenant]
	}
	if e.priority >= 0 {
		out[1] = &c.priorities[e.priority]
	}
	if i, _ := c.sched.PhaseAt(e.intended); i >= 0 {
		out[2] = &c.phases[i]
	}
	return out
}

// result returns the run's figures; dur is the schedule's length, which
// fixes the number of seconds reported.
func (c *collector) result(start time.Time, p Params) Result {
	n := int((p.Schedule.Duration() + time.Second - 1) / time.Second)
	if n > 0 {
		c.second(time.Duration(n-1) * time.Second)
	}
	r := Result{Start: start, Duration: p.Schedule.Duration(), SLO: c.slo, Totals: c.totals}
	r.Totals.Latency = c.lat.summary()
	r.Totals.RejectLatency = c.rejects.summary()
	r.DispatchLag = c.lag.summary()
	for _, s := range c.seconds {
		if s.OK > 0 {
			s.P50, s.P99 = s.lat.quantile(50), s.lat.quantile(99)
		}
		r.Seconds = append(r.Seconds, s.Second)
	}
	var begin time.Duration
	for i, ph := range p.Schedule {
		a := c.phases[i]
		r.Phases = append(r.Phases, PhaseResult{Label: ph.Label, Start: begin, For: ph.For, Counts: a.Counts,
			Latency: a.lat.summary(), RejectLatency: a.rejects.summary()})
		begin += ph.For
	}
	r.Tenants = classes(p.Tenants, c.tenants)
	r.Priorities = classes(p.Priorities, c.priorities)
	return r
}

func classes(m Mix, acc []classAcc) []Class {
	var out []Class
	for i, a := range acc {
		out = append(out, Class{Name: m[i].Name, Fraction: m.Fraction(i), Counts: a.Counts, Latency: a.lat.summary(),
			RejectLatency: a.rejects.summary()})
	}
	return out
}
