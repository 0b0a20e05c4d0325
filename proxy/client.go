package proxy

import (
	"net/http"
	"sync"
	"time"
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
type clientSide struct {
	w       http.ResponseWriter
	ctl     writerControls
	timeout time.Duration // progress deadline for an HTTP/1 client; 0 for none
	dirty   bool          // written since the last flush
	written int64         // bytes written so far
}

// unblockedWrite is how much of a response the kernel and the server's buffer take
// without the client reading: up to it, a write cannot block, and needs no
// deadline (the server clears any after the response). Linux's smallest TCP send
// buffer default is 16 KiB, net/http's response buffer 4 KiB.
const unblockedWrite = 16 << 10

func newClientSide(w http.ResponseWriter, r *http.Request, timeout time.Duration) clientSide {
	cs := clientSide{w: w}
	if c, ok := w.(writerControls); ok {
		cs.ctl = c
	} else {
		cs.ctl = rcControls{http.NewResponseController(w)}
	}
	// HTTP/2 streams are left to HTTP/2's flow control and the server's stream
	// limits: an idle gRPC stream is legitimate there.
	if r.ProtoMajor == 1 {
		cs.timeout = timeout
	}
	return cs
}

// write writes b to the client, which must make progress within the timeout.
func (cs *clientSide) write(b []byte) error {
	cs.written += int64(len(b))
	if cs.timeout > 0 && cs.written > unblockedWrite {
		_ = cs.ctl.SetWriteDeadline(time.Now().Add(cs.timeout))
	}
	cs.dirty = true
	_, err := cs.w.Write(b)
	return err
}

// flush sends what was written so far, if anything.
func (cs *clientSide) flush() error {
	if !cs.dirty {
		return nil
	}
	cs.dirty = false
	if cs.timeout > 0 && cs.written > unblockedWrite {
		_ = cs.ctl.SetWriteDeadline(time.Now().Add(cs.timeout))
	}
	return cs.ctl.FlushError()
}

// readDeadline arms (or, with on == false, clears) the deadline for the next read
// of the request body.
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

// bufPool holds the buffers that bodies are copied through when they cannot be
// copied straight out of a connection's read buffer.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
