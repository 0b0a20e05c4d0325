package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/proxy/h1"

	"github.com/sluicehq/sluice/gate"
)

var h1WriteBufs = sync.Pool{New: func() any { b := make([]byte, 0, h1WriteBuf); return &b }}

// h1Writer is the http.ResponseWriter of the own server's requests (one per
// connection, reused): it frames the response as net/http's server does
// (Content-Length when the handler set one, else chunked for HTTP/1.1 or
// the end of the connection for HTTP/1.0; no body after HEAD, 1xx, 204 or
// 304; trailers from http.TrailerPrefix keys; a Date) and writes it through
// a buffer that goes out at a flush or when the response ends, most
// responses in one write. It implements writerControls and http.Hijacker;
// refuse writes a gate's refusal from prebuilt bytes.
type h1Writer struct {
	c      *h1Conn
	buf    *[]byte
	header http.Header

	http10    bool // the request was HTTP/1.0
	closeReq  bool // the request asked for the connection to close
	status    int
	wroteHead bool
	chunked   bool
	length    int64 // the Content-Length sent, -1 if none
	written   int64 // body bytes written
	bodyless  bool
	closeConn bool  // the connection closes after this response
	refused   bool  // the response is a gate's refusal (refuse)
	err       error // a failed write: the connection is gone
}

func (w *h1Writer) reset(http10, closeReq bool) {
	if w.header == nil {
		w.header = make(http.Header)
	}
	if w.buf == nil {
		w.buf = h1WriteBufs.Get().(*[]byte)
	}
	w.http10, w.closeReq = http10, closeReq
	w.status, w.wroteHead, w.chunked, w.length, w.written, w.bodyless, w.closeConn = 0, false, false, -1, 0, false, closeReq
	w.refused = false
}

func (w *h1Writer) clearHeader() { clear(w.header) }

// release gives the buffer back.
func (w *h1Writer) release() {
	if w.buf != nil {
		*w.buf = (*w.buf)[:0]
		h1WriteBufs.Put(w.buf)
		w.buf = nil
	}
}

func (w *h1Writer) Header() http.Header { return w.header }

// WriteHeader sends an interim (1xx) head at once with the fields set so
// far; a final status is held until the first write or flush.
func (w *h1Writer) WriteHeader(code int) {
	if w.wroteHead || w.status != 0 {
		return
	}
	if code < 100 || code > 999 {
		panic("proxy: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		if w.http10 {
			return // HTTP/1.0 has no interim responses
		}
		b := appendStatusLine(*w.buf, code)
		b = w.appendFields(b, false)
		*w.buf = append(b, "\r\n"...)
		_ = w.FlushError()
		return
	}
	w.status = code
}

// writeHead appends the final head to the buffer.
func (w *h1Writer) writeHead() {
	if w.wroteHead {
		return
	}
	w.wroteHead = true
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.c.body.headWritten()
	code := w.status
	w.bodyless = w.c.req.Method == http.MethodHead || code < 200 || code == http.StatusNoContent || code == http.StatusNotModified
	if v := w.header["Content-Length"]; len(v) > 0 {
		if n, ok := h1.ParseContentLength([]byte(v[0])); ok {
			w.length = n
		}
	}
	if h1.HasToken(w.header["Connection"], "close") {
		w.closeConn = true
	}
	if w.c.s.closing.Load() {
		w.closeConn = true // Shutdown: no next request on this connection
	}
	switch {
	case w.bodyless, w.length >= 0:
	case w.http10:
		w.closeConn = true // the body ends with the connection
	default:
		w.chunked = true
	}
	b := appendStatusLine(*w.buf, code)
	b = w.appendFields(b, true)
	if w.chunked {
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	switch {
	case w.closeConn:
		b = append(b, "Connection: close\r\n"...)
	case w.http10:
		b = append(b, "Connection: keep-alive\r\n"...)
	}
	if _, ok := w.header["Date"]; !ok {
		b = append(b, *w.c.s.clock.date.Load()...) // as net/http's server, unless the handler has one
	}
	*w.buf = append(b, "\r\n"...)
}

// appendFields appends the header's fields: all but those of a final head's
// own making (framing, Connection, Date when final is set) and trailers, each
// value that holds no line break.
func (w *h1Writer) appendFields(b []byte, final bool) []byte {
	for k, vv := range w.header {
		if final {
			switch k {
			case "Transfer-Encoding", "Connection":
				continue
			case "Content-Length":
				if w.bodyless && w.c.req.Method != http.MethodHead && w.status != http.StatusNotModified {
					continue
				}
			}
		}
		if strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		for _, v := range vv {
			if !h1.ValidFieldValue(v) {
				continue
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	return b
}

// Write writes body bytes, framed as the head says.
func (w *h1Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.writeHead()
	if w.bodyless {
		return 0, http.ErrBodyNotAllowed
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength
	}
	if len(p) == 0 {
		return 0, nil
	}
	w.written += int64(len(p))
	b := *w.buf
	if w.chunked {
		b = h1.AppendChunkHeader(b, len(p))
	}
	if len(b)+len(p) <= cap(b) {
		b = append(b, p...)
		if w.chunked {
			b = append(b, "\r\n"...)
		}
		*w.buf = b
		return len(p), nil
	}
	// Too large for the buffer: out with what it holds and p, in one write.
	bufs := net.Buffers{b, p}
	if w.chunked {
		bufs = append(bufs, crlf)
	}
	_, err := bufs.WriteTo(w.c.nc)
	*w.buf = b[:0]
	if err != nil {
		w.err = err
		return 0, err
	}
	return len(p), nil
}

var crlf = []byte("\r\n")

// FlushError sends what was written so far.
func (w *h1Writer) FlushError() error {
	if w.err != nil {
		return w.err
	}
	if w.status != 0 {
		w.writeHead()
	}
	if len(*w.buf) == 0 {
		return nil
	}
	_, err := w.c.nc.Write(*w.buf)
	*w.buf = (*w.buf)[:0]
	if err != nil {
		w.err = err
	}
	return err
}

// Flush is http.Flusher's.
func (w *h1Writer) Flush() { _ = w.FlushError() }

// SetReadDeadline sets the connection's read deadline (a body's progress).
func (w *h1Writer) SetReadDeadline(t time.Time) error {
	w.c.dlSet.Store(true)
	return w.c.nc.SetReadDeadline(t)
}

// SetWriteDeadline sets the connection's write deadline.
func (w *h1Writer) SetWriteDeadline(t time.Time) error { return w.c.nc.SetWriteDeadline(t) }

// EnableFullDuplex does nothing: the body may always be read while the
// response is written.
func (w *h1Writer) EnableFullDuplex() error { return nil }

// Hijack takes the connection over (an upgrade): what was read of it and not
// consumed comes first from the reader.
func (w *h1Writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c := w.c
	if c.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if err := w.FlushError(); err != nil {
		return nil, nil, err
	}
	c.stopWatch() // the new protocol's bytes are the taker's
	c.wmu.Lock()  // wantWatch may look from another goroutine (a Done on the request's context)
	c.hijacked = true
	c.wmu.Unlock()
	c.setReadDeadline(time.Time{})
	var rd io.Reader = c.nc
	if c.r < c.w {
		rd = io.MultiReader(bytes.NewReader(append([]byte(nil), (*c.rbuf)[c.r:c.w]...)), c.nc)
	}
	return c.nc, bufio.NewReadWriter(bufio.NewReader(rd), bufio.NewWriter(c.nc)), nil
}

// finish ends the response: the head if none went, the last chunk and the
// trailers, and everything out. It reports whether the connection may carry
// another request.
func (w *h1Writer) finish() bool {
	if w.err != nil {
		return false
	}
	if !w.wroteHead {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		if _, ok := w.header["Content-Length"]; !ok && w.status >= 200 && w.status != http.StatusNoContent && w.status != http.StatusNotModified && w.c.req.Method != http.MethodHead {
			w.header["Content-Length"] = zeroLength
		}
		w.writeHead()
	}
	if w.chunked {
		b := append(*w.buf, "0\r\n"...)
		for k, vv := range w.header {
			name, ok := strings.CutPrefix(k, http.TrailerPrefix)
			if !ok {
				continue
			}
			for _, v := range vv {
				if h1.ValidFieldValue(v) && h1.ValidFieldName(name) {
					b = append(b, name...)
					b = append(b, ": "...)
					b = append(b, v...)
					b = append(b, "\r\n"...)
				}
			}
		}
		*w.buf = append(b, "\r\n"...)
	}
	if err := w.FlushError(); err != nil {
		return false
	}
	if w.length >= 0 && w.written < w.length && !w.bodyless {
		return false // cut short: the client must see it end
	}
	return !w.closeConn
}

var zeroLength = one("0")

// refuse writes a gate's refusal of the request as the gate decides it
// (gate.Answer: its status, fields and body; AppendHead writes the fields),
// with the connection's own fields and the Date of the current second. It
// allocates nothing.
func (w *h1Writer) refuse(rej *gate.Rejection) {
	if w.wroteHead {
		return
	}
	a := rej.Answer()
	w.status, w.wroteHead, w.refused = a.Status, true, true
	w.c.body.headWritten()
	body := a.Body()
	b := appendStatusLine(*w.buf, w.status)
	b = a.AppendHead(b)
	if w.closeConn || w.c.s.closing.Load() || !w.c.body.done && !w.c.body.cheapToDrop() {
		w.closeConn = true
		b = append(b, "Connection: close\r\n"...)
	} else if w.http10 {
		b = append(b, "Connection: keep-alive\r\n"...)
	}
	b = append(b, *w.c.s.clock.date.Load()...)
	b = append(b, "\r\n"...)
	if w.c.req.Method != http.MethodHead {
		b = append(b, body...)
	}
	*w.buf = b
	w.length, w.written, w.bodyless = int64(len(body)), int64(len(body)), true
}

// cheapToDrop reports whether the rest of the body is already buffered and
// within the bound of what a refused request may cost to read.
func (b *h1Body) cheapToDrop() bool {
	if b.chunked || b.err != nil || b.expect {
		return false
	}
	c := b.c
	return b.left <= unreadBodyMax && int64(c.w-c.r) >= b.left
}

// statusLines holds "HTTP/1.1 NNN Text\r\n" for every code net/http names.
var statusLines = func() (l [600][]byte) {
	for code := range l {
		if text := http.StatusText(code); text != "" {
			l[code] = []byte("HTTP/1.1 " + strconv.Itoa(code) + " " + text + "\r\n")
		}
	}
	return l
}()

func appendStatusLine(b []byte, code int) []byte {
	if code < len(statusLines) && statusLines[code] != nil {
		return append(b, statusLines[code]...)
	}
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, " status code "...)
	b = strconv.AppendInt(b, int64(code), 10)
	return append(b, "\r\n"...)
}

// writeError answers a head the parser refused: the status, a line of text,
// and Connection: close, as net/http's server answers its own errors.
func (w *h1Writer) writeError(status int, why string) {
	text := strconv.Itoa(status) + " " + http.StatusText(status) + ": " + why
	b := appendStatusLine(*w.buf, status)
	b = append(b, "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(text)), 10)
	b = append(b, "\r\n"...)
	b = append(b, *w.c.s.clock.date.Load()...)
	b = append(b, "\r\n"...)
	*w.buf = append(b, text...)
	w.wroteHead = true
	_ = w.FlushError()
}
