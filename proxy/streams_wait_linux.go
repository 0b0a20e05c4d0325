package proxy

import "syscall"

// waitReadable returns once c's socket has bytes to read, its peer's end, or
// an error (a read deadline's included), holding no buffer meanwhile: it
// peeks at a byte without taking it, and lets the runtime's poller wait
// while there is none. What it found, the read that follows reports.
func waitReadable(c syscall.RawConn) error {
	var b [1]byte
	return c.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return err != syscall.EAGAIN
	})
}
