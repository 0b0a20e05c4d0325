package front

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/listen"
	"github.com/sluicehq/sluice/internal/replay"
)

// firstTimeout bounds how long a new connection may take to send its first
// bytes, which tell its protocol, and on TCP, for a gRPC connection, the
// headers of its first stream, which carry the token.
const firstTimeout = 10 * time.Second

// DefaultMaxConns is the most connections a front-end's listener holds at
// once when SplitParams.MaxConns is 0.
const DefaultMaxConns = 1024

// h2Preface opens every HTTP/2 connection with prior knowledge (RFC 9113
// §3.4), which gRPC clients use; an HTTP/1.1 request line cannot start so.
const h2Preface = "PRI "

// SplitParams configures a Split.
type SplitParams struct {
	// MaxConns bounds the connections open at once, those still being
	// read included (listen.Limit): a connection beyond it is closed at
	// once. Default DefaultMaxConns.
	MaxConns int
	// HTTP1 serves HTTP/1.1 connections on H1; without it they are closed.
	HTTP1 bool
}

// Split serves a front-end's listener to its servers: gRPC (HTTP/2 with
// prior knowledge) on H2 and, with SplitParams.HTTP1, HTTP/1.1 on H1. It
// bounds the connections open at once; reads the first bytes of each new
// connection, on a goroutine of its own so that a slow client holds up no
// other, within firstTimeout; and hands the connection, those bytes put
// back, to the server of its protocol. On a listener that needs the token
// (TCP), a gRPC connection reaches the gRPC server only once the headers of
// its first stream carried it (Door.authenticate): until then it holds one
// goroutine and a few KiB, and a connection without it is answered
// UNAUTHENTICATED and closed. Build it with Door.Split.
type Split struct {
	ln     *listen.Limited
	door   *Door
	h1, h2 *connListener  // h1 is nil without SplitParams.HTTP1
	wg     sync.WaitGroup // the goroutines reading first bytes
}

// Split returns the Split of ln, the listener the door serves.
func (d *Door) Split(ln net.Listener, p SplitParams) *Split {
	if p.MaxConns <= 0 {
		p.MaxConns = DefaultMaxConns
	}
	s := &Split{ln: listen.Limit(ln, p.MaxConns), door: d, h2: newConnListener(ln.Addr())}
	if p.HTTP1 {
		s.h1 = newConnListener(ln.Addr())
	}
	return s
}

// H1 is the listener of the HTTP/1.1 server; nil without SplitParams.HTTP1.
func (s *Split) H1() net.Listener {
	if s.h1 == nil {
		return nil
	}
	return s.h1
}

// H2 is the listener of the gRPC server.
func (s *Split) H2() net.Listener { return s.h2 }

// Run accepts connections until the listener is closed, then closes H1 and
// H2 and waits for the connections being read.
func (s *Split) Run() error {
	defer s.wg.Wait()
	if s.h1 != nil {
		defer s.h1.Close()
	}
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

func (s *Split) route(c net.Conn) {
	defer s.wg.Done()
	var b [len(h2Preface)]byte
	_ = c.SetReadDeadline(time.Now().Add(firstTimeout))
	_, err := io.ReadFull(c, b[:])
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	to, read := s.h1, b[:]
	if string(b[:]) == h2Preface {
		to = s.h2
		if s.door.NeedsToken() {
			if read = s.door.authenticate(c, read); read == nil {
				return // closed
			}
		}
	}
	if to == nil || !to.deliver(&replay.Conn{Conn: c, Head: read}) {
		c.Close()
	}
}

// connListener is a net.Listener fed by a Split.
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
