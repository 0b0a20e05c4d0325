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

// Conn is one HTTP/1.1 connection to the upstream, handed out by a Pool for
// one exchange at a time.
//
// Concurrency: one goroutine at a time runs an exchange on it (reads R,
// writes W); ClientGone, Finish and Abort may be called from another.
type Conn struct {
	Net     net.Conn
	R       *bufio.Reader // reads Net; holds a response head and, for small responses, the whole body
	W       *bufio.Writer // writes Net (see FlushAwait)
	Scratch Scratch       // memory for parsing this connection's response heads
	AbortFn func()        // c.ClientGone, bound once so that aborting costs no closure per request

	idleAt time.Time     // when it was put back in the pool
	state  atomic.Uint32 // the exchange's: upUnsent, ..., upFinishing
	// finishBy is when an exchange whose client went away must end (unix
	// ns; 0: none): the deadlines ArmRead and ArmWrite set do not go beyond.
	// finishMu orders Finish (the client watch's goroutine, or the handler)
	// and Finished (the handler), so that no deadline of a finished exchange
	// is set on the connection once it serves another.
	finishBy atomic.Int64
	finishMu sync.Mutex
	pool     *Pool     // for its finish timeout and its count of abandoned exchanges
	probe    idleProbe // looks for bytes or a close while the connection is idle
	out      upWriter  // what W writes to (see FlushAwait)

	// The deadlines last set, so that re-arming them for every request of a busy
	// connection can be skipped (see ArmRead).
	readDL, writeDL time.Time
}

// deadlineSlack is how much earlier than asked a deadline may fire, as a fraction
// of the timeout: a deadline set less than timeout/deadlineSlack before the wanted
// one is kept. Re-arming a deadline costs a timer update in the runtime; on a
// busy connection this sets it about once per timeout/16 (at most 1s) instead
// of once per request.
const deadlineSlack = 16

// Slack returns how much earlier than wanted a deadline for timeout may fire.
func Slack(timeout time.Duration) time.Duration { return min(timeout/deadlineSlack, time.Second) }

// ArmRead makes the read deadline at most Slack(timeout) earlier than want.
func (c *Conn) ArmRead(want time.Time, timeout time.Duration) {
	if by := c.finishBy.Load(); by != 0 && want.UnixNano() > by {
		want = time.Unix(0, by)
	}
	if d := want.Sub(c.readDL); d >= 0 && d < Slack(timeout) {
		return
	}
	c.readDL = want
	_ = c.Net.SetReadDeadline(want)
}

// ArmWrite is ArmRead for writes; a zero want clears the deadline.
func (c *Conn) ArmWrite(want time.Time, timeout time.Duration) {
	if want.IsZero() {
		if !c.writeDL.IsZero() {
			c.writeDL = time.Time{}
			_ = c.Net.SetWriteDeadline(time.Time{})
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
	_ = c.Net.SetWriteDeadline(want)
}

// FlushAwait sends what W holds, the end of a request after which only its
// response is read, and waits for the response's first bytes (see upWriter):
// the read deadline must be armed first. Its error is the write's; a wait
// that failed shows in the read that follows.
func (c *Conn) FlushAwait() error {
	c.out.armed = true
	err := c.W.Flush()
	c.out.armed = false
	return err
}

// Abort closes the connection under whatever is reading or writing it.
func (c *Conn) Abort() { _ = c.Net.Close() }

// Where an exchange on a Conn is, for a client that goes away.
const (
	upUnsent    uint32 = iota // handed out; its request has not left
	upSent                    // the request is on its way (claimed): a client gone lets the exchange finish
	upStream                  // the same for a stream (an upgrade, server-sent events): a client gone closes the connection
	upCanceled                // the client went away before the request left
	upFinishing               // the client went away after the request left: the exchange ends within the finish timeout
)

// ClientGone is run when the exchange's client goes away. A connection whose
// request never left is left as it is, fit for another exchange (claim then
// fails). One whose request left gets the pool's finish timeout for the
// response to end, read and dropped by the exchange's owner, and then serves
// another exchange (see Finish). A stream's is closed under the exchange.
//
// Why an abandoned exchange is finished rather than cut: an upstream goes on
// working on a request whose connection closed (a thread pool, a handler
// that does not watch its context, a CPU-bound job), so that a slot of the
// concurrency limit given back when the client leaves would let the next
// request in beside work the upstream still does, and the upstream would see
// more than the limit. Finished, the exchange holds its slot until the
// upstream's work ends, as far as the proxy can see: its response's end. It
// also costs no upstream connection, where closing one for each would have
// a rapid reset (CVE-2023-44487) churn through them.
func (c *Conn) ClientGone() {
	if !c.state.CompareAndSwap(upUnsent, upCanceled) && !c.Finish() {
		c.Abort()
	}
}

// Finish lets an exchange whose client went away after its request left end
// within the finish timeout (see ClientGone), and reports whether it does so;
// false for a stream's. The response's writer calls it too when a write
// fails, as its client's going may be seen there first.
//
// The deadlines ArmRead and ArmWrite set from now on end by then. The read
// deadline armed already ends before it (each is at most the upstream
// timeout away, as the finish timeout is), and a write deadline is set.
func (c *Conn) Finish() bool {
	c.finishMu.Lock()
	defer c.finishMu.Unlock()
	if c.state.CompareAndSwap(upSent, upFinishing) {
		until := time.Now().Add(c.pool.finishTimeout)
		c.finishBy.Store(until.UnixNano())
		_ = c.Net.SetWriteDeadline(until)
		c.pool.abandoned.Add(1)
		c.pool.finishing.Add(1)
		return true
	}
	return c.state.Load() == upFinishing
}

// Claim marks the request as leaving; stream: its exchange is cut, not
// finished, when the client goes (an upgrade, or a request that holds no
// slot for the upstream's work to keep). False means the client went away
// first.
func (c *Conn) Claim(stream bool) bool {
	to := upSent
	if stream {
		to = upStream
	}
	return c.state.CompareAndSwap(upUnsent, to)
}

// Stream marks the exchange as a stream's from its response head on (server-
// sent events): a client gone from now closes the connection. False means
// the client went away already (the exchange is finishing): the caller cuts it.
func (c *Conn) Stream() bool {
	return c.state.CompareAndSwap(upSent, upStream) || c.state.Load() == upStream
}

// Finishing reports whether the exchange's client went away after its
// request left (see ClientGone): what is left of the response is dropped.
func (c *Conn) Finishing() bool { return c.state.Load() == upFinishing }

// Finished ends the exchange on c. A connection whose exchange ended after
// its client went away is made fit for the next: its deadlines, bounded by
// Finish, are cleared, and the pool counts one exchange fewer finishing.
func (c *Conn) Finished() {
	if c.state.Load() != upFinishing {
		return // the common case: no lock
	}
	c.finishMu.Lock()
	defer c.finishMu.Unlock()
	if c.finishBy.Swap(0) != 0 {
		c.readDL, c.writeDL = time.Time{}, time.Time{}
		_ = c.Net.SetDeadline(time.Time{})
		c.pool.finishing.Add(-1)
	}
}

// Pool keeps idle HTTP/1.1 connections to one upstream, most recently used
// first (warm connections; the coldest age out at the bottom).
//
// Concurrency: safe for concurrent use; one mutex per upstream, held for a slice
// push or pop.
type Pool struct {
	network, addr string
	Dialer        net.Dialer
	maxIdle       int
	idleTimeout   time.Duration
	finishTimeout time.Duration

	// abandoned counts the exchanges whose client went away after their
	// request left (see Conn.ClientGone); finishing those not ended yet.
	abandoned atomic.Uint64
	finishing atomic.Int64

	mu     sync.Mutex
	idle   []*Conn
	closed bool
}

// NewPool returns a pool of connections to addr on network (tcp or
// unix): at most maxIdle idle ones, each for at most idleTimeout; dials give up
// after dialTimeout; finishTimeout is how long an exchange whose client went
// away after its request left may take to end (see Conn.ClientGone).
func NewPool(network, addr string, dialTimeout time.Duration, maxIdle int, idleTimeout, finishTimeout time.Duration) *Pool {
	return &Pool{
		network:       network,
		addr:          addr,
		Dialer:        net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second},
		maxIdle:       maxIdle,
		idleTimeout:   idleTimeout,
		finishTimeout: finishTimeout,
		idle:          make([]*Conn, 0, maxIdle),
	}
}

// Get returns an idle connection (reused == true) or a new one; with fresh, always
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
func (p *Pool) Get(ctx context.Context, now time.Time, fresh bool, slots chan struct{}) (c *Conn, reused bool, err error) {
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
	c = &Conn{Net: nc, R: bufio.NewReaderSize(nc, upReadBuf), pool: p}
	c.AbortFn = c.ClientGone
	c.probe.init(nc)
	c.out.init(nc, &c.probe)
	c.W = bufio.NewWriterSize(&c.out, upWriteBuf)
	return c, false, nil
}

// takeIdle returns the most recently used idle connection still fit for an
// exchange at now, or nil; the unfit ones it meets are closed.
func (p *Pool) takeIdle(now time.Time) *Conn {
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
			_ = c.Net.SetReadDeadline(time.Time{})
		}
		if now.Sub(c.idleAt) > p.idleTimeout || !c.probe.quiet() {
			c.Abort()
			continue
		}
		c.state.Store(upUnsent)
		return c
	}
}

// Put returns a connection whose exchange ended cleanly, at now. It also closes the
// oldest idle connection if it has outlived the idle timeout.
func (p *Pool) Put(c *Conn, now time.Time) {
	c.idleAt = now
	var stale *Conn
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

// Close closes every idle connection and stops keeping new ones.
func (p *Pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.Abort()
	}
}

// MaxIdle returns how many idle connections p keeps at most.
func (p *Pool) MaxIdle() int { return p.maxIdle }

// IdleTimeout returns how long p keeps a connection idle at most.
func (p *Pool) IdleTimeout() time.Duration { return p.idleTimeout }

// Abandoned returns how many exchanges' clients went away after their
// request left, so far, and how many of them are finishing now (see
// Conn.ClientGone): each holds its request's place until it ends.
func (p *Pool) Abandoned() (total uint64, finishing int) {
	return p.abandoned.Load(), int(p.finishing.Load())
}

// IdleCount returns how many connections are idle.
func (p *Pool) IdleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
