package listen

import (
	"errors"
	"io/fs"
	"net"
	"sync"
)

// Errors of Door.Open.
var (
	// ErrClosed: the door was closed (the server shut down) before Open.
	ErrClosed = errors.New("closed")
	// ErrOpenTwice: Open was called a second time.
	ErrOpenTwice = errors.New("served twice")
)

// Door is where a server listens and who may come in: its address, the
// mode of its socket, its Guard, and the listener it serves once it
// serves. Build it with NewDoor; it is safe for concurrent use.
type Door struct {
	*Guard
	addr string
	mode fs.FileMode

	mu     sync.Mutex
	ln     net.Listener // served; nil before Open
	open   bool
	closed bool
}

// NewDoor returns the door of a server that will listen on addr (a unix
// socket created with mode, 0 for DefaultSocketMode) with token tok:
// ErrNoToken when addr is TCP and tok is "".
func NewDoor(addr string, mode fs.FileMode, tok string) (*Door, error) {
	g, err := NewGuard(addr, tok)
	if err != nil {
		return nil, err
	}
	return &Door{Guard: g, addr: addr, mode: mode}, nil
}

// Listen opens the door's address (Listen).
func (d *Door) Listen() (net.Listener, error) { return Listen(d.addr, d.mode) }

// Open takes ln as the listener served. It closes ln and fails with
// ErrClosed after Close, ErrOpenTwice on a second call, or ErrNoToken when
// ln is TCP and there is no token (Guard.Bind).
func (d *Door) Open(ln net.Listener) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	switch {
	case d.closed:
		err = ErrClosed
	case d.open:
		err = ErrOpenTwice
	default:
		err = d.Bind(ln)
	}
	if err != nil {
		ln.Close()
		return err
	}
	d.open, d.ln = true, ln
	return nil
}

// Addr returns the address served, nil before Open.
func (d *Door) Addr() net.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ln == nil {
		return nil
	}
	return d.ln.Addr()
}

// Close closes the listener served, if any, and refuses a later Open.
func (d *Door) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.ln != nil {
		d.ln.Close()
	}
}
