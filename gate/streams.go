package gate

import (
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// Stream is a long-lived stream's claim on a stream slot of its group
// (spec.Streams): a WebSocket, a text/event-stream response or a gRPC call
// that has sent its first response byte (and, for a gRPC call, outlived it:
// a unary call is a request). End it exactly once when the
// stream closes; the zero Stream holds nothing. As with a Pass, pass a
// *Stream around, not copies.
type Stream struct{ g *group }

// Stream turns the pass's request into a stream, at the moment its first
// response byte is to be sent (a WebSocket's 101, the head of a
// text/event-stream response, the response headers of a gRPC call that
// outlives them): the concurrency slot is released and the outcome recorded with
// latency, the time to that first byte, as DoneAfter does, and a stream
// slot of the group is taken instead, so that the stream's lifetime neither
// holds a slot nor reaches the law. When the group holds its maximum of
// streams (spec.Streams.Max) the stream is refused: the slot is released
// without a latency sample (the upstream's answer is not delivered), the
// refusal is counted, reason "streams", and its Rejection returned with
// ok = false. In shadow mode (the group's) a stream beyond the maximum is
// counted as a would-be rejection and opened anyway.
//
// Stream is ReserveStream and StreamOpened at once. After it the pass is
// finished: Done and DoneAfter are no-ops. The zero Pass returns the zero
// Stream and ok = true. Safe for concurrent use with other passes; it takes
// no lock.
func (p *Pass) Stream(o Outcome, latency time.Duration) (Stream, Rejection, bool) {
	s, rej, ok := p.ReserveStream()
	if ok {
		p.StreamOpened(o, latency)
	}
	return s, rej, ok
}

// ReserveStream takes a stream slot of the group for the pass's request
// before it is forwarded, for a request that asks to become a stream (a
// WebSocket upgrade), so that one beyond the group's maximum is refused
// before its upstream is asked, as Stream refuses it (the pass finished,
// reason "streams", ok = false). The request keeps its concurrency slot:
// StreamOpened turns it into the stream reserved at its first response
// byte; if it does not become one, End the reservation and finish the pass
// as any other. The reserved slot counts among the group's open streams.
// Safe for concurrent use with other passes; it takes no lock.
func (p *Pass) ReserveStream() (Stream, Rejection, bool) {
	gr := p.g
	if gr == nil {
		return Stream{}, Rejection{}, true
	}
	max := int64(gr.cfg.Load().Streams.Max)
	for {
		n := gr.c.streams.Load()
		if n >= max && max > 0 {
			if gr.mode.Load()&shadowGroup != 0 {
				gr.shadowReject(adaptive.RejectStreams, gr.prio, "")
				gr.c.streams.Add(1)
				break
			}
			p.release()
			return Stream{}, gr.reject(adaptive.RejectStreams, gr.prio, ""), false
		}
		if gr.c.streams.CompareAndSwap(n, n+1) {
			break
		}
	}
	return Stream{g: gr}, Rejection{}, true
}

// StreamOpened turns the pass's request, whose stream slot ReserveStream
// took, into that stream, at its first response byte: the concurrency slot
// released and the outcome recorded with latency, the time to that byte,
// as DoneAfter does; never refused. After it the pass is finished.
func (p *Pass) StreamOpened(o Outcome, latency time.Duration) {
	if gr := p.g; gr != nil {
		gr.c.streamsOpened.Add(1)
	}
	p.DoneAfter(o, latency)
}

// End releases the stream slot; later calls do nothing.
func (s *Stream) End() {
	if gr := s.g; gr != nil {
		s.g = nil
		gr.c.streams.Add(-1)
	}
}

// Group returns the name of the stream's group, "" for the zero Stream.
func (s *Stream) Group() string {
	if s.g == nil {
		return ""
	}
	return s.g.name
}

// StreamsStatus is a group's streams (GroupStatus.Streams).
type StreamsStatus struct {
	// Open is the streams open now; Max the group's bound on them.
	Open, Max int
	// Opened counts the streams opened since the group was first built
	// (reloads keep it); the refused are Rejected[adaptive.RejectStreams].
	Opened uint64
}

func (gr *group) streamsStatus() StreamsStatus {
	return StreamsStatus{Open: int(gr.c.streams.Load()), Max: gr.cfg.Load().Streams.Max,
		Opened: gr.c.streamsOpened.Load()}
}
