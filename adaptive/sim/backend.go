package sim

import (
	"math"
	"time"
)

// The model backend: Workers workers fed from an unbounded FIFO queue. A request
// is served for a time drawn from the service distribution, times the current
// slowdown factor, times (1 + Contention × busy/Workers). A client that gives up
// (its deadline passes) releases its gate slot at once, as a proxy cancelling the
// upstream call does, but the backend still serves the request unless Cancel is
// set and no worker has taken it yet: wasted work, the seed of metastable
// failures.
//
// With Service.Cores the service time is CPU work instead, done at the rate the
// cores leave each busy worker (processor sharing, see cpuShares): a virtual
// clock v counts the CPU time each busy worker has had, a request ends when v
// reaches its start plus its work, and one completion event, for the earliest
// end, is rescheduled whenever the rate changes.
//
// With Scenario.Stall every worker pauses now and then: a request's service
// ends as pause.Periodic.End says, as in the lab's backend.
//
// During an outage the backend fails every request: those in it at the start,
// and each new one after failDelay.

type backendState struct {
	busy     int
	workers  int // current worker count
	queue    deque
	queued   int     // live requests in the backend queue
	slow     float64 // current slowdown factor
	busyArea float64 // ∫ busy dt over the current interval, worker·ns
	changed  int64   // last time busy changed
	down     bool    // in an outage

	// Processor sharing (Service.Cores > 0).
	cpu struct {
		v       float64 // virtual time: CPU ns each busy worker has received
		rate    float64 // CPU ns per ns each busy worker gets now
		hogRate float64 // the same for each hog thread
		at      int64   // when v and the areas were last advanced
		ends    endHeap // virtual end of each request in service
		token   uint32  // the valid evCPUDone event's
		hog     int     // hog threads
		hogW    float64 // their CFS weight relative to nice 0
		// Areas over the current interval, in ns: CPU used by the workers and
		// by everything (hog included), and time some worker waited for a core.
		own, all, stall float64
	}
}

// failDelay is how long a request sent to a backend in an outage takes to fail
// (a refused connection).
const failDelay = 1_000_000

// backendEnter hands admitted request id to the backend.
func (e *engine) backendEnter(id int32) {
	r := &e.reqs[id]
	b := &e.b
	if b.down {
		r.state = stFailing
		e.ev.push(e.now+failDelay, evFail, id, r.gen)
		return
	}
	if b.busy < b.workers {
		e.start(id)
		return
	}
	r.state = stBackendQueued
	b.queue.pushBack(ref{id, r.gen})
	b.queued++
}

// start puts request id on a worker.
func (e *engine) start(id int32) {
	r := &e.reqs[id]
	s := &e.sc.Service
	r.state = stServing
	svc := s.Dist.draw(e.rngSvc) * e.b.slow * (1 + s.Contention*float64(e.b.busy)/float64(e.b.workers))
	if s.Cores > 0 {
		e.cpuAdvance()
		e.b.cpu.ends.push(end{v: e.b.cpu.v + svc, id: id, gen: r.gen})
		e.busyAdd(+1)
		e.cpuReschedule()
		return
	}
	e.busyAdd(+1)
	end := e.now + int64(svc)
	if st := e.sc.Stall; st.On() {
		end = int64(st.End(time.Duration(e.now), time.Duration(svc)))
	}
	e.ev.push(end, evDone, id, r.gen)
}

func (e *engine) busyAdd(d int) {
	b := &e.b
	b.busyArea += float64(b.busy) * float64(e.now-b.changed)
	b.changed = e.now
	b.busy += d
}

// done fires when a worker finishes request id.
func (e *engine) done(id int32, gen uint32) {
	r := &e.reqs[id]
	if r.gen != gen || r.state != stServing {
		return
	}
	e.busyAdd(-1)
	e.startQueued()
	r = &e.reqs[id]
	if e.sc.Host.On() && !r.gone {
		r.state = stReturning
		e.ev.push(e.now+e.tripBack(), evReturn, id, r.gen)
		return
	}
	if !r.gone {
		e.succeed(id)
	}
	e.freeReq(id)
}

// returned fires when served request id's answer reaches the proxy
// (Host): a success unless its client gave up meanwhile.
func (e *engine) returned(id int32, gen uint32) {
	r := &e.reqs[id]
	if r.gen != gen || r.state != stReturning {
		return
	}
	if !r.gone {
		e.succeed(id)
	}
	e.freeReq(id)
}

// startQueued puts queued requests on free workers.
func (e *engine) startQueued() {
	b := &e.b
	for b.queued > 0 && b.busy < b.workers {
		x := b.queue.popFront()
		if rr := &e.reqs[x.id]; rr.gen == x.gen && rr.state == stBackendQueued {
			b.queued--
			e.start(x.id)
		}
	}
}

// deadline fires when request id's client gives up while the backend holds it.
func (e *engine) deadline(id int32, gen uint32) {
	r := &e.reqs[id]
	if r.gen != gen || r.gone || (r.state != stServing && r.state != stBackendQueued && r.state != stReturning) {
		return
	}
	r.gone = true
	e.drop(id)
	r = &e.reqs[id] // drop may have grown the request slice
	if e.sc.Service.Cancel && r.state == stBackendQueued {
		e.b.queued--
		e.freeReq(id)
	}
}

// setWorkers changes the worker count; requests in service beyond it finish.
func (e *engine) setWorkers(n int) {
	e.b.workers = n
	e.startQueued()
}

// outage starts (down) or ends an outage. At the start every request in the
// backend fails: its client sees an error at once (a drop), unless it had
// already given up.
func (e *engine) outage(down bool) {
	b := &e.b
	b.down = down
	if !down {
		return
	}
	if e.sc.Service.Cores > 0 {
		e.cpuAdvance()
	}
	for id := range e.reqs {
		r := &e.reqs[id]
		if r.state != stServing && r.state != stBackendQueued {
			continue
		}
		if !r.gone {
			e.g.breaker.result(e.now, false)
			e.drop(int32(id))
		}
		e.freeReq(int32(id))
	}
	e.busyAdd(-b.busy)
	b.queue = deque{}
	b.queued = 0
	b.cpu.ends = b.cpu.ends[:0]
	if e.sc.Service.Cores > 0 {
		e.cpuReschedule()
	}
}

// fail fires when request id, sent to a backend in an outage, fails.
func (e *engine) fail(id int32, gen uint32) {
	r := &e.reqs[id]
	if r.gen != gen || r.state != stFailing {
		return
	}
	if !r.gone {
		e.g.breaker.result(e.now, false)
		e.drop(id)
	}
	e.freeReq(id)
}

// setHog changes the CPU hog beside the backend.
func (e *engine) setHog(h Hog) {
	e.cpuAdvance()
	e.b.cpu.hog = h.Threads
	e.b.cpu.hogW = math.Pow(1.25, -float64(h.Nice))
	e.cpuReschedule()
}

// cpuShares returns the CPU rate each of busy workers (weight 1) and each of
// hog threads (weight hogW) gets on cores by weighted fair sharing, each
// thread at most one core (water-filling).
func cpuShares(busy, hog int, hogW, cores float64) (own, other float64) {
	b, h := float64(busy), float64(hog)
	if b+h <= cores {
		return 1, 1
	}
	lambda := cores / (b + h*hogW)
	own, other = math.Min(1, lambda), math.Min(1, lambda*hogW)
	switch {
	case lambda > 1 && b > 0: // the workers are capped at a core each
		own, other = 1, math.Min(1, (cores-b)/h)
	case lambda*hogW > 1 && h > 0: // the hog is
		own, other = math.Min(1, (cores-h)/b), 1
	}
	return own, other
}

// cpuAdvance brings the virtual clock and the interval's CPU areas to now.
func (e *engine) cpuAdvance() {
	c := &e.b.cpu
	dt := float64(e.now - c.at)
	c.at = e.now
	if dt <= 0 {
		return
	}
	c.v += c.rate * dt
	b := float64(e.b.busy)
	c.own += b * c.rate * dt
	c.all += (b*c.rate + float64(c.hog)*c.hogRate) * dt
	if e.b.busy > 0 && c.rate < 1 {
		c.stall += dt
	}
}

// cpuReschedule recomputes the rates after a change of busy workers or hog and
// schedules the next completion.
func (e *engine) cpuReschedule() {
	c := &e.b.cpu
	c.rate, c.hogRate = cpuShares(e.b.busy, c.hog, c.hogW, e.sc.Service.Cores)
	c.token++
	for len(c.ends) > 0 {
		top := c.ends[0]
		if r := &e.reqs[top.id]; r.gen == top.gen && r.state == stServing {
			break
		}
		c.ends.pop() // freed by an outage
	}
	if len(c.ends) == 0 || c.rate <= 0 {
		return
	}
	// A completion past the run's end (a vanishing share of the cores) is
	// scheduled just after it, where it never fires.
	wait := math.Min(math.Max(0, c.ends[0].v-c.v)/c.rate, float64(e.end-e.now+1))
	e.ev.push(e.now+int64(math.Ceil(wait)), evCPUDone, 0, c.token)
}

// cpuDone fires when the earliest request in service may have ended.
func (e *engine) cpuDone(token uint32) {
	c := &e.b.cpu
	if token != c.token {
		return
	}
	e.cpuAdvance()
	for len(c.ends) > 0 && c.ends[0].v <= c.v+1 {
		x := c.ends.pop()
		e.done(x.id, x.gen)
	}
	e.cpuReschedule()
}

// end is a request's virtual end time under processor sharing.
type end struct {
	v   float64
	id  int32
	gen uint32
}

// endHeap is a min-heap of ends by v.
type endHeap []end

func (h *endHeap) push(x end) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].v <= a[i].v {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *endHeap) pop() end {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= last {
			break
		}
		m := l
		if r := l + 1; r < last && a[r].v < a[l].v {
			m = r
		}
		if a[i].v <= a[m].v {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
