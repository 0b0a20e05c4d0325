package proxy

import (
	"os"
	"sync"
	"syscall"
)

// hangups learns that clients went away without reading their connections:
// one epoll instance per server, which the kernel tells when a watched
// connection's peer closes it or half-closes it, or it fails (EPOLLRDHUP,
// EPOLLHUP, EPOLLERR; not EPOLLIN: a client's next request wakes nothing).
// The instance's own descriptor waits in Go's poller, so a goroutine of the
// server sleeps there until such an event, and no thread is held.
//
// It is the own server's client-gone watch where it can be (Linux, a
// connection with a file descriptor): a connection is registered once, at its
// first watched request, one-shot, and stays armed across its requests
// until an event fires. So a watched request costs no system call, no timer,
// no goroutine and no read — where the read watch (watch1) costs a timer, a
// goroutine, a read that finds nothing and, when its request ends, two
// deadline changes and two goroutine wake-ups (measured at the lab's rate,
// BENCHMARKS.md issue 22, fifth sitting). An event for a connection whose
// request is not watched just disarms it; one for a watched request is
// judged as the read watch judges its read, by a peek that takes nothing:
// EOF or an error means the client is gone, bytes (its next request) mean it
// is there.
//
// Concurrency: arm and forget are called with the connection's wmu held or by
// its own goroutine; run is the server's goroutine; close may be called from
// any goroutine, once the server closes.
type hangups struct {
	once sync.Once
	ok   bool // the epoll instance works (else every connection uses the read watch)
	epfd int
	f    *os.File // epfd, in Go's poller
	rc   syscall.RawConn

	mu     sync.Mutex
	conns  map[uint64]*h1Conn // registered connections, by their events' id
	next   uint64
	closed bool
}

// hangupEvents are the events a connection is registered for.
const hangupEvents = syscall.EPOLLRDHUP | syscall.EPOLLONESHOT

// useHangups, cleared by tests (SLUICE_TEST_WATCH=read), makes every
// connection use the read watch.
var useHangups = true

// start makes the epoll instance and starts its goroutine, once.
func (h *hangups) start() bool {
	h.once.Do(func() {
		if !useHangups {
			return
		}
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return
		}
		if err := syscall.SetNonblock(fd, true); err != nil { // so that os.NewFile puts it in the poller
			_ = syscall.Close(fd)
			return
		}
		f := os.NewFile(uintptr(fd), "sluice-hangups")
		rc, err := f.SyscallConn()
		if err != nil {
			_ = f.Close()
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.closed {
			_ = f.Close()
			return
		}
		h.epfd, h.f, h.rc, h.ok = fd, f, rc, true
		h.conns = make(map[uint64]*h1Conn)
		go h.run()
	})
	return h.ok
}

// arm watches c's request for its client going away; false if c cannot be
// watched so (no epoll, no file descriptor, the server closed), when the read
// watch serves it. c.wmu is held.
func (h *hangups) arm(c *h1Conn) bool {
	if c.hOff || !h.start() {
		return false
	}
	if c.hArmed {
		return true // armed by an earlier request, and nothing fired since
	}
	if c.hID == 0 && !h.register(c) {
		c.hOff = true
		return false
	}
	op := syscall.EPOLL_CTL_MOD
	if !c.hAdded {
		op = syscall.EPOLL_CTL_ADD
	}
	ev := syscall.EpollEvent{Events: hangupEvents, Fd: int32(c.hID), Pad: int32(c.hID >> 32)}
	var err error
	cerr := c.rc.Control(func(fd uintptr) {
		err = syscall.EpollCtl(h.epfd, op, int(fd), &ev)
		if err == syscall.EEXIST { // a closed connection's descriptor, not yet let go of
			err = syscall.EpollCtl(h.epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev)
		}
	})
	if cerr != nil || err != nil {
		c.hOff = true
		h.forget(c) // no event will come
		return false
	}
	c.hAdded, c.hArmed = true, true
	return true
}

// register gives c an id for its events; false if there is no way to watch
// it (it has no file descriptor, or the server closed).
func (h *hangups) register(c *h1Conn) bool {
	rc := rawConnOf(c.nc) // under a LimitListener's wrapper too
	if rc == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.next++
	c.hID, c.rc = h.next, rc
	h.conns[c.hID] = c
	return true
}

// forget drops c (it ended, or cannot be watched). Its descriptor leaves the
// epoll instance when it closes; an event that comes first finds no
// connection. c.wmu is held.
func (h *hangups) forget(c *h1Conn) {
	if c.hID == 0 {
		return
	}
	h.mu.Lock()
	delete(h.conns, c.hID)
	h.mu.Unlock()
}

// run waits for events and judges each, until close.
func (h *hangups) run() {
	var evs [32]syscall.EpollEvent
	var n int
	wait := func(fd uintptr) bool {
		var err error
		n, err = syscall.EpollWait(int(fd), evs[:], 0)
		if err != nil {
			n = 0
			return err != syscall.EINTR && err != syscall.EAGAIN
		}
		return n > 0 // none: wait in the poller for the next
	}
	for {
		if err := h.rc.Read(wait); err != nil {
			return // closed
		}
		for _, ev := range evs[:n] {
			id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			h.mu.Lock()
			c := h.conns[id]
			h.mu.Unlock()
			if c != nil {
				c.hungUp()
			}
		}
	}
}

// close ends run and the epoll instance.
func (h *hangups) close() {
	h.mu.Lock()
	h.closed = true
	f := h.f
	h.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
}

// peekGone looks at c's connection without taking anything: gone when it
// reached EOF or failed; again when there is nothing to see (a spurious
// event), so that it is armed again.
func (c *h1Conn) peekGone() (gone, again bool) {
	var b [1]byte
	var n int
	var err error
	cerr := c.rc.Control(func(fd uintptr) {
		for {
			n, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if err != syscall.EINTR {
				return
			}
		}
	})
	switch {
	case cerr != nil:
		return false, false // closed here: its own goroutine ends it
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		return false, true
	case err != nil:
		return true, false
	}
	return n == 0, false
}
