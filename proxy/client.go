package proxy

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/proxy/h1"
)

// writerControls are the per-request controls of net/http's response writers
// (HTTP/1 and HTTP/2 alike), reached without http.NewResponseController's
// allocation when the writer is net/http's own.
type writerControls interface {
	FlushError() error
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
	EnableFullDuplex() error
}

// rcControls adapts a ResponseController, for writers wrapped by middleware.
type rcControls struct{ *http.ResponseController }

func (c rcControls) FlushError() error { return c.Flush() }

// clientSide is the client's end of an exchange: the response writer with
// progress deadlines and flushing on demand.
//
// The client must make progress within the timeout whenever the proxy waits on
// it: for each read of the request body and each write of the response. Over
// HTTP/1 that is the connection's deadlines; over HTTP/2 a stall (a stream's
// streamStall) ends the stream alone: a body read fails (the proxy answers 408,
// as over HTTP/1), a write resets the stream. Either way the handler returns
// and the request's concurrency slot comes back.
type clientSide struct {
	w       http.ResponseWriter
	ctl     writerControls
	timeout time.Duration // progress deadline for an HTTP/1 client; 0 for none
	h2      *streamStall  // an HTTP/2 stream's progress deadline; nil over HTTP/1
	dirty   bool          // written since the last flush
	written int64         // bytes written so far

	// up is the upstream connection whose response is written; once its
	// exchange is finishing (the client went away after the request left,
	// see h1.Conn.ClientGone), what the client can no longer take is
	// dropped, up to maxDrain bytes, and gone is set.
	up      *h1.Conn
	gone    bool
	dropped int64
}

// unblockedWrite is how much of a response the kernel and the server's buffer take
// without the client reading: up to it, a write cannot block, and needs no
// deadline (the server clears any after the response). Linux's smallest TCP send
// buffer default is 16 KiB, net/http's response buffer 4 KiB.
const unblockedWrite = 16 << 10

// newClientSide returns the client side of r's exchange. Over HTTP/2 it
// replaces r.Body, if there is one, by a reader that times each read (see
// streamStall): the caller must stop cs.h2 before the handler returns.
func newClientSide(w http.ResponseWriter, r *http.Request, timeout time.Duration) clientSide {
	cs := clientSide{w: w}
	if c, ok := w.(writerControls); ok {
		cs.ctl = c
	} else {
		cs.ctl = rcControls{http.NewResponseController(w)}
	}
	switch {
	case timeout <= 0:
	case r.ProtoMajor == 1:
		cs.timeout = timeout
	default:
		cs.h2 = &streamStall{ctl: cs.ctl, timeout: timeout}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = stalledBody{r.Body, cs.h2}
		}
	}
	return cs
}

// write writes b to the client, which must make progress within the timeout.
func (cs *clientSide) write(b []byte) error {
	cs.written += int64(len(b))
	cs.dirty = true
	if cs.gone {
		return cs.drop(len(b), nil)
	}
	if cs.h2 != nil {
		cs.h2.arm(&cs.h2.write)
		_, err := cs.w.Write(b)
		cs.h2.disarm(&cs.h2.write)
		return cs.drop(len(b), err)
	}
	if cs.timeout > 0 && cs.written > unblockedWrite {
		_ = cs.ctl.SetWriteDeadline(time.Now().Add(cs.timeout))
	}
	_, err := cs.w.Write(b)
	return cs.drop(len(b), err)
}

// flush sends what was written so far, if anything.
func (cs *clientSide) flush() error {
	if !cs.dirty {
		return nil
	}
	cs.dirty = false
	if cs.gone {
		return nil
	}
	if cs.h2 != nil {
		cs.h2.arm(&cs.h2.write)
		err := cs.ctl.FlushError()
		cs.h2.disarm(&cs.h2.write)
		return cs.drop(0, err)
	}
	if cs.timeout > 0 && cs.written > unblockedWrite {
		_ = cs.ctl.SetWriteDeadline(time.Now().Add(cs.timeout))
	}
	return cs.drop(0, cs.ctl.FlushError())
}

// drop takes err, the outcome of writing n bytes to the client: a failure
// (the client went away, or stalled past the client timeout) while the
// upstream exchange can finish drops the rest of the response instead
// (gone), up to maxDrain bytes, so that the exchange holds its place until
// the upstream's work ends (see h1.Conn.ClientGone); beyond them the
// failure is returned, and the exchange is cut.
func (cs *clientSide) drop(n int, err error) error {
	switch {
	case err == nil && !cs.gone:
		return nil
	case !cs.gone && (cs.up == nil || !cs.up.Finish()):
		return err
	}
	cs.gone = true
	if cs.dropped += int64(n); cs.dropped > maxDrain {
		return errDrainLimit
	}
	return nil
}

// readDeadline arms (or, with on == false, clears) the deadline for the next read
// of an HTTP/1 request body. (Over HTTP/2 the body's reads are timed each.)
func (cs *clientSide) readDeadline(on bool) {
	if cs.timeout <= 0 {
		return
	}
	if on {
		_ = cs.ctl.SetReadDeadline(time.Now().Add(cs.timeout))
	} else {
		_ = cs.ctl.SetReadDeadline(time.Time{})
	}
}

// streamStall is an HTTP/2 stream's progress deadline: a timer per direction,
// armed while the proxy waits on the client (a read of the request body, a
// write or flush of the response) and stopped when that returns. One that
// fires ends the wait through the stream's own deadlines, set in the past: a
// read fails with os.ErrDeadlineExceeded, a write resets the stream
// (RST_STREAM). HTTP/2's flow control alone would let a client that never
// grants a window, or never sends the body it announced, hold its slot for as
// long as it holds the connection. (net/http's per-stream deadlines are not
// set directly for each wait: each setting is a message to the connection's
// serving goroutine; a timer's reset is not.)
//
// Concurrency: the request body's reader and the response's writer each arm
// their own direction, at once; stop, which the handler calls before it
// returns, waits for a firing timer, after which none touches the stream.
type streamStall struct {
	ctl     writerControls
	timeout time.Duration

	mu          sync.Mutex
	stopped     bool
	read, write stallTimer
	bodyErr     error // the first failed read of the request body (stalled, reset, cut)
}

// stallTimer is one direction's timer; since is when its wait began, zero
// while none is armed.
type stallTimer struct {
	t     *time.Timer
	since time.Time
}

// arm starts a wait in direction d (&s.read or &s.write).
func (s *streamStall) arm(d *stallTimer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	d.since = time.Now()
	switch {
	case d.t != nil:
		d.t.Reset(s.timeout)
	case d == &s.read:
		d.t = time.AfterFunc(s.timeout, s.readStalled)
	default:
		d.t = time.AfterFunc(s.timeout, s.writeStalled)
	}
}

// disarm ends the wait in direction d.
func (s *streamStall) disarm(d *stallTimer) {
	s.mu.Lock()
	d.since = time.Time{}
	if d.t != nil {
		d.t.Stop()
	}
	s.mu.Unlock()
}

// stalled reports, with s.mu held, whether d's wait has lasted the timeout
// (a timer that fired for an earlier wait finds a later one, or none).
func (s *streamStall) stalled(d *stallTimer) bool {
	return !s.stopped && !d.since.IsZero() && time.Since(d.since) >= s.timeout
}

// past is a deadline already over: setting it ends the wait at once.
var past = time.Unix(1, 0)

func (s *streamStall) readStalled() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled(&s.read) {
		_ = s.ctl.SetReadDeadline(past)
	}
}

func (s *streamStall) writeStalled() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled(&s.write) {
		_ = s.ctl.SetWriteDeadline(past)
	}
}

// stop ends s for good, before the handler returns; nil does nothing.
func (s *streamStall) stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.stopped = true
	if s.read.t != nil {
		s.read.t.Stop()
	}
	if s.write.t != nil {
		s.write.t.Stop()
	}
	s.mu.Unlock()
}

// stalledBody is an HTTP/2 request body whose every read must end within the
// client timeout.
type stalledBody struct {
	io.ReadCloser
	s *streamStall
}

func (b stalledBody) Read(p []byte) (int, error) {
	b.s.arm(&b.s.read)
	n, err := b.ReadCloser.Read(p)
	b.s.disarm(&b.s.read)
	if err != nil && err != io.EOF {
		b.s.mu.Lock()
		if b.s.bodyErr == nil {
			b.s.bodyErr = err
		}
		b.s.mu.Unlock()
	}
	return n, err
}

// clientBodyErr returns the error of the first failed read of the request
// body, if one failed: an upstream exchange that fails after it, failed for
// want of the body, the client's doing. nil for a nil s.
func (s *streamStall) clientBodyErr() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodyErr
}

// bufPool holds the buffers that bodies are copied through when they cannot be
// copied straight out of a connection's read buffer.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
