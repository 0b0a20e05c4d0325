package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/internal/replay"
	"github.com/sluicehq/sluice/proxy/h1"
)

// Sizes of a client connection's buffers.
const (
	h1ReadBuf  = 4 << 10
	h1WriteBuf = 4 << 10
)

// Bounds of what is read of a request body nobody read, so that the
// connection can carry the next request: at most this much, within this
// long; else the connection closes (net/http reads up to 256 KiB).
const (
	unreadBodyMax     = 64 << 10
	unreadBodyTimeout = 2 * time.Second
)

var h1ReadBufs = sync.Pool{New: func() any { b := make([]byte, h1ReadBuf); return &b }}

// h1ConnKey keys a connection of the own server in its requests' context.
type h1ConnKey struct{}

// h1Conn is one client connection of an H1Server, served by one goroutine.
type h1Conn struct {
	s      *H1Server
	nc     net.Conn
	remote string
	idle   atomic.Bool // waiting for a request (Shutdown closes it then)

	rbuf      *[]byte // the read buffer; *rbuf[r:w] are read and not consumed
	r, w      int
	hs, he    int // the current request's head: (*rbuf)[hs:he], never written while it is served
	readDL    time.Time
	dlSet     atomic.Bool // the handler set a read deadline since the loop's last
	lastPost  bool        // the last request was a POST: leading empty lines are skipped
	yieldNext bool        // the last answer was a refusal: yield before reading the next request

	head    h1.RequestHead
	req     *http.Request // reused by every request; its context is the connection's
	url     url.URL
	hdr     http.Header
	vals    []string
	body    h1Body
	rw      h1Writer
	trailer http.Header

	ctx    context.Context // the connection's; cancelled when the client is gone
	cancel context.CancelFunc
	rctx   reqContext // the requests' context: ctx, a wait on which asks for the watch
	watch  clientWatch

	// The client-gone watch of a request that waits for something (see
	// wantWatch) and whose body is read, or that has none (see watchLater): a
	// read of the connection, begun once both hold and clientWatchDelay has
	// passed.
	wmu      sync.Mutex
	wtimer   *time.Timer
	wWant    atomic.Bool   // the request waits for something: the watch is wanted
	wBody    bool          // the request's body is read, or it has none
	wOn      bool          // the watch may begin
	wRunning chan struct{} // closed when the watch's read ended; nil if none runs
	wByte    [1]byte       // what the watch read of the next request
	wGot     bool

	key      string // the last key given to the gate, a copy of its own
	hijacked bool
	handed   bool // handed to net/http's server
}

func newH1Conn(s *H1Server, nc net.Conn) *h1Conn {
	c := &h1Conn{s: s, nc: nc, remote: nc.RemoteAddr().String(), hdr: make(http.Header)}
	if _, ok := nc.RemoteAddr().(*net.UnixAddr); ok || c.remote == "" {
		c.remote = "@" // as net/http's server says a unix socket's peer is
	}
	c.ctx, c.cancel = context.WithCancel(context.WithValue(s.ctx, h1ConnKey{}, c))
	c.rctx = reqContext{Context: c.ctx, c: c}
	c.watch.served, c.watch.want, c.watch.closeClient = &c.rctx, c.wantWatch, c.closeGone
	c.req, _ = http.NewRequestWithContext(&c.rctx, http.MethodGet, "/", nil)
	c.body.c = c
	c.rw.c = c
	return c
}

// serve reads and answers the connection's requests until it closes.
func (c *h1Conn) serve() {
	defer c.finish()
	c.rbuf = h1ReadBufs.Get().(*[]byte)
	first := true
	for {
		herr, err := c.readHead(first)
		if err != nil {
			if herr != nil {
				c.refuseHead(herr)
			}
			return
		}
		if first {
			first = false
			if c.handed {
				return
			}
		}
		if !c.serveRequest() {
			return
		}
	}
}

// finish closes the connection, unless it was taken over, and gives back its
// buffers.
func (c *h1Conn) finish() {
	c.s.forget(c)
	c.cancel()
	if !c.hijacked && !c.handed {
		_ = c.nc.Close()
	}
	if c.rbuf != nil && !c.handed {
		h1ReadBufs.Put(c.rbuf)
		c.rbuf = nil
	}
	c.rw.release()
}

// read reads the connection into p; a failure that is not a timeout means
// the client is gone.
func (c *h1Conn) read(p []byte) (int, error) {
	n, err := c.nc.Read(p)
	if err != nil && !isTimeout(err) {
		c.clientGone()
	}
	return n, err
}

// closeGone closes the socket of a client gone while its exchange is held
// (clientWatch.closeClient), unless the connection was taken over.
func (c *h1Conn) closeGone() {
	c.wmu.Lock()
	taken := c.hijacked
	c.wmu.Unlock()
	if !taken {
		_ = c.nc.Close()
	}
}

// clientGone tells the request in flight, if any, that its client is gone.
func (c *h1Conn) clientGone() {
	c.watch.clientGone()
	c.cancel()
}

// fill reads more into the buffer, making room first; it never writes the
// head of the request in flight ((*rbuf)[hs:he]).
func (c *h1Conn) fill() error {
	if c.w == len(*c.rbuf) {
		c.makeRoom()
	}
	n, err := c.read((*c.rbuf)[c.w:])
	c.w += n
	return err
}

// makeRoom makes room after the unread bytes: moves them down to the end of
// the head in flight (or to the start between requests), or, when that
// leaves none, to a buffer twice as large (the old one is left to the
// collector: the head's views may still point into it).
func (c *h1Conn) makeRoom() {
	b := *c.rbuf
	floor := c.he
	if c.r > floor {
		c.w = floor + copy(b[floor:], b[c.r:c.w])
		c.r = floor
	}
	if c.w < len(b) {
		return
	}
	nb := make([]byte, 2*len(b))
	copy(nb, b)
	c.rbuf = &nb
}

// view returns s of the head in flight as a string, without copying: valid
// until the request ends (see H1Server).
func (c *h1Conn) view(s h1.Span) string {
	if s.Empty() {
		return ""
	}
	b := (*c.rbuf)[c.hs:c.he]
	return unsafe.String(&b[s.Off], int(s.End-s.Off))
}

// readHead reads the next request head into (*rbuf)[hs:he] and parses it
// into c.head. err is set when the connection must end: herr, when set, is
// the answer to give first (a malformed head, one too large).
func (c *h1Conn) readHead(first bool) (herr *h1.HeadError, err error) {
	c.hs, c.he = 0, 0
	if c.r == c.w {
		c.r, c.w = 0, 0
	} else if c.r > 0 {
		c.w = copy(*c.rbuf, (*c.rbuf)[c.r:c.w])
		c.r = 0
	}
	skip := 0
	if c.lastPost {
		skip = 4
	}
	searched, headDL := 0, false
	yield := c.yieldNext && !first
	c.yieldNext = false
	for {
		b := (*c.rbuf)[c.r:c.w]
		for skip > 0 && len(b) > 0 && (b[0] == '\r' || b[0] == '\n') {
			c.r++
			b = b[1:]
			skip--
		}
		if len(b) > 0 {
			skip = 0
			if first {
				if prefix, full := isH2Preface(b); prefix && !c.s.h2c() {
					// refused below, as a version this server does not take
				} else if full {
					c.handOff()
					return nil, errHandedOff
				} else if prefix {
					goto more
				}
			}
			n := h1.HeadEnd(b, &searched)
			if n > c.s.maxHead || n < 0 && len(b) >= c.s.maxHead {
				return h1.ErrReqTooLarge, h1.ErrReqTooLarge
			}
			if n >= 0 {
				c.hs, c.he = c.r, c.r+n
				c.r = c.he
				c.idle.Store(false)
				if herr := c.head.Parse((*c.rbuf)[c.hs:c.he]); herr != nil {
					return herr, herr
				}
				return nil, nil
			}
		}
	more:
		switch {
		case c.r == c.w:
			// Nothing of a request yet: the connection is idle.
			c.idle.Store(true)
			if c.s.closing.Load() {
				return nil, http.ErrServerClosed
			}
			c.armIdle()
			if yield {
				// A refusal just went out, microseconds after its request
				// came: the next request cannot be here yet. Let the
				// goroutines that can work run first, so that under load
				// the read below finds it more often than nothing (a system
				// call for nothing, a wait, a wake by the poller). Measured
				// side by side (BENCHMARKS.md, issue 22): 7 to 11 % less CPU
				// per refusal; after a forwarded response it bought nothing.
				yield = false
				runtime.Gosched()
			}
		case !headDL:
			// A head has begun: it must be whole within ReadHeaderTimeout.
			c.idle.Store(false)
			headDL = true
			c.setReadDeadline(time.Now().Add(c.s.headerTimeout))
		}
		if c.r == c.w {
			c.r, c.w = 0, 0
		}
		if err := c.fill(); err != nil {
			return nil, err // closed, or a head unfinished in time: silently, as net/http
		}
	}
}

var errHandedOff = errors.New("proxy: connection handed to net/http's server")

// h2c reports whether HTTP/2 with prior knowledge is served.
func (s *H1Server) h2c() bool { return s.h2.Protocols != nil && s.h2.Protocols.UnencryptedHTTP2() }

// handOff gives the connection, with what was read of it, to net/http's
// server.
func (c *h1Conn) handOff() {
	b := (*c.rbuf)[c.r:c.w]
	rc := &replay.Conn{Conn: c.nc, Head: append([]byte(nil), b...)}
	c.setReadDeadline(time.Time{})
	if !c.s.handoff.hand(rc) {
		_ = c.nc.Close() // the server is closing
	}
	h1ReadBufs.Put(c.rbuf)
	c.rbuf = nil
	c.handed = true
}

// armIdle sets the read deadline for a connection waiting for a request:
// IdleTimeout from now, re-armed only when it moved by more than its slack
// (so that a busy connection sets it about once a second, not per request).
func (c *h1Conn) armIdle() {
	if c.s.idleTimeout <= 0 {
		if !c.readDL.IsZero() || c.dlSet.Swap(false) {
			c.setReadDeadline(time.Time{})
		}
		return
	}
	now := c.s.clock.time() // at most a second old: a tenth of a timeout of 10 s or more
	if c.s.idleTimeout < 10*time.Second {
		now = time.Now()
	}
	want := now.Add(c.s.idleTimeout)
	if d := want.Sub(c.readDL); !c.dlSet.Swap(false) && !c.readDL.IsZero() && d >= 0 && d < h1.Slack(c.s.idleTimeout) {
		return
	}
	c.setReadDeadline(want)
}

// setReadDeadline sets the connection's read deadline and notes it.
func (c *h1Conn) setReadDeadline(t time.Time) {
	c.readDL = t
	_ = c.nc.SetReadDeadline(t)
}

// refuseHead answers a head the parser refused and closes the connection.
func (c *h1Conn) refuseHead(herr *h1.HeadError) {
	c.rw.reset(false, true)
	c.rw.writeError(herr.Status, herr.Why)
	c.lingerClose()
}

// lingerClose half-closes the connection after its last answer and reads what
// the client still sends for a while (at most 64 KiB within a second), so that
// closing does not reset the connection before the answer is read.
func (c *h1Conn) lingerClose() {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	c.setReadDeadline(time.Now().Add(time.Second))
	buf := (*c.rbuf)[:cap(*c.rbuf)]
	for n := 0; n < 64<<10; {
		k, err := c.nc.Read(buf)
		n += k
		if err != nil {
			return
		}
	}
}

// serveRequest serves the request whose head was read; false means the
// connection ends.
func (c *h1Conn) serveRequest() (keep bool) {
	h := &c.head
	c.buildRequest()
	c.rw.reset(h.Minor == 0, h.Close)
	c.lastPost = c.req.Method == http.MethodPost
	if c.body.done {
		c.watchLater()
	}
	ok := c.handle()
	c.stopWatch()
	if !ok {
		return false
	}
	keep = c.rw.finish()
	c.yieldNext = c.rw.refused
	if keep && !c.body.done {
		keep = c.body.discard()
	}
	unread := !c.body.done
	c.endRequest()
	if !keep {
		if c.rw.err == nil && unread {
			// The client may still be sending the body: closing on unread
			// bytes would reset the connection, maybe before it read the
			// answer.
			c.lingerClose()
		}
		return false
	}
	return !c.s.closing.Load()
}

// clientWatchDelay is how long a request waits before its connection is
// watched for the client going away: most requests end sooner, and need no
// watch (net/http's server starts one, a goroutine and a read, for every
// request).
// (A variable: the tests watch every request at once, as net/http does.)
var clientWatchDelay = servedWatchDelay

// servedWatchDelay is clientWatchDelay as the daemon serves.
const servedWatchDelay = 10 * time.Millisecond

// reqContext is the context of a connection's requests: the connection's,
// cancelled when the client goes away, but a wait for it to end (Done) asks
// for the client-gone watch first (wantWatch). So a request answered without
// waiting for anything, a refusal above all, costs no watch and no timer;
// one that waits (in the gate's queue, for a pacing delay, for the upstream:
// watchClient asks too) is watched as net/http's server watches every
// request.
type reqContext struct {
	context.Context
	c *h1Conn
}

// Done is the connection's context's Done, once the watch is asked for.
func (x *reqContext) Done() <-chan struct{} {
	x.c.wantWatch()
	return x.Context.Done()
}

// wantWatch asks for the client-gone watch of the request in flight: it
// begins once the request's body is read (at once if it has none) and
// clientWatchDelay has passed, unless the request ended first. Safe to call
// from any goroutine, as often as wanted.
func (c *h1Conn) wantWatch() {
	if c.wWant.Load() {
		return
	}
	c.wmu.Lock()
	c.wWant.Store(true)
	c.armWatchLocked()
	c.wmu.Unlock()
}

// watchLater says the request's body is read, or that it has none: from
// then, nothing else reads the connection until the request ends, and the
// watch may begin once it is wanted (see wantWatch).
func (c *h1Conn) watchLater() {
	c.wmu.Lock()
	c.wBody = true
	c.armWatchLocked()
	c.wmu.Unlock()
}

// armWatchLocked arranges for the watch to begin in clientWatchDelay once it
// is wanted and the body is read. c.wmu is held.
func (c *h1Conn) armWatchLocked() {
	if c.wOn || c.hijacked || !c.wBody || !c.wWant.Load() {
		return
	}
	c.wOn = true
	if c.wtimer == nil {
		c.wtimer = time.AfterFunc(clientWatchDelay, c.watch1)
	} else {
		c.wtimer.Reset(clientWatchDelay)
	}
}

// watch1 is the watch: one read of the connection. Bytes mean the client is
// there (its next request, kept for later); a failure that is not the stop's
// deadline means it is gone.
func (c *h1Conn) watch1() {
	c.wmu.Lock()
	if !c.wOn || c.wRunning != nil {
		c.wmu.Unlock()
		return
	}
	done := make(chan struct{})
	c.wRunning = done
	c.wmu.Unlock()
	defer close(done)
	n, err := c.nc.Read(c.wByte[:])
	if n == 1 {
		c.wGot = true
		return
	}
	if err != nil && !isTimeout(err) {
		c.clientGone()
	}
}

// stopWatch ends the watch, waiting for its read to end, and keeps what it
// read.
func (c *h1Conn) stopWatch() {
	c.wmu.Lock()
	c.wBody = false
	c.wWant.Store(false)
	if !c.wOn {
		c.wmu.Unlock()
		return
	}
	c.wOn = false
	c.wtimer.Stop()
	running := c.wRunning
	c.wRunning = nil
	if running != nil {
		_ = c.nc.SetReadDeadline(aLongTimeAgo) // cut the read short
	}
	c.wmu.Unlock()
	if running == nil {
		return
	}
	<-running
	c.dlSet.Store(true) // the next wait re-arms its deadline
	_ = c.nc.SetReadDeadline(c.readDL)
	if c.wGot {
		c.wGot = false
		if c.w == len(*c.rbuf) {
			c.makeRoom()
		}
		(*c.rbuf)[c.w] = c.wByte[0]
		c.w++
	}
}

// handle runs the proxy on the request; false means the connection was taken
// over (an upgrade) or must end at once: the proxy aborted the response
// (http.ErrAbortHandler: a response cut short must not look whole), or
// panicked.
func (c *h1Conn) handle() (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler && c.s.errorLog != nil {
				c.s.errorLog.Printf("proxy: panic serving %s: %v", c.remote, v)
			}
			c.rw.err = errAborted
			ok = false
		}
	}()
	c.s.handler.ServeHTTP(&c.rw, c.req)
	return !c.hijacked
}

var errAborted = errors.New("proxy: response aborted")

// endRequest forgets the request: its fields and header maps.
func (c *h1Conn) endRequest() {
	clear(c.hdr)
	clear(c.vals)
	c.vals = c.vals[:0]
	c.rw.clearHeader()
	if c.trailer != nil {
		clear(c.trailer)
	}
	c.req.Trailer = nil
	if poisonHeads {
		b := (*c.rbuf)[c.hs:c.he]
		for i := range b {
			b[i] = 'X'
		}
	}
	c.hs, c.he = 0, 0
}

// poisonHeads, set by tests, overwrites each head once its request ended,
// so that a string of a request kept beyond it shows.
var poisonHeads bool

// Methods whose names are kept as constants.
var methods = [...]string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
	http.MethodOptions, http.MethodPatch, http.MethodConnect, http.MethodTrace}

var chunkedTE = []string{"chunked"}

var noCacheValue = one("no-cache")

// buildRequest makes c.req the request of c.head: its fields are views of
// the head.
func (c *h1Conn) buildRequest() {
	h := &c.head
	b := (*c.rbuf)[c.hs:c.he]
	r := c.req
	r.Method = c.view(h.Method)
	for _, m := range methods {
		if m == r.Method {
			r.Method = m
			break
		}
	}
	r.ProtoMajor, r.ProtoMinor = 1, int(h.Minor)
	r.Proto = "HTTP/1.1"
	if h.Minor == 0 {
		r.Proto = "HTTP/1.0"
	}
	r.Host = c.view(h.Host)
	r.RemoteAddr = c.remote
	r.Close = h.Close
	r.TLS, r.Form, r.PostForm, r.MultipartForm, r.Trailer, r.GetBody, r.Response = nil, nil, nil, nil, nil, nil, nil
	c.url = url.URL{}
	r.URL = &c.url
	switch h.Form {
	case h1.FormOrigin:
		r.RequestURI = c.view(h.Target)
		c.url.Path, c.url.RawQuery, _ = cutString(r.RequestURI, '?')
	case h1.FormAbsolute:
		// The proxy forwards RequestURI's path and query: for absolute-form,
		// they are the part after the authority.
		r.RequestURI = c.view(h.URI)
		if r.RequestURI == "" || r.RequestURI[0] != '/' {
			r.RequestURI = "/" + r.RequestURI
		}
		c.url.Host = r.Host
		c.url.Path, c.url.RawQuery, _ = cutString(r.RequestURI, '?')
	default: // "*", or CONNECT's authority
		r.RequestURI = c.view(h.Target)
		if h.Form == h1.FormAsterisk {
			c.url.Path = "*"
		} else {
			c.url.Host = r.RequestURI
		}
	}
	hdr := c.hdr
	r.Header = hdr
	for _, f := range h.Fields {
		name := f.Name.Of(b)
		if h1.EqualFold(name, "host") {
			continue // net/http's server keeps it in Host alone
		}
		k := c.fieldKey(f.Name)
		c.vals = append(c.vals, c.view(f.Value))
		i := len(c.vals) - 1
		if old, ok := hdr[k]; ok {
			hdr[k] = append(old[:len(old):len(old)], c.vals[i])
		} else {
			hdr[k] = c.vals[i : i+1 : i+1]
		}
	}
	if p := hdr["Pragma"]; len(p) > 0 && p[0] == "no-cache" {
		if _, ok := hdr["Cache-Control"]; !ok {
			hdr["Cache-Control"] = noCacheValue // as net/http's fixPragmaCacheControl
		}
	}
	c.body.reset(h)
	r.TransferEncoding = nil
	switch {
	case h.Chunked:
		r.ContentLength, r.TransferEncoding, r.Body = -1, chunkedTE, &c.body
	case h.Length > 0:
		r.ContentLength, r.Body = h.Length, &c.body
	default:
		r.ContentLength, r.Body = 0, http.NoBody
	}
}

// fieldKey returns the canonical key of a field name: interned when frequent,
// a view of the head when the name is canonical already, else a copy.
func (c *h1Conn) fieldKey(s h1.Span) string {
	name := (*c.rbuf)[c.hs+int(s.Off) : c.hs+int(s.End)]
	if len(name) > 64 {
		return textproto.CanonicalMIMEHeaderKey(string(name))
	}
	var buf [64]byte
	k := buf[:len(name)]
	upper, same := true, true
	for i, ch := range name {
		if upper && 'a' <= ch && ch <= 'z' {
			ch -= 'a' - 'A'
		} else if !upper && 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		same = same && ch == name[i]
		k[i] = ch
		upper = ch == '-'
	}
	if v, ok := h1.CommonKeys[string(k)]; ok {
		return v
	}
	if same {
		return c.view(s)
	}
	return string(k)
}

// safeKey returns key as the gate may keep it: a string of its own, not a
// view of the connection's buffer. The last one is reused while it is the
// same (a client's requests on one connection are mostly of one key), so
// that most requests copy nothing.
func (c *h1Conn) safeKey(key string) string {
	if key == "" || !c.inHead(key) {
		return key
	}
	if key != c.key {
		c.key = string([]byte(key))
	}
	return c.key
}

// inHead reports whether s is a view of the head in flight.
func (c *h1Conn) inHead(s string) bool {
	if c.rbuf == nil || c.he == c.hs {
		return false
	}
	b := (*c.rbuf)[c.hs:c.he]
	p, start := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(&b[0]))
	return p >= start && p < start+uintptr(len(b))
}

// cutString is strings.Cut.
func cutString(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
