package proxy

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/proxy/h1"

	"github.com/sluicehq/sluice/gate"
)

// noResponseError is a failure before any byte of a response arrived.
type noResponseError struct{ err error }

func (e *noResponseError) Error() string { return e.err.Error() }
func (e *noResponseError) Unwrap() error { return e.err }

// writeFailedError is a failure to hand the request head to the kernel: the
// upstream cannot have acted on it.
type writeFailedError struct{ err error }

func (e *writeFailedError) Error() string { return e.err.Error() }
func (e *writeFailedError) Unwrap() error { return e.err }

// h1Exchange is one request's trip over an HTTP/1.1 connection to the upstream,
// through the named steps of forwardH1. (The exchange's bookkeeping, x, goes
// beside it as an argument: kept in here, escape analysis would move it to the
// heap with everything else this holds.)
type h1Exchange struct {
	p       *Proxy
	w       http.ResponseWriter
	r       *http.Request
	g       grpcKind
	ct      string
	upgrade string   // the upgrade offered (upgradeOffer); "" for none
	mode    bodyMode // how the request body travels
	cs      clientSide

	c      *h1.Conn
	h      h1.ResponseHead
	sender *bodySender // the request body's goroutine, if it streams
	watch  clientStop  // stops aborting c when the client goes away

	releasedAt time.Time // when c went back to the pool or was closed
}

// forwardH1 sends r over an HTTP/1.1 connection from the pool and copies the
// response back. It finishes x. It returns true when the response was cut short
// and must be aborted.
func (p *Proxy) forwardH1(w http.ResponseWriter, r *http.Request, x *exchange, g grpcKind, ct string) (abort bool) {
	e := h1Exchange{p: p, w: w, r: r, g: g, ct: ct}
	e.upgrade = upgradeOffer(r)
	var st gate.Stream // an upgrade's stream slot, taken before the upstream is asked
	if e.upgrade != "" {
		var rej gate.Rejection
		var ok bool
		if st, rej, ok = x.reserveStream(); !ok {
			writeRejection(w, grpcNone, "", &rej)
			return false
		}
	}
	e.mode = bodyModeOf(r, e.upgrade)
	e.cs = newClientSide(w, r, p.clientTimeout)
	defer e.cs.h2.stop()
	if !e.roundTrip(x) {
		st.End()
		return false
	}
	if e.h.Status == http.StatusSwitchingProtocols {
		if upgradeAccepted(&e.h, e.upgrade) && e.sender == nil {
			return p.splice(w, r, e.c, e.h.UpgradeTo, x, e.watch, st)
		}
		st.End()
		e.refuseSwitch(x)
		return false
	}
	st.End() // the upstream did not switch: an ordinary response
	var ls *liveStream
	if e.h.Status == http.StatusOK && isEventStream(w.Header()) {
		// Server-sent events: a stream from its head on (see streams.go),
		// cut when its client goes away.
		if !e.c.Stream() {
			e.drop(x) // the client is gone already
			x.finish(gate.Ignored)
			return false
		}
		st, rej, ok := x.openStream(time.Now())
		if !ok {
			e.drop(x)
			clear(w.Header())
			writeRejection(w, grpcNone, "", &rej)
			return false
		}
		ls = p.streams.add(st, e.c.Abort)
		defer p.streams.remove(ls)
	}
	e.cs.up = e.c
	upErr, clErr := e.relayResponse()
	draining := e.release(upErr, clErr)
	if ls != nil && ls.gone.Load() {
		upErr = nil // cut by CloseStreams: the response ends whole, and its client reconnects
	}
	// A response whose client went away meanwhile, read to its end and
	// dropped, counts as any other: its latency is the upstream's service time.
	o, abort := p.responseOutcome(r.Context(), x, e.h.Status, g, w.Header(), upErr, clErr)
	x.finishAt(o, e.releasedAt)
	if draining {
		e.finishDrain()
	}
	return abort
}

// roundTrip sends the request and reads the response head, on a pooled
// connection and, when that is safe, once more on a fresh one. It returns false
// when the exchange failed and was answered and finished.
//
// A request that failed on a reused connection before any response byte arrived
// is sent again when it had no body and either the head never left (the write
// failed) or the method is idempotent (an upstream may close an idle connection
// just as a request is sent on it). The second try goes on a new connection: the
// next idle one may be just as stale.
func (e *h1Exchange) roundTrip(x *exchange) bool {
	p, r, ctx := e.p, e.r, e.r.Context()
	for attempt := 0; ; attempt++ {
		c, reused, err := p.pool.Get(ctx, x.start, attempt > 0, dialSlotsOf(ctx))
		if err != nil {
			p.fail(ctx, e.w, x, e.g, e.ct, err, true)
			return false
		}
		e.c = c
		gone := ctx.Err() != nil
		if !gone {
			e.watch = watchClient(r, c)
			// Cut, not finished, when the client goes (see h1.Conn.Claim):
			// an upgrade's stream, and a request that holds no slot the
			// upstream's work would need to keep (Pass.HoldsSlot).
			if gone = !c.Claim(e.upgrade != "" || !x.pass.HoldsSlot()); gone {
				e.watch.stop()
			}
		}
		if gone {
			// The client went away before the request left (while the
			// connection was dialled, say): the connection is as it was,
			// and goes back to the pool. (A watch that fired before the
			// claim only marked the connection: see clientGone.)
			p.pool.Put(c, time.Now())
			p.fail(ctx, e.w, x, e.g, e.ct, context.Canceled, false)
			return false
		}
		c.ArmRead(x.start.Add(p.upstreamTimeout), p.upstreamTimeout) // before sendRequest waits for the response
		e.sender, err = p.sendRequest(c, r, x.path, &e.cs, e.upgrade, e.mode)
		if err == nil {
			e.h, err = p.readHead(c, e.w, r.Method, x.start)
		}
		if err == nil {
			return true
		}
		e.drop(x)
		if e.sender != nil && e.sender.clientErr {
			// The client's body failed (stalled, gone, or malformed): nothing
			// to learn about the upstream.
			x.finish(gate.Ignored)
			clientBodyFailed(e.w, r, e.sender.err)
			return false
		}
		if attempt == 0 && reused && e.mode == bodyNone && ctx.Err() == nil && retriable(err, r) {
			p.stats.retries.Add(1)
			clear(e.w.Header())
			continue
		}
		p.fail(ctx, e.w, x, e.g, e.ct, err, false)
		return false
	}
}

// retriable reports whether r may be sent again after err, a failure before any
// response byte: the head never left, or r is idempotent.
func retriable(err error, r *http.Request) bool {
	var wf *writeFailedError
	var nr *noResponseError
	return errors.As(err, &wf) || (errors.As(err, &nr) && isIdempotent(r.Method, len(r.Header["Idempotency-Key"]) > 0))
}

// drop closes the upstream connection of a failed exchange and stops the
// request body's sender; a body left unfinished closes the client's connection.
func (e *h1Exchange) drop(x *exchange) {
	e.watch.stop()
	e.c.Finished()
	e.c.Abort()
	if e.sender != nil {
		x.closeClient = e.sender.abandon(&e.cs) && e.r.ProtoMajor == 1
	}
}

// refuseSwitch answers a 101 that does not accept the upgrade offered (none was
// offered, or another protocol): a protocol error (502), and nothing is spliced,
// so that no tunnel the client never asked for carries requests past the gate.
func (e *h1Exchange) refuseSwitch(x *exchange) {
	e.drop(x)
	err := h1.ProtoErr("101 Switching Protocols to %q, not to the upgrade asked for (%q)", h1.Clip([]byte(e.h.UpgradeTo)), e.upgrade)
	e.p.fail(e.r.Context(), e.w, x, e.g, e.ct, err, false)
}

// relayResponse sends the response head to the client and copies the body, as
// the head frames it. upErr is a failure of the upstream, clErr of the client.
func (e *h1Exchange) relayResponse() (upErr, clErr error) {
	if e.sender != nil && !e.sender.isDone() && !e.sender.bodyRead.Load() && e.r.ProtoMajor == 1 {
		// The upstream answers before the client finished sending: the rest of
		// the body may have to be cut, which ends the client's connection;
		// say so now. (A body read to its end, its last bytes still on their
		// way to the upstream, leaves the client's connection as it is.)
		e.w.Header().Set("Connection", "close")
	}
	leaveUntyped(e.w.Header())
	e.w.WriteHeader(e.h.Status)
	e.cs.dirty = true // the head goes out at the first flush, before the proxy waits for more
	if e.h.Bodyless(e.r.Method) {
		return nil, nil
	}
	return e.p.copyResponse(&e.cs, e.c, &e.h)
}

// release puts the connection back in the pool if it can carry another
// exchange, else closes it, and notes the instant (releasedAt). It reports
// whether the rest of the request body is being drained (see finishDrain).
//
// A connection is reused only after a whole exchange: the response read to its
// end with nothing beyond it (bytes beyond it would be read as the next
// response), no close asked for, the request body sent whole, the client still
// there.
func (e *h1Exchange) release(upErr, clErr error) (draining bool) {
	c := e.c
	reusable := !e.h.Close && upErr == nil && clErr == nil && c.R.Buffered() == 0
	if s := e.sender; s != nil {
		switch {
		case s.isDone():
			reusable = reusable && s.err == nil
		case s.bodyRead.Load():
			// The client's body was read whole and its last bytes are on
			// their way to the upstream, which answered already: the write
			// ends soon (bounded by the upstream timeout), and then the
			// connection is as reusable as after any exchange. The
			// client's connection carries on either way.
			<-s.done
			reusable = reusable && s.err == nil
		default:
			// The upstream answered before taking the whole body: this
			// connection cannot carry another request, and the rest of the
			// body is not wanted. It is drained for a while, like nginx's
			// lingering close: cutting the connection on unread bytes would
			// reset it, maybe before the client read the response.
			reusable, draining = false, true
			s.beginDrain(&e.cs, time.Now().Add(drainTimeout))
			c.Abort()
		}
	}
	if !e.watch.stop() && !c.Finishing() {
		reusable = false // the client went away and the connection was aborted
	}
	c.Finished()
	e.releasedAt = time.Now()
	if reusable {
		e.p.pool.Put(c, e.releasedAt)
	} else {
		c.Abort()
	}
	return draining
}

// finishDrain gives the client the response, then waits for the drain of the
// request body to end.
func (e *h1Exchange) finishDrain() {
	if e.cs.flush() != nil {
		e.sender.beginDrain(&e.cs, time.Now()) // it is gone
	}
	<-e.sender.done
}

// responseOutcome is the outcome of a forwarded response (HTTP/1.1 and h2c
// alike): by its status, or for gRPC by its grpc-status (in h, trailers
// included); a failure of the upstream while the body was copied is dropped
// (counted in the stats) and aborts the response, a failure of the client's is
// ignored. ctx is the request's: an upstream failure after the client went away
// is the client's doing. A drop's cause goes in x, for the breaker.
func (p *Proxy) responseOutcome(ctx context.Context, x *exchange, status int, g grpcKind, h http.Header, upErr, clErr error) (o gate.Outcome, abort bool) {
	switch {
	case upErr != nil && ctx.Err() == nil:
		c := classify(upErr, false)
		p.stats.count(c)
		x.cause = failNames[c]
		return gate.Dropped, true
	case upErr != nil || clErr != nil:
		return gate.Ignored, upErr != nil
	case g != grpcNone && status == http.StatusOK:
		o, x.cause = grpcResponseOutcome(h, g), "gRPC status"
	default:
		o, x.cause = statusOutcome(status), "5xx response"
	}
	return o, false
}

// clientBodyFailed answers a request whose body could not be read: 408 if the
// client stalled, else 400, and the connection closes (the rest of the body is in
// an unknown state). A client that is gone sees nothing.
func clientBodyFailed(w http.ResponseWriter, r *http.Request, err error) {
	h := w.Header()
	clear(h)
	if r.ProtoMajor == 1 {
		h.Set("Connection", "close")
	}
	code := http.StatusBadRequest
	if classify(err, false) == failTimeout {
		code = http.StatusRequestTimeout
	}
	http.Error(w, "proxy: reading the request body failed", code)
}
