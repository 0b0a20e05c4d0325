package proxy

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/proxy/h1"
)

// bodyMode is how a request body travels to an HTTP/1.1 upstream.
type bodyMode uint8

const (
	bodyNone   bodyMode = iota // no body
	bodyInline                 // a small body of known length, written by the handler before it reads the response
	bodyStream                 // written by a goroutine while the handler reads the response (full duplex)
)

// inlineBodyMax is the largest body written inline: small enough that the
// upstream's socket buffer takes it whole even if the upstream answers before
// reading it, so writing it first cannot stall the exchange.
const inlineBodyMax = 64 << 10

// bodyModeOf picks how r's body is sent.
func bodyModeOf(r *http.Request, upgrade string) bodyMode {
	switch {
	case r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0:
		return bodyNone
	case r.ContentLength > 0 && r.ContentLength <= inlineBodyMax && upgrade == "":
		return bodyInline
	}
	return bodyStream
}

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
	// bodyRead is set once the client's body was read to its end, before
	// the sender writes its last bytes to the upstream: from then on the
	// client's connection is fit for its next request, whatever the
	// upstream does.
	bodyRead atomic.Bool
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
			s.bodyRead.Store(true)
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
	return !s.bodyRead.Load()
}

// sendRequest writes r's head and, depending on mode, its body: inline, or from a
// goroutine it starts and returns.
func (p *Proxy) sendRequest(c *h1.Conn, r *http.Request, path string, cs *clientSide, upgrade string, mode bodyMode) (*bodySender, error) {
	p.writeRequestHead(c.W, r, path, upgrade, mode)
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
		if err := c.W.Flush(); err != nil {
			return nil, &writeFailedError{err}
		}
		_ = cs.ctl.EnableFullDuplex() // HTTP/1: read the body while the response is written
		s := &bodySender{cs: *cs, done: make(chan struct{})}
		go func() {
			s.err, s.clientErr = p.sendBody(c, r, &s.cs, s)
			if s.err != nil {
				c.Abort() // let the handler's read of the response fail too
			}
			close(s.done)
		}()
		return s, nil
	}
	if err := c.FlushAwait(); err != nil {
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
func (p *Proxy) sendBody(c *h1.Conn, r *http.Request, cs *clientSide, s *bodySender) (err error, clientErr bool) {
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
				s.bodyRead.Store(true)
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
		c.W.WriteString("0\r\n")
		for k, vv := range r.Trailer {
			if !h1.ValidFieldName(k) || h1.TrailerForbidden(k) {
				continue
			}
			for _, v := range vv {
				if h1.ValidFieldValue(v) {
					c.W.WriteString(k)
					c.W.WriteString(": ")
					c.W.WriteString(v)
					c.W.WriteString("\r\n")
				}
			}
		}
		c.W.WriteString("\r\n")
	}
	c.ArmWrite(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	if s == nil {
		err = c.FlushAwait() // inline: the response is all that comes next
	} else {
		err = c.W.Flush()
	}
	c.ArmWrite(time.Time{}, 0) // later requests' heads are written without one
	return err, false
}

// sendPiece writes one piece of a request body, chunk-framed if chunked, and
// sends it at once if flush.
func (p *Proxy) sendPiece(c *h1.Conn, b []byte, chunked, flush bool) error {
	c.ArmWrite(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	if chunked {
		c.W.Write(h1.AppendChunkHeader(c.W.AvailableBuffer(), len(b)))
	}
	if _, err := c.W.Write(b); err != nil {
		return err
	}
	if chunked {
		c.W.WriteString("\r\n")
	}
	if flush {
		return c.W.Flush()
	}
	return nil
}
