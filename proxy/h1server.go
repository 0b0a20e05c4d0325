package proxy

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// H1Server is sluice's own HTTP/1.1 server in front of a Proxy: it reads
// requests with the proxy's one request parser (package h1), asks the
// proxy about each on the connection's goroutine, and writes the responses
// itself. A connection that begins with HTTP/2's preface (h2c with prior
// knowledge) is handed to net/http's server (NewServer's, on a GuardListener),
// which serves it as before.
//
// What it saves against net/http's server (see BENCHMARKS.md): no goroutine,
// context or header map per request (a connection's are reused), no
// background read per request (a request that waits — in the gate's queue,
// for the upstream — has its connection watched for the client going away
// once it has waited 10 ms, as net/http's server watches every request from
// its start; a refusal sets no timer), request fields read in place from the
// connection's buffer rather than copied into strings, and a refusal written
// from prebuilt bytes with its changing fields patched in and no allocation.
// (What it cannot save on Go's poller: a read that finds nothing before each
// wait, since the poller forgets a readiness it saw when a read begins.)
//
// The rules are net/http's server's where they matter to a client: keep-alive
// and Connection, HTTP/1.0, pipelining (requests are answered in order, one at
// a time), Expect: 100-continue (sent when the body is first read), HEAD, 204
// and 304 without a body, chunked responses with trailers, a Date on every
// response, upgrades (the proxy takes the connection over), ReadHeaderTimeout
// (a head unfinished then closes the connection silently), IdleTimeout,
// MaxHeaderBytes (431), graceful Shutdown. An unread request body is read and
// dropped up to 64 KiB within 2 s so that the connection can carry the next
// request; beyond that the connection closes.
//
// A request's fields are views of the connection's read buffer, valid until
// the request ends: nothing that handles a request may keep one (a string of
// the request) beyond it. The proxy does not; the gate's key is copied before
// the gate sees it (safeKey).
//
// Concurrency: Serve, Shutdown and Close may be called from any goroutine.
type H1Server struct {
	handler       http.Handler // what serves the requests: the Proxy (FuzzH1Server puts a recorder here)
	headerTimeout time.Duration
	idleTimeout   time.Duration
	maxHead       int // bytes of a head: MaxHeaderBytes and net/http's 4 KiB of slack

	h2         *http.Server     // net/http's server, for h2c connections
	handoff    *handoffListener // how connections reach it
	h2Listener net.Listener     // handoff, guarded
	h2Once     sync.Once        // h2 is served from the first Serve on

	clock    coarseClock
	errorLog *log.Logger // ServerParams.ErrorLog

	mu       sync.Mutex
	lns      map[net.Listener]struct{}
	conns    map[*h1Conn]struct{}
	closing  atomic.Bool
	draining chan struct{} // closed when Shutdown or Close began
	ctx      context.Context
	cancel   context.CancelFunc
}

// NewH1Server returns the server of px for p (whose Handler, if set, serves
// the h2c connections instead of px: px wrapped, say). Over TLS (p.TLS), and
// for a Proxy whose upstream speaks h2c only (ProtocolH2C), use NewServer.
func NewH1Server(px *Proxy, p ServerParams) (*H1Server, error) {
	if px == nil {
		return nil, errors.New("proxy: the own server needs a Proxy")
	}
	if p.Handler == nil {
		p.Handler = px
	}
	if p.TLS {
		return nil, errors.New("proxy: the own server reads plain text; serve TLS with NewServer")
	}
	if px.protocol == ProtocolH2C {
		// Its requests would go to net/http's HTTP/2 transport, which may
		// read them after they ended; the own server's are views of its
		// buffers (see H1Server).
		return nil, errors.New("proxy: the own server forwards over HTTP/1.1; for an h2c-only upstream, use NewServer")
	}
	h2, err := NewServer(p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &H1Server{
		handler:       px,
		headerTimeout: orDuration(p.ReadHeaderTimeout, defaultReadHeaderTimeout),
		idleTimeout:   orDuration(p.IdleTimeout, defaultIdleTimeout),
		maxHead:       orInt(p.MaxHeaderBytes, defaultMaxHeaderBytes) + 4096,
		errorLog:      p.ErrorLog,
		h2:            h2,
		handoff:       newHandoffListener(),
		lns:           make(map[net.Listener]struct{}),
		conns:         make(map[*h1Conn]struct{}),
		draining:      make(chan struct{}),
		ctx:           ctx,
		cancel:        cancel,
	}
	s.clock.start()
	s.h2Listener = GuardListener(s.handoff, p.MaxHeaderBytes)
	return s, nil
}

// serveH2 starts net/http's server on the handed-off connections, once.
func (s *H1Server) serveH2() {
	s.h2Once.Do(func() {
		go func() { _ = s.h2.Serve(s.h2Listener) }()
	})
}

// SetIdleTimeout changes IdleTimeout (0: none); call it before Serve.
func (s *H1Server) SetIdleTimeout(d time.Duration) {
	s.idleTimeout = d
	s.h2.IdleTimeout = d
}

// Serve accepts connections on ln and serves them until Shutdown or Close,
// when it returns http.ErrServerClosed; any other error of Accept that is
// not temporary ends it too. ln's connections must be plain text (TCP or a
// unix socket), under a LimitListener or none.
func (s *H1Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	s.serveH2()
	defer func() {
		s.mu.Lock()
		delete(s.lns, ln)
		s.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Temporary() || isLocal(err) { //nolint:staticcheck // as net/http's Serve
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
				case <-s.draining:
				}
				continue
			}
			return err
		}
		backoff = 0
		c := s.newConn(nc)
		if c == nil {
			continue
		}
		go c.serve()
	}
}

// newConn tracks a new connection; nil if the server is closing.
func (s *H1Server) newConn(nc net.Conn) *h1Conn {
	c := newH1Conn(s, nc)
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		_ = nc.Close()
		return nil
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	return c
}

// forget stops tracking c (it closed, or went to net/http's server).
func (s *H1Server) forget(c *h1Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Shutdown stops the server gracefully, as http.Server's Shutdown: the
// listeners close at once, idle connections close, and a connection with a
// request in flight closes once its response is written (with Connection:
// close); it returns when every connection is closed, or with ctx's error.
// h2c connections are shut down by net/http's Shutdown.
func (s *H1Server) Shutdown(ctx context.Context) error {
	s.beginClose()
	h2Done := make(chan error, 1)
	go func() { h2Done <- s.h2.Shutdown(ctx) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s.closeIdle() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	s.clock.stop()
	return <-h2Done
}

// Close closes the listeners and every connection at once.
func (s *H1Server) Close() error {
	s.beginClose()
	err := s.h2.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.clock.stop()
	return err
}

// beginClose marks the server closing and closes its listeners.
func (s *H1Server) beginClose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Swap(true) {
		return
	}
	close(s.draining)
	for ln := range s.lns {
		_ = ln.Close()
	}
	_ = s.handoff.Close()
}

// closeIdle closes the connections that wait for a request and returns how
// many connections are left.
func (s *H1Server) closeIdle() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.idle.Load() {
			_ = c.nc.SetReadDeadline(aLongTimeAgo) // its read ends; it closes
		}
	}
	return len(s.conns)
}

var aLongTimeAgo = time.Unix(1, 0)

// handoffListener hands connections the own server does not serve to
// net/http's server, as a listener it accepts from.
type handoffListener struct {
	ch     chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newHandoffListener() *handoffListener {
	return &handoffListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// hand gives c to net/http's server; false if it is closed.
func (l *handoffListener) hand(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *handoffListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return handoffAddr{} }

type handoffAddr struct{}

func (handoffAddr) Network() string { return "handoff" }
func (handoffAddr) String() string  { return "handoff" }

// coarseClock holds the current second's Date value and a clock read at
// most a second old, renewed by a ticker: no clock read per response.
type coarseClock struct {
	date atomic.Pointer[[]byte] // "Date: Mon, 02 Jan 2006 15:04:05 GMT\r\n"
	now  atomic.Int64           // Unix nanoseconds, at most a second old
	quit chan struct{}
	once sync.Once
}

func (c *coarseClock) start() {
	c.quit = make(chan struct{})
	c.tick(time.Now())
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				c.tick(now)
			case <-c.quit:
				return
			}
		}
	}()
}

func (c *coarseClock) stop() { c.once.Do(func() { close(c.quit) }) }

func (c *coarseClock) tick(now time.Time) {
	d := now.UTC().AppendFormat([]byte("Date: "), http.TimeFormat)
	d = append(d, "\r\n"...)
	c.date.Store(&d)
	c.now.Store(now.UnixNano())
}

// time returns the coarse time.
func (c *coarseClock) time() time.Time { return time.Unix(0, c.now.Load()) }

// isH2Preface reports whether b is (a beginning of) the h2 preface; full says
// it holds all of it.
func isH2Preface(b []byte) (prefix, full bool) {
	n := min(len(b), len(h2Preface))
	prefix = string(b[:n]) == h2Preface[:n]
	return prefix, prefix && n == len(h2Preface)
}
