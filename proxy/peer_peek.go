//go:build linux || darwin || freebsd

package proxy

import (
	"net"
	"syscall"
)

// peerOpen reports whether an idle connection still looks usable: no EOF, no
// error and no unsolicited bytes waiting (a non-blocking MSG_PEEK, one system
// call). A connection the upstream closed while idle would otherwise fail the next
// request sent on it.
func peerOpen(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := true
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		// Only "would block" means open: EOF (no error, no bytes), an error, or
		// bytes nobody asked for all mean the connection is done.
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && open
}
