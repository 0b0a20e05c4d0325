package sim

// eventKind says what an event does when it fires.
type eventKind uint8

const (
	evRetry        eventKind = iota // a client's retry of request id arrives
	evQueueTimeout                  // request id's wait in the gate queue ran out
	evDone                          // the backend finished request id
	evDeadline                      // request id's client deadline passed (from the deadline FIFO)
	evSlowdown                      // the backend's speed changes (scenario step id)
	evWorkers                       // the backend's worker count changes (step id)
	evOutageStart                   // an outage begins (step id)
	evOutageEnd                     // an outage ends (step id)
	evHog                           // the CPU hog changes (step id)
	evFail                          // request id, sent during an outage, fails
	evCPUDone                       // the earliest request in service may end (gen: token)
	evReturn                        // request id's answer reaches the proxy (Host)
)

// event is one scheduled happening in virtual time. gen guards against a request
// slot that was reused since the event was scheduled.
type event struct {
	at   int64 // virtual nanoseconds since the start
	seq  uint64
	id   int32
	gen  uint32
	kind eventKind
}

// before orders events by time, then by scheduling order (determinism).
func (e *event) before(o *event) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	return e.seq < o.seq
}

// eventHeap is a binary min-heap of events, written out (no container/heap) so
// pushing and popping never allocate once the slice has grown.
type eventHeap struct {
	ev  []event
	seq uint64
}

func (h *eventHeap) len() int { return len(h.ev) }

func (h *eventHeap) push(at int64, kind eventKind, id int32, gen uint32) {
	h.seq++
	h.ev = append(h.ev, event{at: at, seq: h.seq, id: id, gen: gen, kind: kind})
	i := len(h.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.ev[i].before(&h.ev[p]) {
			break
		}
		h.ev[i], h.ev[p] = h.ev[p], h.ev[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	top := h.ev[0]
	last := len(h.ev) - 1
	h.ev[0] = h.ev[last]
	h.ev = h.ev[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		m := l
		if r := l + 1; r < last && h.ev[r].before(&h.ev[l]) {
			m = r
		}
		if !h.ev[m].before(&h.ev[i]) {
			break
		}
		h.ev[i], h.ev[m] = h.ev[m], h.ev[i]
		i = m
	}
	return top
}

// eventFIFO holds events that are scheduled in time order (every client deadline
// is its attempt's arrival plus the same timeout), so a ring buffer replaces the
// heap for them: O(1) per event, and the heap stays small.
type eventFIFO struct {
	ev   []event
	head int
}

func (f *eventFIFO) len() int { return len(f.ev) - f.head }

func (f *eventFIFO) push(e event) {
	if f.head > 1024 && f.head*2 > len(f.ev) {
		n := copy(f.ev, f.ev[f.head:])
		f.ev, f.head = f.ev[:n], 0
	}
	f.ev = append(f.ev, e)
}

func (f *eventFIFO) peek() *event { return &f.ev[f.head] }

func (f *eventFIFO) pop() event {
	e := f.ev[f.head]
	f.head++
	return e
}
