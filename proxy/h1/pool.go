package h1

import (
	"bufio"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Sizes of an upstream connection's buffers. The reader holds a response head and,
// for small responses, the whole body, which is copied to the client from it.
const (
	upReadBuf  = 16 << 10
	upWriteBuf = 8 << 10
)

// upConn is one HTTP/1.1 connection to the upstream.
type UpConn struct {
	Nc      net.Conn
	Br      *bufio.Reader
	Bw      *bufio.Writer
	idleAt  time.Time     // when it was put back in the pool
	AbortFn func()        // c.clientGone, bound once so that aborting costs no closure per request
	state   atomic.Uint32 // the exchange's: upUnsent, ..., upFinishing
	// finishBy is when an exchange whose client went away must end (unix
	// ns; 0: none): the deadlines armRead and armWrite set do not go beyond.
	// finishMu orders finish (the client watch's goroutine, or the handler)
	// and finished (the handler), so that no deadline of a finished exchange
	// is set on the connection once it serves another.
	finishBy atomic.Int64
	finishMu sync.Mutex
	drain    time.Duration // how long an exchange whose HTTP/2 client went away may take to end (see clientGone)
	probe    idleProbe     // looks for bytes or a close while the connection is idle
	out      upWriter      // what bw writes to (see flushAwait)
	Sc       HeadScratch

	// The deadlines last set, so that re-arming them for every request of a busy
	// connection can be skipped (see armRead).
	readDL, writeDL time.Time
}

// deadlineSlack is how much earlier than asked a deadline may fire, as a fraction
// of the timeout: a deadline set less than timeout/deadlineSlack before the wanted
// one is kept. Re-arming a deadline costs a timer update in the runtime; on a
// busy connection this sets it about once per timeout/16 (at most 1s) instead
// of once per request.
const deadlineSlack = 16

// slack returns how much earlier than wanted a deadline for timeout may fire.
func Slack(timeout time.Duration) time.Duration { return min(timeout/deadlineSlack, time.Second) }

// armRead makes the read deadline at most slack(timeout) earlier than want.
func (c *UpConn) ArmRead(want time.Time, timeout time.Duration) {
	if by := c.finishBy.Load(); by != 0 && want.UnixNano() > by {
		want = time.Unix(0, by)
	}
	if d := want.Sub(c.readDL); d >= 0 && d < Slack(timeout) {
		return
	}
	c.readDL = want
	_ = c.Nc.SetReadDeadline(want)
}

// armWrite is armRead for writes; a zero want clears the deadline.
func (c *UpConn) ArmWrite(want time.Time, timeout time.Duration) {
	if want.IsZero() {
		if !c.writeDL.IsZero() {
			c.writeDL = time.Time{}
			_ = c.Nc.SetWriteDeadline(time.Time{})
		}
		return
	}
	if by := c.finishBy.Load(); by != 0 && want.UnixNano() > by {
		want = time.Unix(0, by)
	}
	if d := want.Sub(c.writeDL); !c.writeDL.IsZero() && d >= 0 && d < Slack(timeout) {
		return
	}
	c.writeDL = want
	_ = c.Nc.SetWriteDeadline(want)
}

// flushAwait sends what bw holds, the end of a request after which only its
// response is read, and waits for the response's first bytes (see upWriter):
// the read deadline must be armed first. Its error is the write's; a wait
// that failed shows in the read that follows.
func (c *UpConn) FlushAwait() error {
	c.out.armed = true
	err := c.Bw.Flush()
	c.out.armed = false
	return err
}

// abort closes the connection under whatever is reading or writing it.
func (c *UpConn) Abort() { _ = c.Nc.Close() }

// Where an exchange on an upConn is, for a client that goes away.
const (
	upUnsent    uint32 = iota // handed out; its request has not left
	upSent                    // the request is on its way (claimed): a client gone closes the connection
	upSentH2                  // the same for an HTTP/2 client: a client gone leaves the exchange a while to end
	upCanceled                // the client went away before the request left
	upFinishing               // an HTTP/2 client went away after it left: the exchange ends within the drain timeout
)

// clientGone is run when the exchange's client goes away. A connection whose
// request never left is left as it is, fit for another exchange (claim then
// fails). One whose request left for an HTTP/2 client (a stream reset) gets
// the pool's drain timeout for the response to end, read and dropped by the
// exchange's owner, and then serves another exchange: a stream reset
// costs no upstream connection, where closing one for each would have a
// rapid reset (CVE-2023-44487) churn through them. Any other is closed under
// the exchange, so that the upstream can stop working on it.
func (c *UpConn) clientGone() {
	if !c.state.CompareAndSwap(upUnsent, upCanceled) && !c.Finish() {
		c.Abort()
	}
}

// finish lets an exchange whose HTTP/2 client went away after its request
// left end within the drain timeout (see clientGone), and reports whether it does
// so; false for one whose client is not HTTP/2's. The response's writer calls
// it too when a write fails, as its client's going may be seen there first.
func (c *UpConn) Finish() bool {
	c.finishMu.Lock()
	defer c.finishMu.Unlock()
	if c.state.CompareAndSwap(upSentH2, upFinishing) {
		until := time.Now().Add(c.drain)
		c.finishBy.Store(until.UnixNano())
		_ = c.Nc.SetDeadline(until)
		return true
	}
	return c.state.Load() == upFinishing
}

// claim marks the request as leaving (for an HTTP/2 client: h2); false
// means the client went away first.
func (c *UpConn) Claim(h2 bool) bool {
	to := upSent
	if h2 {
		to = upSentH2
	}
	return c.state.CompareAndSwap(upUnsent, to)
}

// finishing reports whether the exchange's HTTP/2 client went away after its
// request left (see clientGone): what is left of the response is dropped.
func (c *UpConn) Finishing() bool { return c.state.Load() == upFinishing }

// finished makes a connection whose exchange ended after its client went
// away fit for the next: its deadlines, set by clientGone, are cleared.
func (c *UpConn) Finished() {
	if c.state.Load() != upFinishing {
		return // the common case: no lock
	}
	c.finishMu.Lock()
	defer c.finishMu.Unlock()
	if c.finishBy.Swap(0) != 0 {
		c.readDL, c.writeDL = time.Time{}, time.Time{}
		_ = c.Nc.SetDeadline(time.Time{})
	}
}

// connPool keeps idle HTTP/1.1 connections to one upstream, most recently used
// first (warm connections; the coldest age out at the bottom).
//
// Concurrency: safe for concurrent use; one mutex per upstream, held for a slice
// push or pop.
type ConnPool struct {
	network, addr string
	Dialer        net.Dialer
	maxIdle       int
	idleTimeout   time.Duration
	drainTimeout  time.Duration

	mu     sync.Mutex
	idle   []*UpConn
	closed bool
}

// newConnPool returns a pool of connections to addr on network (tcp or
// unix): at most maxIdle idle ones, each for at most idleTimeout; dials give up
// after dialTimeout; drainTimeout is how long an exchange whose HTTP/2 client
// went away after its request left may take to end (see upConn.clientGone).
func NewConnPool(network, addr string, dialTimeout time.Duration, maxIdle int, idleTimeout, drainTimeout time.Duration) *ConnPool {
	return &ConnPool{
		network:      network,
		addr:         addr,
		Dialer:       net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second},
		maxIdle:      maxIdle,
		idleTimeout:  idleTimeout,
		drainTimeout: drainTimeout,
		idle:         make([]*UpConn, 0, maxIdle),
	}
}

// get returns an idle connection (reused == true) or a new one; with fresh, always
// a new one. An idle connection is looked at before it is handed out (one
// non-blocking system call): one that the upstream closed, or that holds bytes
// which arrived while it sat idle (answering no request: a second response, a
// body after a bodyless one), is closed, as net/http's Transport closes a
// connection on an "unsolicited response received on idle HTTP channel".
//
// A done ctx gets its error: no connection is taken or dialled for a client
// that is gone. A non-nil slots bounds the dials in flight for one client
// connection: a dial takes a place in it first (and gives it back), and may
// find an idle connection once it has one.
func (p *ConnPool) Get(ctx context.Context, now time.Time, fresh bool, slots chan struct{}) (c *UpConn, reused bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if !fresh {
		if c := p.takeIdle(now); c != nil {
			return c, true, nil
		}
	}
	if slots != nil {
		// The wait may end with a connection returned to the pool.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		defer func() { <-slots }()
		if !fresh {
			if c := p.takeIdle(now); c != nil {
				return c, true, nil
			}
		}
	}
	// The dial is not cut when ctx ends: a connection dialled for a client
	// that went away meanwhile goes to the pool (see claim) instead of being
	// closed half-open, and the next request takes it. (The dial timeout
	// bounds it.)
	nc, err := p.Dialer.DialContext(context.WithoutCancel(ctx), p.network, p.addr)
	if err != nil {
		return nil, false, err
	}
	c = &UpConn{Nc: nc, Br: bufio.NewReaderSize(nc, upReadBuf), drain: p.drainTimeout}
	c.AbortFn = c.clientGone
	c.probe.init(nc)
	c.out.init(nc, &c.probe)
	c.Bw = bufio.NewWriterSize(&c.out, upWriteBuf)
	return c, false, nil
}

// takeIdle returns the most recently used idle connection still fit for an
// exchange at now, or nil; the unfit ones it meets are closed.
func (p *ConnPool) takeIdle(now time.Time) *UpConn {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			return nil
		}
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if !c.readDL.IsZero() && !now.Before(c.readDL) {
			// The last exchange's read deadline passed while the connection
			// sat idle; the look below would fail on it.
			c.readDL = time.Time{}
			_ = c.Nc.SetReadDeadline(time.Time{})
		}
		if now.Sub(c.idleAt) > p.idleTimeout || !c.probe.quiet() {
			c.Abort()
			continue
		}
		c.state.Store(upUnsent)
		return c
	}
}

// put returns a connection whose exchange ended cleanly, at now. It also closes the
// oldest idle connection if it has outlived the idle timeout.
func (p *ConnPool) Put(c *UpConn, now time.Time) {
	c.idleAt = now
	var stale *UpConn
	p.mu.Lock()
	if len(p.idle) > 0 && now.Sub(p.idle[0].idleAt) > p.idleTimeout {
		stale = p.idle[0]
		copy(p.idle, p.idle[1:])
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
	}
	keep := !p.closed && len(p.idle) < p.maxIdle
	if keep {
		p.idle = append(p.idle, c)
	}
	p.mu.Unlock()
	if stale != nil {
		stale.Abort()
	}
	if !keep {
		c.Abort()
	}
}

// close closes every idle connection and stops keeping new ones.
func (p *ConnPool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.Abort()
	}
}

// idleCount returns how many connections are idle.
func (p *ConnPool) IdleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
