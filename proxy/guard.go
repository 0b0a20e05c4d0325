package proxy

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/proxy/h1"
)

// GuardListener wraps a plain-text listener (TCP or unix) for the server of
// NewServer so that request framing net/http's server tolerates, and a proxy
// must refuse, is answered 400 and the connection closed, as nginx does:
//
//   - a request with both Content-Length and Transfer-Encoding (net/http drops
//     the length and reads chunks; a hop in front that read the length would
//     see the rest as another request: request smuggling, RFC 9112 §11.2);
//   - Transfer-Encoding in an HTTP/1.0 request (net/http ignores it).
//
// The guard reads the stream as net/http's server frames it (its server.go,
// transfer.go and internal/chunked.go are the bar): heads, then bodies by
// Content-Length or chunks. What it cannot read is never passed on unread, for
// the server to read another way: a head it cannot read is answered 400 and
// the connection closed (a version other than HTTP/1.1 and HTTP/1.0, which
// net/http reads up to HTTP/1.9; a Content-Length it cannot parse, one of 19
// digits included; obsolete line folding, refused as RFC 9112 §5.2 allows; a
// CR that does not end a line; a line that does not start a request), and a
// body whose chunked framing net/http's reader would refuse ends the stream
// where it breaks: the server reads nothing after it (net/http's server, its
// response in full duplex as the proxy's is, would go on reading requests
// where its reader stopped). After a POST, up to 4 CR or LF bytes before the
// next request line are skipped, as net/http skips them.
//
// It also holds each request head back until it is complete, so that a client
// whose head is still unfinished at ReadHeaderTimeout is closed silently, as an
// idle one is, instead of getting a 400 for the fragment net/http would parse.
//
// maxHeaderBytes is the server's MaxHeaderBytes (0: NewServer's default); a head
// beyond it is given to the server, then bytes of a line without end until the
// server answers 431: nothing after it is read.
//
// HTTP/2 with prior knowledge (its preface at the connection's start) and
// upgraded connections pass untouched. Serve it with Serve: TLS that the server
// terminates itself (ServeTLS) would sit above the guard, which would see only
// ciphertext; GuardTLSListener terminates TLS under the guard instead.
// Concurrency: a guarded connection is read by one goroutine at a time, as
// net/http's server reads it.
func GuardListener(ln net.Listener, maxHeaderBytes int) net.Listener {
	return &guardListener{Listener: ln, limit: orInt(maxHeaderBytes, defaultMaxHeaderBytes) + 4096}
}

type guardListener struct {
	net.Listener
	limit int         // the most head bytes held; net/http reads MaxHeaderBytes + 4096
	tls   *tls.Config // GuardTLSListener's: TLS is terminated under the guard
}

func (l *guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	g := &guardConn{Conn: c, limit: l.limit, scan: reqScan{}}
	if l.tls != nil {
		tc := tls.Server(c, l.tls)
		g.Conn, g.tls = tc, &connTLS{conn: tc}
	}
	// Under TLS the socket below it is closed: no close alert waits behind
	// a write.
	g.watch.closeClient = func() { _ = c.Close() }
	return g, nil
}

// refusedHead is what the server reads in place of a refused request head: a
// request line without spaces, which net/http answers with "400 Bad Request"
// and Connection: close. Nothing is read after it.
const refusedHead = "refused-framing\r\n\r\n"

// filler follows a head beyond the guard's limit (scanTooLarge): bytes of a
// line that does not end, read until the server's own limit makes it answer
// 431 (it counts from where its reader was when the head began: at most a
// buffer, 4 KiB, and a little, before the head's first byte). Nothing of the
// connection is read after it.
var filler = func() (b [8 << 10]byte) {
	for i := range b {
		b[i] = 'x'
	}
	return b
}()

// guardConn is a connection read through a reqScan.
type guardConn struct {
	net.Conn
	limit int
	scan  reqScan
	held  []byte  // a request head not yet complete, from its first byte
	out   []byte  // bytes scanned and ready to be read
	buf   *[]byte // the pooled buffer held began in, if any

	refusedSent bool // refusedHead was read after a refused head
	fill        int  // scanTooLarge: filler bytes still to be read

	watch clientWatch // told of a failed read: the client is gone
	tls   *connTLS    // the TLS under the guard (GuardTLSListener's); nil over plain text

	// Whether a read or write deadline is set. net/http's server clears the
	// read deadline several times per request, mostly when none is set (after
	// the head, before the background read), and the write deadline after
	// every response; such a clear is skipped (it would cost a poller update
	// for nothing). The mutex keeps each flag true to the deadline it
	// stands for under concurrent setters (the server, a body's sender).
	dlMu            sync.Mutex
	readDL, writeDL bool
}

// SetReadDeadline is net.Conn's; a clear of no deadline does nothing.
func (g *guardConn) SetReadDeadline(t time.Time) error {
	g.dlMu.Lock()
	defer g.dlMu.Unlock()
	if t.IsZero() && !g.readDL {
		return nil
	}
	g.readDL = !t.IsZero()
	return g.Conn.SetReadDeadline(t)
}

// SetWriteDeadline is net.Conn's; a clear of no deadline does nothing.
func (g *guardConn) SetWriteDeadline(t time.Time) error {
	g.dlMu.Lock()
	defer g.dlMu.Unlock()
	if t.IsZero() && !g.writeDL {
		return nil
	}
	g.writeDL = !t.IsZero()
	return g.Conn.SetWriteDeadline(t)
}

// SetDeadline is net.Conn's, kept in step with the two above.
func (g *guardConn) SetDeadline(t time.Time) error {
	g.dlMu.Lock()
	defer g.dlMu.Unlock()
	if t.IsZero() && !g.readDL && !g.writeDL {
		return nil
	}
	g.readDL, g.writeDL = !t.IsZero(), !t.IsZero()
	return g.Conn.SetDeadline(t)
}

// headBufs hold incomplete heads; most heads arrive whole and need none.
var headBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

func (g *guardConn) Read(p []byte) (int, error) {
	for {
		if len(g.out) > 0 {
			n := copy(p, g.out)
			g.out = g.out[n:]
			if len(g.out) == 0 && len(g.held) == 0 {
				g.recycle()
			}
			return n, nil
		}
		switch g.scan.state {
		case scanRefused:
			if !g.refusedSent {
				g.refusedSent, g.held = true, nil
				g.out = []byte(refusedHead)
				continue
			}
			return 0, io.EOF
		case scanPass:
			if len(g.held) > 0 {
				g.out, g.held = g.held, nil
				continue
			}
			return g.read(p)
		case scanEnd:
			return 0, io.EOF
		case scanAnswered:
			return g.discard(p)
		case scanTooLarge:
			if len(g.held) > 0 {
				g.out, g.held = g.held, nil
				continue
			}
			if g.fill > 0 {
				n := copy(p[:min(len(p), g.fill)], filler[:])
				g.fill -= n
				return n, nil
			}
			return 0, io.EOF
		}
		if len(g.held) == 0 {
			// Most heads arrive whole: they are scanned where the server
			// reads them, and only an unfinished one is copied aside.
			n, err := g.read(p)
			if n == 0 {
				return 0, err
			}
			ready := g.scan.feed(p[:n], 0)
			if ready < n && g.scan.state == scanHead {
				g.hold(p[ready:n])
			}
			if ready > 0 {
				return ready, nil // an error comes again with the next read
			}
			if err != nil {
				return 0, err
			}
			continue
		}
		if len(g.held) >= g.limit {
			// Too large: the server is given the head and then filler, no
			// line end in it, until it answers 431.
			g.scan.state, g.fill = scanTooLarge, len(filler)
			continue
		}
		if cap(g.held)-len(g.held) < 1<<10 {
			g.grow()
		}
		old := len(g.held)
		n, err := g.read(g.held[old:min(cap(g.held), g.limit)])
		g.held = g.held[:old+n]
		if n > 0 {
			if ready := g.scan.feed(g.held, old); ready > 0 {
				rest := g.held[ready:]
				g.out, g.held = g.held[:ready:ready], nil
				if len(rest) > 0 && g.scan.state == scanHead {
					g.held = append([]byte(nil), rest...) // another head begun: rare
				}
				continue
			}
		}
		if err != nil {
			return 0, err
		}
	}
}

// discard reads the connection and drops what it reads until the read fails
// (the client went, the server closed the connection or aborted the read by
// a deadline), and returns that failure. After a head the server answers
// itself, nothing the client sends is the server's, and the only read that
// comes is the server's background read during the request before that head
// (net/http's server reads a byte while a handler runs, to see the client
// go): an end of stream the guard invented would tell the server that the
// client went and cancel that request (the guard returned io.EOF there, and
// a valid request followed by a "Transfer-Encoding: xchunked" one was
// answered 502 whenever its handler had not reached the upstream yet).
func (g *guardConn) discard(p []byte) (int, error) {
	for {
		if _, err := g.read(p); err != nil {
			return 0, err
		}
	}
}

// read reads the connection; a failure other than a timeout means the client
// is gone (see clientWatch).
func (g *guardConn) read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	if err != nil && !isTimeout(err) {
		g.watch.clientGone()
	}
	return n, err
}

// hold keeps b, the start of a head.
func (g *guardConn) hold(b []byte) {
	if g.buf == nil {
		g.buf = headBufs.Get().(*[]byte)
	}
	g.held = append((*g.buf)[:0], b...)
}

// grow makes room in held.
func (g *guardConn) grow() {
	nb := make([]byte, len(g.held), 2*cap(g.held)+4<<10)
	copy(nb, g.held)
	g.held = nb
}

// recycle returns the head buffer once nothing refers to it.
func (g *guardConn) recycle() {
	if g.buf != nil {
		headBufs.Put(g.buf)
		g.buf = nil
	}
	g.out = nil
}

// release stops the guard (the connection was upgraded): what it holds, then
// the connection itself, are read as they are.
func (g *guardConn) release() { g.scan.state = scanPass }

// CloseWrite half-closes the connection if it can, as net/http's server does
// before it closes after an error.
func (g *guardConn) CloseWrite() error {
	if cw, ok := g.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// scanState is where a reqScan is in the request stream.
type scanState uint8

const (
	scanHead      scanState = iota // in a request head (or before one)
	scanBody                       // in a body of known length: left bytes to go
	scanChunkLine                  // in a chunk-size line
	scanChunkData                  // in chunk data: left bytes to go
	scanChunkEnd                   // in the CRLF after chunk data
	scanTrailer                    // in the trailer section of a chunked body
	scanPass                       // HTTP/2's preface, or upgraded: bytes pass as they are
	scanRefused                    // a head was refused: refusedHead, then nothing
	scanEnd                        // a body's framing broke: nothing more
	scanAnswered                   // a head the server answers itself (501, 505) and reads nothing after
	scanTooLarge                   // a head beyond the limit: it, then filler until the server answers 431
)

// reqScan follows the framing of a stream of HTTP/1 requests, as net/http's
// server reads it (server.go's readRequest, transfer.go, internal/chunked.go),
// and stops it at anything it cannot follow: a head it cannot read is refused,
// a body whose framing breaks ends the stream where it breaks. It never lets
// bytes through unread (scanPass) but HTTP/2's preface at the connection's
// start, which the server serves as HTTP/2, and an upgraded connection.
type reqScan struct {
	state scanState
	left  int64 // scanBody, scanChunkData: bytes to go; scanChunkEnd: 2 or 1
	begun bool  // the connection's first bytes were looked at for HTTP/2's preface
	skip  int8  // CR or LF bytes the server may still skip before the next request line
	post  bool  // the message being read is a POST's (the server then skips up to 4 CR or LF)

	// Within a head (scanHead): where the search for its end resumes, and
	// the head once parsed.
	searched int
	head     h1.RequestHead

	// Within a chunk line or the trailer: where in its line the scan is, the
	// line's length so far, the chunk size and its digits, the trailer's
	// length, and net/http's count of chunk overhead beyond what it allows.
	line    lineState
	lineLen int
	size    int64
	digits  int
	trailer int
	excess  int64
}

// lineState is where a reqScan is within a chunk-size or trailer line.
type lineState uint8

const (
	lineStart lineState = iota // a chunk line's size digits, or a trailer line's first byte
	lineExt                    // a chunk extension, after ';'
	lineOWS                    // white space after a chunk size
	lineName                   // a trailer field's name
	lineValue                  // a trailer field's value
	lineCR                     // a CR: the line's LF must follow
	lineLast                   // the trailer's empty line, after its CR
)

// h2Preface is what an HTTP/2 client with prior knowledge sends first.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// maxTrailer bounds a request's trailer section: net/http's server reads it
// only if its end is in its reader's 4 KiB buffer. (Chunk lines are held to
// maxChunkLine and maxChunkExcess, net/http's bounds too.)
const maxTrailer = 4 << 10

// feed scans b[from:] (b[:from] were scanned by earlier calls and hold the
// start of the current head, which begins at b[0] when from > 0) and returns
// how many bytes of b are ready to be read: everything up to the start of a head
// that is not complete yet, or of a head that is refused (scanRefused), or up
// to where the stream ends (scanAnswered: a head the server is to answer with
// an error; scanEnd: a body's framing broken).
func (s *reqScan) feed(b []byte, from int) (ready int) {
	i := from
	headStart := 0
	if from == 0 {
		headStart = -1
	}
	for i < len(b) {
		switch s.state {
		case scanHead:
			if headStart < 0 {
				if c := b[i]; s.skip > 0 && (c == '\r' || c == '\n') {
					// After a POST net/http's server discards up to 4
					// CR or LF bytes before the request line (server.go,
					// readRequest): so does the scan.
					s.skip--
					i++
					continue
				}
				s.skip, headStart = 0, i
			}
			if !s.begun {
				// HTTP/2 with prior knowledge, as net/http's server
				// tells it: the preface at the connection's start.
				p := b[headStart:]
				if n := min(len(p), len(h2Preface)); string(p[:n]) == h2Preface[:n] {
					if n < len(h2Preface) {
						return headStart // wait for the rest
					}
					s.state = scanPass
					return len(b)
				}
				s.begun = true
			}
			if !h1.IsTokenByte(b[headStart]) {
				// Not a request line's start: a TLS record, an empty line,
				// garbage. The scan refuses before it waits for a line.
				s.state = scanRefused
				return headStart
			}
			end, done := s.headLines(b[headStart:])
			if !done || s.state == scanRefused {
				return headStart
			}
			i, headStart = headStart+end, -1
		case scanBody:
			n := min(int64(len(b)-i), s.left)
			i += int(n)
			if s.left -= n; s.left == 0 {
				s.endBody()
			}
		case scanChunkData:
			n := min(int64(len(b)-i), s.left)
			i += int(n)
			if s.left -= n; s.left == 0 {
				s.state, s.left = scanChunkEnd, 2
			}
		case scanChunkEnd:
			if b[i] != "\r\n"[2-s.left] {
				s.state = scanEnd // net/http: "malformed chunked encoding"
				return i
			}
			i++
			if s.left--; s.left == 0 {
				s.startChunkLine()
			}
		case scanChunkLine:
			i = s.chunkLine(b, i)
		case scanTrailer:
			i = s.trailerLine(b, i)
		case scanEnd, scanAnswered:
			return i
		default: // scanPass
			return len(b)
		}
	}
	if headStart >= 0 {
		return headStart
	}
	return i
}

// headLines waits for the whole head that starts head, then reads it with the
// proxy's one request parser (h1.RequestHead.Parse, the own server's),
// so that the guard and the own server decide a request's framing alike: a
// head the parser refuses is refused (scanRefused: the server answers 400),
// but for a transfer coding it cannot frame or an HTTP/2-or-later version,
// which net/http's server answers itself (501, 505) before it reads anything
// more (scanAnswered). done reports that the head was whole, end the offset just
// past it. Otherwise it sets the state for the head's body.
func (s *reqScan) headLines(head []byte) (end int, done bool) {
	end = h1.HeadEnd(head, &s.searched)
	if end < 0 {
		return 0, false
	}
	s.searched = 0
	if err := s.head.Parse(head[:end]); err != nil {
		switch err.Status {
		case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
			s.state = scanAnswered
			return end, true
		}
		s.state = scanRefused
		return 0, true
	}
	h := &s.head
	s.post = string(h.Method.Of(head)) == http.MethodPost
	switch {
	case h.Chunked:
		s.excess = 0
		s.startChunkLine()
	case h.Length > 0:
		s.state, s.left = scanBody, h.Length
	default:
		s.endBody()
	}
	return end, true
}

// endBody ends a message: the next head follows, after up to 4 CR or LF bytes
// if the message was a POST.
func (s *reqScan) endBody() {
	s.state, s.skip = scanHead, 0
	if s.post {
		s.skip = 4
	}
}

// startChunkLine begins a chunk-size line.
func (s *reqScan) startChunkLine() {
	s.state, s.line, s.lineLen, s.size, s.digits = scanChunkLine, lineStart, 0, 0, 0
}

// chunkLine scans a chunk-size line from b[i], returning where it stopped. The
// line is held to net/http's chunked reader: 1 to 15 hex digits (net/http
// takes 16, which overflow an int64), then a chunk extension after ';' or
// white space, and CRLF; at most maxChunkLine bytes; within the overhead it
// allows. Anything else ends the stream before the byte that breaks it
// (scanEnd): net/http refuses the body, and its server may go on reading
// requests where its reader stopped.
func (s *reqScan) chunkLine(b []byte, i int) int {
	for ; i < len(b); i++ {
		c := b[i]
		if s.lineLen++; s.lineLen > maxChunkLine {
			s.state = scanEnd
			return i
		}
		switch s.line {
		case lineStart:
			switch {
			case '0' <= c && c <= '9':
				s.size = s.size<<4 | int64(c-'0')
			case 'a' <= c && c <= 'f':
				s.size = s.size<<4 | int64(c-'a'+10)
			case 'A' <= c && c <= 'F':
				s.size = s.size<<4 | int64(c-'A'+10)
			case s.digits == 0:
				s.state = scanEnd
				return i
			case c == ';':
				s.line = lineExt
				continue
			case c == ' ' || c == '\t':
				s.line = lineOWS
				continue
			case c == '\r':
				s.line = lineCR
				continue
			default:
				s.state = scanEnd
				return i
			}
			if s.digits++; s.digits > 15 {
				s.state = scanEnd
				return i
			}
		case lineExt:
			switch c {
			case '\r':
				s.line = lineCR
			case '\n':
				s.state = scanEnd // a bare LF
				return i
			}
		case lineOWS:
			switch c {
			case ' ', '\t':
			case '\r':
				s.line = lineCR
			default: // net/http: "invalid byte in chunk length"
				s.state = scanEnd
				return i
			}
		default: // lineCR
			if c != '\n' {
				s.state = scanEnd
				return i
			}
			s.excess += int64(s.lineLen) - chunkOverhead - 2*s.size
			s.excess = max(s.excess, 0)
			switch {
			case s.excess > maxChunkExcess:
				s.state = scanEnd
				return i
			case s.size == 0:
				s.state, s.line, s.trailer = scanTrailer, lineStart, 0
			default:
				s.state, s.left = scanChunkData, s.size
			}
			return i + 1
		}
	}
	return i
}

// trailerLine scans the trailer section from b[i], returning where it stopped.
// Its lines are held to what net/http's reader takes (a field name of token
// bytes, a colon, a value of visible bytes, space and tab) and to CRLF, and the
// section to maxTrailer bytes; anything else ends the stream (scanEnd).
func (s *reqScan) trailerLine(b []byte, i int) int {
	for ; i < len(b); i++ {
		c := b[i]
		if s.trailer++; s.trailer > maxTrailer {
			s.state = scanEnd
			return i
		}
		ok := false
		switch s.line {
		case lineStart:
			switch {
			case c == '\r':
				s.line, ok = lineLast, true
			case h1.IsTokenByte(c):
				s.line, ok = lineName, true
			}
		case lineName:
			switch {
			case c == ':':
				s.line, ok = lineValue, true
			case h1.IsTokenByte(c):
				ok = true
			}
		case lineValue:
			switch {
			case c == '\r':
				s.line, ok = lineCR, true
			case c == '\t' || (c >= ' ' && c != 0x7f):
				ok = true
			}
		case lineCR:
			s.line, ok = lineStart, c == '\n'
		default: // lineLast
			if c == '\n' {
				s.endBody()
				return i + 1
			}
		}
		if !ok {
			s.state = scanEnd
			return i
		}
	}
	return i
}
