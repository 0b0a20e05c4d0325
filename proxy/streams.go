package proxy

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/gate"
)

// Streams (see gate.Pass.Stream): a WebSocket upgrade, a text/event-stream
// response and a gRPC call are admitted as any request, and become streams
// when their first response byte is to be sent — the 101, the head of an
// event stream, a gRPC call's response headers (a trailers-only gRPC
// response ends at once and is no stream) — holding a stream slot of their
// group instead of a concurrency slot, the time to that byte their latency.
// A stream beyond its group's bound is refused then: the upstream's answer is
// dropped and the client gets the gate's rejection (503, reason streams;
// UNAVAILABLE for gRPC). The proxy keeps the open streams in a set, so that a
// shutdown can close them with their protocol's own close (CloseStreams).

// streamSet is the streams open through a proxy. Adding and removing take a
// lock of one of its shards, never a lock shared by every stream.
type streamSet struct {
	shards [streamShards]struct {
		mu sync.Mutex
		m  map[*liveStream]struct{}
		_  [40]byte // keep neighbouring shards' mutexes off one cache line
	}
	next atomic.Uint32 // round-robin shard for the next stream
	open atomic.Int64
}

const streamShards = 16

// liveStream is one open stream: how to cut it, and its gate claim.
type liveStream struct {
	shard uint32
	st    gate.Stream
	// cut ends the stream with its protocol's close (WebSocket close 1001,
	// gRPC status UNAVAILABLE after the connection's GOAWAY, the end of an
	// event stream). It is called at most once, from any goroutine, and must
	// not wait for the stream to end.
	cut  func()
	once sync.Once
	// gone is set once the stream was cut by CloseStreams.
	gone atomic.Bool
}

// add records a stream open with claim st and cut as its close.
func (s *streamSet) add(st gate.Stream, cut func()) *liveStream {
	ls := &liveStream{shard: s.next.Add(1) % streamShards, st: st, cut: cut}
	sh := &s.shards[ls.shard]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[*liveStream]struct{})
	}
	sh.m[ls] = struct{}{}
	sh.mu.Unlock()
	s.open.Add(1)
	return ls
}

// remove forgets a stream that ended and releases its stream slot.
func (s *streamSet) remove(ls *liveStream) {
	sh := &s.shards[ls.shard]
	sh.mu.Lock()
	delete(sh.m, ls)
	sh.mu.Unlock()
	ls.st.End()
	s.open.Add(-1)
}

// cutAll cuts every stream open and returns how many it cut.
func (s *streamSet) cutAll() int {
	var all []*liveStream
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for ls := range sh.m {
			all = append(all, ls)
		}
		sh.mu.Unlock()
	}
	for _, ls := range all {
		ls.once.Do(func() {
			ls.gone.Store(true)
			ls.cut()
		})
	}
	return len(all)
}

// OpenStreams returns how many streams are open through p now.
func (p *Proxy) OpenStreams() int { return int(p.streams.open.Load()) }

// CloseStreams closes every stream open through p with its protocol's own
// close: a WebSocket gets a close frame with status 1001 (going away), at a
// frame boundary, on both sides; a gRPC call ends with status UNAVAILABLE
// ("sluice is shutting down": its connection has had a GOAWAY from the
// server's Shutdown already) and its upstream stream is reset; an event
// stream's response ends (its client reconnects elsewhere). It returns how
// many it closed once they are all gone, or when ctx ends. A shutdown calls
// it when its grace period is over, before closing the connections.
func (p *Proxy) CloseStreams(ctx context.Context) int {
	n := p.streams.cutAll()
	if n == 0 {
		return 0
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for p.streams.open.Load() > 0 {
		select {
		case <-ctx.Done():
			return n
		case <-t.C:
		}
	}
	return n
}

// openStream makes x's request a stream at end, the instant its first
// response byte is to be sent: the breaker learns a success, the gate gets
// the time to that byte as the latency and a stream slot (gate.Pass.Stream).
// x is finished either way. On refusal it returns the gate's Rejection and
// ok = false: the caller drops the upstream's answer and sends it.
func (x *exchange) openStream(end time.Time) (gate.Stream, gate.Rejection, bool) {
	st, rej, ok := x.pass.ReserveStream()
	if !ok {
		x.done = true
		if x.p.breaker != nil {
			x.p.breaker.Record(x.ticket, gate.Success, end, x.cause) // the upstream answered
		}
		return st, rej, false
	}
	x.openReserved(end)
	return st, rej, true
}

// reserveStream takes the stream slot of x's request before it is
// forwarded, for a request that asks to become a stream (a WebSocket
// upgrade: gate.Pass.ReserveStream). Refused, x is finished, the upstream
// never asked: the caller sends the Rejection. The caller Ends the Stream
// unless openReserved makes the request that stream.
func (x *exchange) reserveStream() (gate.Stream, gate.Rejection, bool) {
	st, rej, ok := x.pass.ReserveStream()
	if !ok {
		x.done = true
		if x.p.breaker != nil {
			x.p.breaker.Record(x.ticket, gate.Ignored, time.Now(), x.cause) // nothing of the upstream learnt
		}
	}
	return st, rej, ok
}

// openReserved makes x's request, whose stream slot is reserved, that
// stream at end, the instant its first response byte is to be sent: the
// breaker learns a success, the gate gets the time to that byte as the
// latency (gate.Pass.StreamOpened). x is finished.
func (x *exchange) openReserved(end time.Time) {
	x.done = true
	if x.p.breaker != nil {
		x.p.breaker.Record(x.ticket, gate.Success, end, x.cause)
	}
	lat := end.Sub(x.start)
	x.pass.StreamOpened(gate.Success, lat)
	if x.p.observe != nil {
		x.p.observe(gate.Success, lat)
	}
}

// isEventStream reports whether a response's Content-Type is
// text/event-stream (server-sent events), parameters aside. It allocates
// nothing: every response is asked.
func isEventStream(h http.Header) bool {
	v := h["Content-Type"]
	if len(v) == 0 {
		return false
	}
	const mt = "text/event-stream"
	ct := strings.TrimLeft(v[0], " \t")
	if len(ct) < len(mt) || !strings.EqualFold(ct[:len(mt)], mt) {
		return false
	}
	rest := strings.TrimLeft(ct[len(mt):], " \t")
	return rest == "" || rest[0] == ';'
}

// grpcShutdownMessage is the grpc-message of a call CloseStreams ended.
var grpcShutdownMessage = one("sluice is shutting down")
