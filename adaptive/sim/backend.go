package sim

// The model backend: Workers workers fed from an unbounded FIFO queue. A request
// is served for a time drawn from the service distribution, times the current
// slowdown factor, times (1 + Contention × busy/Workers). A client that gives up
// (its deadline passes) releases its gate slot at once, as a proxy cancelling the
// upstream call does, but the backend still serves the request unless Cancel is
// set and no worker has taken it yet: wasted work, the seed of metastable
// failures.

type backendState struct {
	busy     int
	queue    deque
	queued   int     // live requests in the backend queue
	slow     float64 // current slowdown factor
	busyArea float64 // ∫ busy dt over the current interval, worker·ns
	changed  int64   // last time busy changed
}

// backendEnter hands admitted request id to the backend.
func (e *engine) backendEnter(id int32) {
	r := &e.reqs[id]
	b := &e.b
	if b.busy < e.sc.Service.Workers {
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
	svc := s.Dist.draw(e.rngSvc) * e.b.slow * (1 + s.Contention*float64(e.b.busy)/float64(s.Workers))
	e.busyAdd(+1)
	e.ev.push(e.now+int64(svc), evDone, id, r.gen)
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
	b := &e.b
	for b.queued > 0 {
		x := b.queue.popFront()
		if rr := &e.reqs[x.id]; rr.gen == x.gen && rr.state == stBackendQueued {
			b.queued--
			e.start(x.id)
			break
		}
	}
	r = &e.reqs[id]
	if !r.gone {
		e.succeed(id)
	}
	e.freeReq(id)
}

// deadline fires when request id's client gives up while the backend holds it.
func (e *engine) deadline(id int32, gen uint32) {
	r := &e.reqs[id]
	if r.gen != gen || r.gone || (r.state != stServing && r.state != stBackendQueued) {
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
