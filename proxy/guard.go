package proxy

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"time"
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
// It also holds each request head back until it is complete, so that a client
// whose head is still unfinished at ReadHeaderTimeout is closed silently, as an
// idle one is, instead of getting a 400 for the fragment net/http would parse.
//
// maxHeaderBytes is the server's MaxHeaderBytes (0: NewServer's default); a head
// beyond it is passed on for the server to answer 431.
//
// The guard reads the stream as net/http's server frames it: heads, then bodies
// by Content-Length or chunks. HTTP/2 with prior knowledge and upgraded
// connections pass untouched. Serve it with Serve: TLS that the server
// terminates itself (ServeTLS) would sit above the guard, which would see only
// ciphertext; GuardTLSListener terminates TLS under the guard instead. Concurrency: a guarded connection is read by one goroutine at a
// time, as net/http's server reads it.
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
	g := &guardConn{Conn: c, limit: l.limit, scan: reqScan{cl: -1}}
	if l.tls != nil {
		tc := tls.Server(c, l.tls)
		g.Conn, g.tls = tc, &connTLS{conn: tc}
	}
	return g, nil
}

// refusedHead is what the server reads in place of a refused request head: a
// request line without spaces, which net/http answers with "400 Bad Request"
// and Connection: close. Nothing is read after it.
const refusedHead = "refused-framing\r\n\r\n"

// guardConn is a connection read through a reqScan.
type guardConn struct {
	net.Conn
	limit int
	scan  reqScan
	held  []byte  // a request head not yet complete, from its first byte
	out   []byte  // bytes scanned and ready to be read
	buf   *[]byte // the pooled buffer held began in, if any

	refusedSent bool // refusedHead was read after a refused head

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
			g.scan.state = scanPass // too large: the server answers 431
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
	scanChunkData                  // in chunk data: left bytes, then CRLF
	scanTrailer                    // in the trailer section of a chunked body
	scanPass                       // no longer scanning: bytes pass as they are
	scanRefused                    // a head was refused: nothing more is read
)

// reqScan follows the framing of a stream of HTTP/1 requests.
type reqScan struct {
	state scanState
	left  int64 // scanBody, scanChunkData: bytes to go (chunk data: with its CRLF)

	// Within a head (scanHead): the offset of its first line not yet parsed,
	// relative to the head's first byte, and what the parsed lines said.
	lineAt   int
	searched int // how far the line at lineAt was searched for its end
	started  bool
	http10   bool
	cl       int64 // Content-Length, -1 if none
	te       int   // Transfer-Encoding fields seen
	chunked  bool  // the one Transfer-Encoding is "chunked"
	badCL    bool
	lastName int8 // what the previous field line was, for continuation lines

	// Within a chunk line or the trailer: the line's length so far, the chunk
	// size parsed so far, whether digits ended.
	lineLen   int
	size      int64
	digits    int
	sizeEnded bool
}

// feed scans b[from:] (b[:from] were scanned by earlier calls and hold the
// start of the current head, which begins at b[0] when from > 0) and returns
// how many bytes of b are ready to be read: everything up to the start of a head
// that is not complete yet, or of a head that is refused (scanRefused).
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
				headStart = i
				if c := b[i]; !isTokenByte(c) && c != '\r' && c != '\n' {
					// Not a request line's start: a TLS record, say. The
					// scan ends before it waits for a line.
					s.state = scanPass
					return len(b)
				}
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
				s.state = scanHead
			}
		case scanChunkData:
			n := min(int64(len(b)-i), s.left)
			i += int(n)
			if s.left -= n; s.left == 0 {
				s.state, s.lineLen, s.size, s.digits, s.sizeEnded = scanChunkLine, 0, 0, 0, false
			}
		case scanChunkLine, scanTrailer:
			i = s.chunkLine(b, i)
		default: // scanPass
			return len(b)
		}
	}
	if headStart >= 0 {
		return headStart
	}
	return len(b)
}

// headLines parses the complete lines of head (which starts at the head's first
// byte) not parsed yet, keeping what they say; done reports that the empty line
// that ends the head was reached, end the offset just past it. At the end of a
// head it sets the state for its body, or scanRefused, or scanPass.
func (s *reqScan) headLines(head []byte) (end int, done bool) {
	for {
		from := max(s.lineAt, s.searched)
		nl := bytes.IndexByte(head[from:], '\n')
		if nl < 0 {
			s.searched = len(head) // a line arriving byte by byte is searched once
			return 0, false
		}
		line := head[s.lineAt : from+nl]
		s.lineAt = from + nl + 1
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if !s.started {
			s.started = true
			if !s.requestLine(line) {
				s.state = scanPass // HTTP/2, TLS or garbage: not ours to read
				return s.lineAt, true
			}
			continue
		}
		if len(line) == 0 {
			end = s.lineAt
			s.endHead()
			return end, true
		}
		s.fieldLine(line)
	}
}

// requestLine reads the request line; false means the stream is not HTTP/1 as
// the scan knows it (HTTP/2's preface, a TLS record, an empty line, garbage).
func (s *reqScan) requestLine(line []byte) bool {
	if len(line) == 0 {
		return false
	}
	sp := bytes.LastIndexByte(line, ' ')
	if sp < 0 {
		return false
	}
	switch string(line[sp+1:]) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		s.http10 = true
	default:
		return false // HTTP/2.0 (the h2c preface), 0.9, garbage: net/http answers
	}
	return true
}

// Which framing field a field line was, for continuation lines.
const (
	fieldOther int8 = iota
	fieldCL
	fieldTE
)

// fieldLine reads one field line of a head.
func (s *reqScan) fieldLine(line []byte) {
	if line[0] == ' ' || line[0] == '\t' {
		// A continuation (obsolete folding): it would extend a framing field.
		if s.lastName != fieldOther {
			s.badCL = true
		}
		return
	}
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		s.lastName = fieldOther
		return
	}
	name, value := line[:colon], trimOWS(line[colon+1:])
	switch {
	case asciiEqualFold(name, "content-length"):
		s.lastName = fieldCL
		n, ok := parseContentLength(value)
		if !ok || (s.cl >= 0 && n != s.cl) {
			s.badCL = true
		}
		s.cl = n
	case asciiEqualFold(name, "transfer-encoding"):
		s.lastName = fieldTE
		s.te++
		s.chunked = asciiEqualFold(value, "chunked")
	default:
		s.lastName = fieldOther
	}
}

// endHead decides what follows a head, and resets the head state.
func (s *reqScan) endHead() {
	switch {
	case s.te > 0 && (s.cl >= 0 || s.badCL || s.http10):
		s.state = scanRefused
	case s.badCL || s.te > 1 || (s.te == 1 && !s.chunked):
		s.state = scanPass // net/http answers 400 or 501 and closes
	case s.te == 1:
		s.state, s.lineLen, s.size, s.digits, s.sizeEnded = scanChunkLine, 0, 0, 0, false
	case s.cl > 0:
		s.state, s.left = scanBody, s.cl
	default:
		s.state = scanHead
	}
	s.lineAt, s.searched, s.started, s.http10, s.cl, s.te, s.chunked, s.badCL, s.lastName = 0, 0, false, false, -1, 0, false, false, fieldOther
}

// maxScanLine bounds a chunk line or trailer line the scan follows; net/http's
// own bound is 4 KiB for a chunk line.
const maxScanLine = 64 << 10

// chunkLine scans a chunk-size line or a trailer line from b[i], returning
// where it stopped. A line that breaks the framing makes the scan stop
// (scanPass): net/http's chunked reader refuses it and closes the connection.
func (s *reqScan) chunkLine(b []byte, i int) int {
	for ; i < len(b); i++ {
		c := b[i]
		s.lineLen++
		if s.lineLen > maxScanLine {
			s.state = scanPass
			return len(b)
		}
		if c == '\n' {
			i++
			s.endLine()
			return i
		}
		if s.state != scanChunkLine || s.sizeEnded {
			continue
		}
		switch {
		case '0' <= c && c <= '9':
			s.size = s.size<<4 | int64(c-'0')
		case 'a' <= c && c <= 'f':
			s.size = s.size<<4 | int64(c-'a'+10)
		case 'A' <= c && c <= 'F':
			s.size = s.size<<4 | int64(c-'A'+10)
		default:
			s.sizeEnded = true
			continue
		}
		if s.digits++; s.digits > 15 {
			s.state = scanPass
			return len(b)
		}
	}
	return i
}

// endLine ends a chunk-size or trailer line.
func (s *reqScan) endLine() {
	n := s.lineLen
	s.lineLen = 0
	if s.state == scanTrailer {
		if n <= 2 { // "\r\n" or "\n": the end of the body
			s.state = scanHead
		}
		return
	}
	switch {
	case s.digits == 0:
		s.state = scanPass
	case s.size == 0:
		s.state = scanTrailer
	default:
		s.state, s.left = scanChunkData, s.size+2
	}
}

// asciiEqualFold reports whether b equals the lower-case ASCII s, case aside.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
