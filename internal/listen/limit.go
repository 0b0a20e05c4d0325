package listen

import (
	"net"
	"sync/atomic"
)

// Limit bounds the connections open at once through ln to max: a
// connection beyond it is closed as soon as it is accepted (and Accept goes
// on to the next), so that a flood of connections costs file descriptors
// and memory up to the bound only; one closed frees its place. The
// front-ends (internal/front's Split) and the admin API serve through it.
// Accept may be called from several goroutines.
func Limit(ln net.Listener, max int) *Limited {
	return &Limited{Listener: ln, max: int64(max)}
}

// Limited is a listener bounded by Limit.
type Limited struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused atomic.Uint64
}

// Accept returns the next connection within the bound.
func (l *Limited) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitedConn{Conn: c, open: &l.open}, nil
		}
		l.open.Add(-1)
		l.refused.Add(1)
		c.Close()
	}
}

// Refused returns how many connections were closed beyond the bound.
func (l *Limited) Refused() uint64 { return l.refused.Load() }

// limitedConn is a connection counted in open until it is closed.
type limitedConn struct {
	net.Conn
	open   *atomic.Int64
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.open.Add(-1)
	}
	return c.Conn.Close()
}

// CloseWrite half-closes the connection if it can, as net/http's server
// does before it closes after an error.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
