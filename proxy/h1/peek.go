//go:build linux || darwin || freebsd

package h1

import (
	"net"
	"os"
	"syscall"
)

// idleProbe looks at an idle connection without blocking: a non-blocking
// MSG_PEEK, one system call and no allocation (the raw connection and the
// callback are made once per connection).
type idleProbe struct {
	rc   syscall.RawConn // nil when the connection has no file descriptor
	fn   func(fd uintptr) bool
	open bool
	b    [1]byte
}

func (p *idleProbe) init(nc net.Conn) {
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			p.rc = rc
		}
	}
	p.fn = func(fd uintptr) bool {
		// Only "would block" means quiet: EOF (no error, no bytes), an error,
		// or bytes nobody asked for all mean the connection is done.
		_, _, err := syscall.Recvfrom(int(fd), p.b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		p.open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	}
}

// quiet reports whether the connection is still open with nothing to read: no
// EOF, no error and no unsolicited bytes waiting. A connection the upstream
// closed, or one that carries bytes no request asked for (a second response, a
// body beyond its framing), must not carry the next request.
func (p *idleProbe) quiet() bool {
	if p.rc == nil {
		return true
	}
	p.open = false
	if err := p.rc.Read(p.fn); err != nil {
		return false
	}
	return p.open
}

// upWriter is what an upstream connection's buffered writer writes to. Its
// one write while armed (the last of a request after which the proxy only
// reads: see Conn.flushAwait) goes out from inside a raw read of the
// connection, which then waits for the response's first bytes before it
// returns, so that the read that follows finds them. A read begun after the
// write would first find nothing (EAGAIN: a system call for nothing) and
// then wait. The write must come after the read began: Go's poller forgets,
// when a read begins, a readiness it saw before; the response cannot come
// before the request, so none is lost. A write the socket does not take
// whole, or one that fails with "would block", is finished as any other
// write, and the read that follows waits as usual; a wait that fails (the
// read deadline, the connection closed) shows in that read.
//
// Concurrency: used by one goroutine at a time, the one that writes the
// request; nothing else writes an upstream connection while a request whose
// body is sent (or has none) waits for its response.
type upWriter struct {
	nc    net.Conn
	rc    syscall.RawConn // nil: no file descriptor, writes are plain
	fn    func(fd uintptr) bool
	armed bool

	p     []byte // the write in flight, while fn runs
	n     int    // how much of it went
	err   error  // the failed write's error, if one failed
	tried bool   // fn wrote (or tried to)
}

// init makes w write nc, raw through probe's raw connection.
func (w *upWriter) init(nc net.Conn, probe *idleProbe) {
	w.nc, w.rc = nc, probe.rc
	w.fn = func(fd uintptr) bool {
		if w.tried {
			return true // readable, or the wait was cut short: the read that follows says
		}
		w.tried = true
		n, err := syscall.Write(int(fd), w.p)
		if n > 0 {
			w.n = n
		}
		if err != nil {
			if err != syscall.EAGAIN && err != syscall.EWOULDBLOCK {
				w.err = err
			}
			return true
		}
		return w.n < len(w.p) // taken whole: wait for the response
	}
}

func (w *upWriter) Write(p []byte) (int, error) {
	if !w.armed || w.rc == nil {
		return w.nc.Write(p)
	}
	w.armed = false
	w.p, w.n, w.err, w.tried = p, 0, nil, false
	_ = w.rc.Read(w.fn) // a failed wait shows in the read that follows
	w.p = nil
	switch {
	case w.err != nil:
		return w.n, &net.OpError{Op: "write", Net: w.nc.LocalAddr().Network(), Source: w.nc.LocalAddr(), Addr: w.nc.RemoteAddr(), Err: os.NewSyscallError("write", w.err)}
	case !w.tried:
		return w.nc.Write(p) // the read could not begin (closed, deadline): as a plain write
	case w.n < len(p):
		n, err := w.nc.Write(p[w.n:])
		return w.n + n, err
	}
	return len(p), nil
}
