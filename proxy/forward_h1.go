package proxy

import (
	"context"
	"errors"
	"net/http"
	"time"

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

// forwardH1 sends r over an HTTP/1.1 connection from the pool and copies the
// response back. It finishes x. It returns true when the response was cut short
// and must be aborted.
//
// A request that failed on a reused connection before any response byte arrived is
// sent once more on a fresh connection when that is safe: it had no body, and
// either the head never left (the write failed) or the method is idempotent (an
// upstream may close an idle connection just as a request is sent on it).
func (p *Proxy) forwardH1(w http.ResponseWriter, r *http.Request, x *exchange, g grpcKind, ct string) (abort bool) {
	ctx := r.Context()
	upgrade := upgradeOffer(r)
	mode := bodyModeOf(r, upgrade)
	cs := newClientSide(w, r, p.clientTimeout)
	var (
		c      *upConn
		h      respHead
		sender *bodySender
		stop   func() bool
	)
	for attempt := 0; ; attempt++ {
		var reused bool
		var err error
		// A request sent again goes on a new connection: the next idle one
		// may be just as stale.
		c, reused, err = p.pool.get(ctx, x.start, attempt > 0)
		if err != nil {
			p.fail(ctx, w, x, g, ct, err, true)
			return false
		}
		stop = context.AfterFunc(ctx, c.abortFn)
		sender, err = p.sendRequest(c, r, &cs, upgrade, mode)
		if err == nil {
			h, err = p.readHead(c, w, r.Method, x.start)
		}
		if err == nil {
			break
		}
		stop()
		c.abort()
		if sender != nil {
			x.closeClient = sender.abandon(&cs) && r.ProtoMajor == 1
			if sender.clientErr {
				// The client's body failed (stalled, gone, or malformed):
				// nothing to learn about the upstream.
				x.finish(gate.Ignored)
				clientBodyFailed(w, r, sender.err)
				return false
			}
		}
		var wf *writeFailedError
		var nr *noResponseError
		if attempt == 0 && reused && mode == bodyNone && ctx.Err() == nil &&
			(errors.As(err, &wf) || (errors.As(err, &nr) && isIdempotent(r.Method, len(r.Header["Idempotency-Key"]) > 0))) {
			p.stats.retries.Add(1)
			clear(w.Header())
			continue
		}
		p.fail(ctx, w, x, g, ct, err, false)
		return false
	}

	if h.status == http.StatusSwitchingProtocols {
		if upgradeAccepted(&h, upgrade) && sender == nil {
			return p.splice(w, r, c, &h, x, stop)
		}
		stop()
		c.abort()
		if sender != nil {
			x.closeClient = sender.abandon(&cs) && r.ProtoMajor == 1
		}
		p.fail(ctx, w, x, g, ct, protoErr("101 Switching Protocols to %q, not to the upgrade asked for (%q)", clip([]byte(h.upgradeTo)), upgrade), false)
		return false
	}

	if sender != nil && !sender.isDone() && r.ProtoMajor == 1 {
		// The upstream answers before the client finished sending: the rest of
		// the body may have to be cut, which ends the client's connection;
		// say so now.
		w.Header().Set("Connection", "close")
	}
	leaveUntyped(w.Header())
	w.WriteHeader(h.status)
	cs.dirty = true // the head goes out at the first flush, before the proxy waits for more
	var upErr, clErr error
	if !h.bodyless(r.Method) {
		upErr, clErr = p.copyResponse(&cs, c, &h)
	}
	// Bytes beyond the response would be read as the next one's: such a
	// connection is not reused.
	reusable := !h.closeConn && upErr == nil && clErr == nil && c.br.Buffered() == 0
	draining := false
	if sender != nil {
		if sender.isDone() {
			reusable = reusable && sender.err == nil
		} else {
			// The upstream answered before taking the whole body: this
			// connection cannot carry another request, and the rest of the
			// body is not wanted. It is drained (below) for a while, like
			// nginx's lingering close: cutting the connection on unread bytes
			// would reset it, maybe before the client read the response.
			reusable, draining = false, true
			sender.beginDrain(&cs, time.Now().Add(drainTimeout))
			c.abort()
		}
	}
	if !stop() {
		reusable = false // the client went away and the connection was aborted
	}
	end := time.Now()
	if reusable {
		p.pool.put(c, end)
	} else {
		c.abort()
	}

	o := statusOutcome(h.status)
	if g != grpcNone && h.status == http.StatusOK {
		o = grpcResponseOutcome(w.Header(), g)
	}
	switch {
	case upErr != nil && ctx.Err() == nil:
		p.stats.count(classify(upErr, false))
		o, abort = gate.Dropped, true
	case upErr != nil || clErr != nil:
		o, abort = gate.Ignored, upErr != nil
	}
	x.finishAt(o, end)
	if draining {
		// The client gets the response before the drain, not after.
		if cs.flush() != nil {
			sender.beginDrain(&cs, time.Now()) // it is gone
		}
		<-sender.done
	}
	return abort
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
