package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/gate"
)

// Streams (see gate.Pass.Stream): a WebSocket upgrade, a text/event-stream
// response and a long-lived gRPC call are admitted as any request, and
// become streams at their first response byte — the 101, the head of an
// event stream, a gRPC call's response headers — holding a stream slot of
// their group instead of a concurrency slot, the time to that byte their
// latency. A WebSocket upgrade takes its stream slot before it is forwarded,
// so that one beyond its group's bound is refused before its upstream is
// asked; an event stream beyond it is refused at its head, the upstream's
// answer dropped (503, reason streams). A gRPC call is told a stream by its
// life (see grpcCall): one that ends within grpcStreamAfter of its response
// headers, as a unary call does, stays a request; one that outlives that
// becomes a stream then, as of its headers, or, beyond the bound, ends with
// UNAVAILABLE (reason streams) in its trailers. The proxy keeps the open
// streams in a set, so that a shutdown can close them with their protocol's
// own close (CloseStreams).

// grpcStreamAfter is how long a gRPC call may outlive its response headers
// and still be a request. On the wire nothing tells a unary call from a
// streaming one (the method's descriptor, which only its two ends have,
// does): both are one HTTP/2 stream, headers, messages, trailers. A unary
// call's server sends its headers, its one message and its status together,
// once the handler has returned, so its trailers follow its headers at once
// (a trailers-only answer carries no headers at all); a call still open
// this long after its headers is waiting for messages that have yet to be
// made, which is a stream's life. A variable for tests only.
var grpcStreamAfter = 100 * time.Millisecond

// grpcCall is a gRPC call between its response headers and its end, which
// becomes a stream (x.openStream, as of its headers) if it lasts
// grpcStreamAfter. Its state moves once from callRequest, under mu: to
// callStream or callRefused by its timer, or to callEnded by end.
type grpcCall struct {
	mu      sync.Mutex
	state   uint8
	p       *Proxy
	x       *exchange
	headers time.Time
	body    io.Closer // the upstream's response: closed, its stream is reset
	abandon *h2Abandon
	timer   *time.Timer
	ls      *liveStream    // callStream
	rej     gate.Rejection // callRefused
}

const (
	callRequest = iota // not yet decided: a request
	callEnded          // ended within grpcStreamAfter: a request
	callStream         // a stream, ls
	callRefused        // beyond its group's streams bound, rej; body closed
)

// watchCall starts the watch of a gRPC call whose response headers arrived
// at headers; ab is its exchange's answer to its client going away, which a
// stream's is not. The caller must end it. x is the timer's to touch until then.
func (p *Proxy) watchCall(x *exchange, body io.Closer, headers time.Time, ab *h2Abandon) *grpcCall {
	c := &grpcCall{p: p, x: x, headers: headers, body: body, abandon: ab}
	c.timer = time.AfterFunc(grpcStreamAfter, c.promote)
	return c
}

// promote makes the call a stream, or refuses it and resets its upstream.
func (c *grpcCall) promote() {
	c.mu.Lock()
	if c.state != callRequest {
		c.mu.Unlock()
		return
	}
	st, rej, ok := c.x.openStream(c.headers)
	if ok {
		c.state = callStream
		body := c.body
		c.ls = c.p.streams.add(st, func() { _ = body.Close() })
		c.mu.Unlock()
		c.abandon.becomeStream()
		return
	}
	c.state, c.rej = callRefused, rej
	c.mu.Unlock()
	// The copy's read ends at once; Close itself waits for the upstream
	// stream's end, which may wait for the handler: not under mu, which
	// end takes.
	_ = c.body.Close()
}

// end is called once the call's response is over, and returns what the call
// was: callEnded (still a request: the caller finishes x), callStream (the
// caller removes ls) or callRefused.
func (c *grpcCall) end() uint8 {
	c.timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == callRequest {
		c.state = callEnded
	}
	return c.state
}

// refuseInTrailers sets in h, as trailers, the fields of the refusal rej
// that writeRejection sends in a trailers-only gRPC answer: for a call whose
// headers went out already. A grpc-web call carries its status in its body,
// which has gone: it gets only the fields.
func refuseInTrailers(h http.Header, g grpcKind, ct string, rej *gate.Rejection) {
	var f fieldsOnly
	f.h = make(http.Header)
	writeRejection(&f, g, ct, rej)
	for k, vv := range f.h {
		if k != "Content-Type" {
			h[http.TrailerPrefix+k] = vv
		}
	}
}

// fieldsOnly is a ResponseWriter that keeps the fields written to it.
type fieldsOnly struct{ h http.Header }

func (f *fieldsOnly) Header() http.Header         { return f.h }
func (f *fieldsOnly) Write(b []byte) (int, error) { return len(b), nil }
func (f *fieldsOnly) WriteHeader(int)             {}

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
