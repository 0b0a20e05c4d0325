package permit

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// sniffTimeout bounds how long a new connection may take to send its first
// bytes, which tell its protocol.
const sniffTimeout = 10 * time.Second

// h2Preface opens every HTTP/2 connection with prior knowledge (RFC 9113
// §3.4), which gRPC clients use; an HTTP/1.1 request line cannot start so.
const h2Preface = "PRI "

// split shares one listener between the HTTP/1.1 server (the JSON API) and
// the gRPC server: it reads the first bytes of each connection, on a
// goroutine of its own so that a slow client holds up no other, and hands
// the connection, those bytes put back, to the server of its protocol.
type split struct {
	ln     net.Listener
	h1, h2 *connListener
	wg     sync.WaitGroup // the sniffing goroutines
}

func newSplit(ln net.Listener) *split {
	return &split{ln: ln, h1: newConnListener(ln.Addr()), h2: newConnListener(ln.Addr())}
}

// run accepts connections until ln is closed, then closes both sides and
// waits for the connections being sniffed.
func (s *split) run() error {
	defer s.wg.Wait()
	defer s.h1.Close()
	defer s.h2.Close()
	var backoff time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: wait a little, as
				// net/http's server does, rather than spin.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		s.wg.Add(1)
		go s.route(c)
	}
}

func isTemporary(err error) bool {
	t, ok := err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}

func (s *split) route(c net.Conn) {
	defer s.wg.Done()
	var b [len(h2Preface)]byte
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	_, err := io.ReadFull(c, b[:])
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	to := s.h1
	if string(b[:]) == h2Preface {
		to = s.h2
	}
	if !to.deliver(&prefixConn{Conn: c, prefix: b, left: len(b)}) {
		c.Close()
	}
}

// prefixConn is a connection whose first bytes were read already: Read
// returns them first.
type prefixConn struct {
	net.Conn
	prefix [len(h2Preface)]byte
	left   int
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.left > 0 {
		n := copy(p, c.prefix[len(c.prefix)-c.left:])
		c.left -= n
		return n, nil
	}
	return c.Conn.Read(p)
}

// connListener is a net.Listener fed by split.
type connListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newConnListener(a net.Addr) *connListener {
	return &connListener{addr: a, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }
