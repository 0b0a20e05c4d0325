package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"
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

// bodySender streams a request body to the upstream on its own goroutine while the
// handler reads the response (full duplex).
type bodySender struct {
	cs        clientSide // the goroutine's own copy
	done      chan struct{}
	err       error // valid once done is closed
	clientErr bool  // err came from reading the client's body
	// drainUntil, once set (Unix nanoseconds), says the upstream wants no more:
	// the rest of the body is read and dropped until then (see beginDrain).
	drainUntil atomic.Int64
	sawEOF     bool // the client's body was read to its end; valid once done is closed
}

// Draining bounds: a client still sending a body nobody wants gets this long and
// this many bytes to finish, as nginx's lingering close and net/http's own
// discard of unread bodies do, before its connection is cut (which may reset it).
const (
	drainTimeout = 2 * time.Second
	maxDrain     = 256 << 10
)

// errDrainLimit ends a drain that met maxDrain.
var errDrainLimit = errors.New("proxy: request body beyond what is drained")

// armClientRead sets the deadline of the next read of the client's body: the
// client timeout, or the end of the drain once one began. (beginDrain sets the
// deadline too, to cut a read in progress; the second look covers a beginDrain
// that ran between the first look and the renewal.)
func (s *bodySender) armClientRead(cs *clientSide) {
	if s == nil {
		cs.readDeadline(true)
		return
	}
	if until := s.drainUntil.Load(); until != 0 {
		_ = cs.ctl.SetReadDeadline(time.Unix(0, until))
		return
	}
	cs.readDeadline(true)
	if until := s.drainUntil.Load(); until != 0 {
		_ = cs.ctl.SetReadDeadline(time.Unix(0, until))
	}
}

// draining reports whether a drain began.
func (s *bodySender) draining() bool { return s != nil && s.drainUntil.Load() != 0 }

// drain reads what is left of the client's body into buf and drops it, within
// the drain's deadline and maxDrain. A body read to its end leaves the client's
// connection fit for its next request.
func (s *bodySender) drain(r *http.Request, cs *clientSide, buf []byte) (err error, clientErr bool) {
	for dropped := 0; dropped <= maxDrain; {
		s.armClientRead(cs)
		n, err := r.Body.Read(buf)
		dropped += n
		if err == io.EOF {
			s.sawEOF = true
			cs.readDeadline(false)
			return nil, false
		}
		if err != nil {
			return err, true
		}
	}
	return errDrainLimit, true
}

// isDone reports whether the sender has finished.
func (s *bodySender) isDone() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// beginDrain tells the sender the upstream wants no more of the body: from now
// it reads the rest of the client's body and drops it, and a read still waiting
// at until is cut. Call it before aborting the upstream connection the sender
// writes to, so that the failed write finds the drain begun.
//
// A cut read leaves the client's connection unusable: net/http cancels the
// contexts of its later requests. Whoever cuts must close that connection
// (Connection: close on the response).
func (s *bodySender) beginDrain(cs *clientSide, until time.Time) {
	s.drainUntil.Store(until.UnixNano())
	_ = cs.ctl.SetReadDeadline(until)
}

// abandon stops the sender, whose upstream connection the caller has aborted,
// and waits for it. It reports whether the client's body was left unfinished,
// in which case the client's connection must close.
func (s *bodySender) abandon(cs *clientSide) (unfinished bool) {
	if !s.isDone() {
		s.beginDrain(cs, time.Now())
		<-s.done
	}
	return !s.sawEOF
}

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
	upgrade := r.ProtoMajor == 1 && len(r.Header["Upgrade"]) > 0 && hasToken(r.Header["Connection"], "upgrade")
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
				x.finish(OutcomeIgnored)
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
		if upgrade && sender == nil {
			return p.splice(w, r, c, &h, x, stop)
		}
		stop()
		c.abort()
		if sender != nil {
			x.closeClient = sender.abandon(&cs) && r.ProtoMajor == 1
		}
		p.fail(ctx, w, x, g, ct, protoErr("101 Switching Protocols to a request that asked for no upgrade"), false)
		return false
	}

	if sender != nil && !sender.isDone() && r.ProtoMajor == 1 {
		// The upstream answers before the client finished sending: the rest of
		// the body may have to be cut, which ends the client's connection;
		// say so now.
		w.Header().Set("Connection", "close")
	}
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
		o, abort = OutcomeDropped, true
	case upErr != nil || clErr != nil:
		o, abort = OutcomeIgnored, upErr != nil
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

// grpcResponseOutcome classifies a gRPC response by its grpc-status, found in the
// trailers (http.TrailerPrefix keys) or, for a trailers-only response or
// grpc-web, in the header. A native gRPC response without a status is dropped
// (clients report INTERNAL); a grpc-web one carries it in the body, unseen here,
// and counts as a success.
func grpcResponseOutcome(h http.Header, g grpcKind) Outcome {
	v := h[http.TrailerPrefix+headerGRPCStatus]
	if len(v) == 0 {
		v = h[headerGRPCStatus]
	}
	if len(v) == 0 {
		if g == grpcWeb {
			return OutcomeSuccess
		}
		return OutcomeDropped
	}
	code, ok := parseGRPCStatus(v[0])
	if !ok {
		return OutcomeDropped
	}
	return grpcOutcome(code)
}

// sendRequest writes r's head and, depending on mode, its body: inline, or from a
// goroutine it starts and returns.
func (p *Proxy) sendRequest(c *upConn, r *http.Request, cs *clientSide, upgrade bool, mode bodyMode) (*bodySender, error) {
	p.writeRequestHead(c.bw, r, upgrade, mode)
	switch mode {
	case bodyInline:
		if err, clientErr := p.sendBody(c, r, cs, nil); err != nil {
			if clientErr {
				s := &bodySender{done: make(chan struct{}), err: err, clientErr: true}
				close(s.done)
				return s, err
			}
			return nil, &writeFailedError{err}
		}
		return nil, nil
	case bodyStream:
		if err := c.bw.Flush(); err != nil {
			return nil, &writeFailedError{err}
		}
		_ = cs.ctl.EnableFullDuplex() // HTTP/1: read the body while the response is written
		s := &bodySender{cs: *cs, done: make(chan struct{})}
		go func() {
			s.err, s.clientErr = p.sendBody(c, r, &s.cs, s)
			if s.err != nil {
				c.abort() // let the handler's read of the response fail too
			}
			close(s.done)
		}()
		return s, nil
	}
	if err := c.bw.Flush(); err != nil {
		return nil, &writeFailedError{err}
	}
	return nil, nil
}

// sendBody copies r's body to the upstream: as it is when its length is known,
// chunk-encoded (with the request's trailers) when not. With a sender s (the
// streaming goroutine) every piece is sent at once, and once s is abandoned the
// rest is drained instead. The client must make progress within the client
// timeout, the upstream within the upstream timeout. clientErr says which side
// failed.
func (p *Proxy) sendBody(c *upConn, r *http.Request, cs *clientSide, s *bodySender) (err error, clientErr bool) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	chunked := r.ContentLength < 0
	left := r.ContentLength
	for {
		s.armClientRead(cs)
		n, rerr := r.Body.Read(buf)
		if !chunked && int64(n) > left {
			n = int(left)
		}
		if n > 0 {
			if err := p.sendPiece(c, buf[:n], chunked, s != nil); err != nil {
				if s.draining() {
					return s.drain(r, cs, buf)
				}
				return err, false
			}
			left -= int64(n)
		}
		if rerr == io.EOF || (!chunked && left == 0) {
			if s != nil {
				s.sawEOF = true
			}
			break
		}
		if rerr != nil {
			return rerr, true
		}
	}
	// From here the server watches the client connection on its own (for a
	// disconnect); it must not inherit our read deadline.
	cs.readDeadline(false)
	if !chunked && left > 0 {
		return io.ErrUnexpectedEOF, true
	}
	if chunked {
		c.bw.WriteString("0\r\n")
		for k, vv := range r.Trailer {
			if !validFieldName(k) || trailerForbidden(k) {
				continue
			}
			for _, v := range vv {
				if validFieldValue(v) {
					c.bw.WriteString(k)
					c.bw.WriteString(": ")
					c.bw.WriteString(v)
					c.bw.WriteString("\r\n")
				}
			}
		}
		c.bw.WriteString("\r\n")
	}
	c.armWrite(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	err = c.bw.Flush()
	c.armWrite(time.Time{}, 0) // later requests' heads are written without one
	return err, false
}

// sendPiece writes one piece of a request body, chunk-framed if chunked, and
// sends it at once if flush.
func (p *Proxy) sendPiece(c *upConn, b []byte, chunked, flush bool) error {
	c.armWrite(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	if chunked {
		c.bw.Write(appendChunkHeader(c.bw.AvailableBuffer(), len(b)))
	}
	if _, err := c.bw.Write(b); err != nil {
		return err
	}
	if chunked {
		c.bw.WriteString("\r\n")
	}
	if flush {
		return c.bw.Flush()
	}
	return nil
}

// readHead reads the response head into w's header. Interim responses are passed
// on (103 Early Hints) or dropped (100 Continue: the proxy's server speaks to the
// client itself; 102). The upstream has until start + the upstream timeout.
func (p *Proxy) readHead(c *upConn, w http.ResponseWriter, method string, start time.Time) (respHead, error) {
	dst := w.Header()
	c.armRead(start.Add(p.upstreamTimeout), p.upstreamTimeout)
	for {
		if _, err := c.br.Peek(1); err != nil {
			return respHead{}, &noResponseError{err}
		}
		h, err := c.sc.readResponseHead(c.br, dst, p.maxHead)
		if err != nil {
			return h, err
		}
		if h.status >= 200 || h.status == http.StatusSwitchingProtocols {
			return h, nil
		}
		if h.status == http.StatusEarlyHints {
			w.WriteHeader(h.status) // sends the fields set so far
		}
		clear(dst)
	}
}

// copyResponse copies the response body to the client, framed as the head says.
// upErr is a failure of the upstream, clErr of the client.
func (p *Proxy) copyResponse(cs *clientSide, c *upConn, h *respHead) (upErr, clErr error) {
	switch {
	case h.chunked:
		return p.copyChunked(cs, c)
	case h.length >= 0:
		return p.copyN(cs, c, h.length)
	}
	h.closeConn = true // the body ends when the connection does
	upErr, clErr = p.copyN(cs, c, -1)
	if upErr == io.ErrUnexpectedEOF {
		upErr = nil
	}
	return upErr, clErr
}

// fill makes sure c's reader holds at least one byte. Before it blocks, it flushes
// what the client has not got yet (so streams flow) and gives the upstream the
// upstream timeout to send more.
func (p *Proxy) fill(cs *clientSide, c *upConn) (upErr, clErr error) {
	if c.br.Buffered() > 0 {
		return nil, nil
	}
	if err := cs.flush(); err != nil {
		return nil, err
	}
	c.armRead(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	if _, err := c.br.Peek(1); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err, nil
	}
	return nil, nil
}

// copyN copies n bytes (n < 0: until EOF, reported as io.ErrUnexpectedEOF) straight
// out of c's read buffer to the client.
func (p *Proxy) copyN(cs *clientSide, c *upConn, n int64) (upErr, clErr error) {
	for n != 0 {
		if upErr, clErr = p.fill(cs, c); upErr != nil || clErr != nil {
			return upErr, clErr
		}
		k := c.br.Buffered()
		if n > 0 && int64(k) > n {
			k = int(n)
		}
		b, _ := c.br.Peek(k)
		if err := cs.write(b); err != nil {
			return nil, err
		}
		_, _ = c.br.Discard(k)
		if n > 0 {
			n -= int64(k)
		}
	}
	return nil, nil
}

// copyChunked decodes a chunked body (RFC 9112 §7.1) to the client, whose server
// frames it anew, and passes the trailer fields on as trailers.
func (p *Proxy) copyChunked(cs *clientSide, c *upConn) (upErr, clErr error) {
	for {
		line, upErr, clErr := p.line(cs, c)
		if upErr != nil || clErr != nil {
			return upErr, clErr
		}
		size, err := parseChunkSize(line)
		if err != nil {
			return err, nil
		}
		if size == 0 {
			break
		}
		if upErr, clErr = p.copyN(cs, c, size); upErr != nil || clErr != nil {
			return upErr, clErr
		}
		if line, upErr, clErr = p.line(cs, c); upErr != nil || clErr != nil {
			return upErr, clErr
		}
		if len(line) != 0 {
			return protoErr("chunk data longer than its size"), nil
		}
	}
	if c.br.Buffered() == 0 || bytes.IndexByte(peekBuffered(c), '\n') < 0 {
		if err := cs.flush(); err != nil {
			return nil, err
		}
		c.armRead(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	}
	var th respHead
	if err := c.sc.readFields(c.br, cs.w.Header(), &th, modeTrailer, p.maxHead); err != nil {
		return err, nil
	}
	return nil, nil
}

// maxChunkLine bounds a chunk-size line with its extensions.
const maxChunkLine = 4 << 10

// line reads one line of chunked framing; if it is not buffered whole, it first
// flushes the client and arms the upstream timeout, as fill does.
func (p *Proxy) line(cs *clientSide, c *upConn) (line []byte, upErr, clErr error) {
	if bytes.IndexByte(peekBuffered(c), '\n') < 0 {
		if err := cs.flush(); err != nil {
			return nil, nil, err
		}
		c.armRead(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	}
	budget := maxChunkLine
	line, err := c.sc.readLine(c.br, &budget)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return line, err, nil
}

// peekBuffered returns the bytes c's reader holds, without reading.
func peekBuffered(c *upConn) []byte {
	b, _ := c.br.Peek(c.br.Buffered())
	return b
}
