package proxy

import (
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// LimitParams configures LimitListener.
type LimitParams struct {
	// Max is the most connections open at once (server.max_connections);
	// it must be positive.
	Max int
	// TLS says the listener's connections speak TLS (the server terminates
	// it above the listener): a connection beyond Max is then closed at once,
	// since a plain-text answer would only garble the handshake.
	TLS bool
	// OnRefuse, if set, is called for each connection refused, with Max; on
	// the accepting goroutine, as often as that happens: rate-limit what it
	// logs.
	OnRefuse func(max int)
}

// LimitListener bounds the connections open at once through ln to p.Max, for
// a server that must not run out of file descriptors (each client connection
// takes one, and each upstream connection another). A connection is counted
// from Accept until it is closed, upgraded (spliced) ones included.
//
// A connection beyond the bound is accepted and answered at once, without
// waiting for its request, with
//
//	HTTP/1.1 503 Service Unavailable
//	Connection: close
//	Retry-After: 1
//	Sluice-Error: max_connections
//
// and a line of text, then half-closed; what the client sent is read and
// dropped for up to a second (64 KiB at most), so that closing does not reset
// the connection before the answer is read. A client sees why at once and may
// retry, where a connection left in the kernel's backlog (HAProxy's maxconn,
// nginx's worker_connections) would only time out. Over TLS (p.TLS) the
// connection is closed at once instead. At most maxLingering refused
// connections linger at a time; beyond that they are closed at once too.
//
// Wrap the listener itself, under GuardListener: LimitListener(ln) first.
// Concurrency: Accept may be called from several goroutines.
func LimitListener(ln net.Listener, p LimitParams) net.Listener {
	return &limitListener{Listener: ln, p: p}
}

type limitListener struct {
	net.Listener
	p         LimitParams
	open      atomic.Int64
	lingering atomic.Int64
}

// maxLingering bounds the refused connections that linger to be read.
const maxLingering = 256

// refusedResponse is the answer beyond the bound.
var refusedResponse = func() []byte {
	body := "503 Service Unavailable (server.max_connections reached: retry later)\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n" +
		headerError + ": max_connections\r\nContent-Type: text/plain; charset=utf-8\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= int64(l.p.Max) {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		if l.p.OnRefuse != nil {
			l.p.OnRefuse(l.p.Max)
		}
		l.refuse(c)
	}
}

// refuse answers c beyond the bound and closes it, off the accepting
// goroutine.
func (l *limitListener) refuse(c net.Conn) {
	if l.p.TLS {
		c.Close()
		return
	}
	if l.lingering.Add(1) > maxLingering {
		l.lingering.Add(-1)
		c.Close()
		return
	}
	go func() {
		defer l.lingering.Add(-1)
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write(refusedResponse); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.CopyN(io.Discard, c, 64<<10)
	}()
}

// limitedConn is a connection counted by its listener until it is closed.
type limitedConn struct {
	net.Conn
	l      *limitListener
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
	}
	return c.Conn.Close()
}

// CloseWrite half-closes the connection if it can, as net/http's server does
// before it closes after an error.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
