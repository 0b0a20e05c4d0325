//go:build linux || darwin || freebsd

package proxy

import (
	"net"
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
