package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"sync"
	"time"

	"github.com/sluicehq/sluice/proxy/h1"
)

// h1Body is the body of a request of the own server: by its length or
// chunked (RFC 9112 §7.1, with net/http's bounds), read out of the
// connection's buffer and then from the connection itself.
type h1Body struct {
	c       *h1Conn
	chunked bool
	left    int64 // bytes to go: of the body, or of the current chunk
	inData  bool  // chunked: in a chunk's data (else before a chunk line)
	excess  int64 // chunked: framing beyond what the data justifies
	done    bool  // read to its end
	err     error // the error every later read returns

	expect   bool       // Expect: 100-continue, not answered yet
	contMu   sync.Mutex // orders the 100 Continue with the response head
	canCont  bool       // the 100 may still be sent: no response head yet
	contSent bool
}

func (b *h1Body) reset(h *h1.RequestHead) {
	b.chunked, b.left, b.inData, b.excess, b.err = h.Chunked, max(h.Length, 0), false, 0, nil
	b.done = !h.HasBody()
	b.expect, b.contSent = h.ExpectContinue && !b.done, false
	b.canCont = b.expect
}

func (b *h1Body) Close() error { return nil }

func (b *h1Body) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.expect {
		b.sendContinue()
	}
	var n int
	var err error
	if b.chunked {
		n, err = b.readChunked(p)
	} else {
		n, err = b.readData(p)
		if err == nil && b.left == 0 {
			b.done = true
		}
	}
	if err != nil && err != io.EOF {
		b.err = err
	}
	if b.done {
		b.c.watchLater() // nothing reads the connection from now on
		if n > 0 {
			err = nil
		}
	}
	return n, err
}

// sendContinue answers Expect: 100-continue, unless the response head went
// already.
func (b *h1Body) sendContinue() {
	b.contMu.Lock()
	defer b.contMu.Unlock()
	b.expect = false
	if !b.canCont {
		return
	}
	b.contSent = true
	_, _ = b.c.nc.Write([]byte("HTTP/1.1 100 Continue\r\n\r\n"))
}

// headWritten says the response head is about to be written: no 100
// Continue from now.
func (b *h1Body) headWritten() {
	// canCont is written only here and by reset, on the handler's goroutine:
	// it may be read without the lock (b.expect may not: the body's reader
	// writes it).
	if b.canCont {
		b.contMu.Lock()
		b.canCont = false
		b.contMu.Unlock()
	}
}

// readData reads up to b.left bytes: buffered ones first, then from the
// connection.
func (b *h1Body) readData(p []byte) (int, error) {
	c := b.c
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	var n int
	if c.r < c.w {
		n = copy(p, (*c.rbuf)[c.r:c.w])
		c.r += n
	} else {
		var err error
		n, err = c.read(p)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		}
	}
	b.left -= int64(n)
	return n, nil
}

var errReqChunkExcess = errors.New("proxy: chunked request body spends too much on framing")
var errReqChunkData = errors.New("proxy: chunk data longer than its size")

// readChunked reads a chunked body's data into p: as net/http's chunked
// reader does, until p is full or the data of a chunk is all read and the
// next chunk line is not buffered yet (a chunk arrives whole at the upstream,
// as the client framed it).
func (b *h1Body) readChunked(p []byte) (n int, err error) {
	c := b.c
	for len(p) > 0 {
		if !b.inData {
			if n > 0 && bytes.IndexByte((*c.rbuf)[c.r:c.w], '\n') < 0 {
				return n, nil
			}
			line, err := b.line(maxChunkLine)
			if err != nil {
				return n, err
			}
			size, err := h1.ParseChunkSize(line)
			if err != nil {
				return n, err
			}
			b.excess += int64(len(line)) + 2
			b.excess = max(b.excess-chunkOverhead-2*size, 0)
			if b.excess > maxChunkExcess {
				return n, errReqChunkExcess
			}
			if size == 0 {
				if err := b.readTrailer(); err != nil {
					return n, err
				}
				b.done = true
				return n, io.EOF
			}
			b.left, b.inData = size, true
		}
		k, err := b.readData(p)
		n += k
		p = p[k:]
		if err != nil {
			return n, err
		}
		if b.left == 0 {
			b.inData = false
			if line, err := b.line(2); err != nil || len(line) != 0 {
				if err == nil {
					err = errReqChunkData
				}
				return n, err
			}
		}
	}
	return n, nil
}

// line returns the next line of chunked framing, without its CRLF (a bare LF
// is refused, as net/http refuses it), of at most max bytes.
func (b *h1Body) line(max int) ([]byte, error) {
	c := b.c
	for searched := 0; ; {
		buf := (*c.rbuf)[c.r:c.w]
		for i := searched; i < len(buf); i++ {
			if buf[i] == '\n' {
				line := buf[:i]
				c.r += i + 1
				if len(line) == 0 || line[len(line)-1] != '\r' {
					return nil, h1.ErrBareLF
				}
				return line[:len(line)-1], nil
			}
		}
		searched = len(buf)
		if len(buf) > max {
			return nil, errChunkLineTooLong
		}
		if err := c.fill(); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

var errChunkLineTooLong = errors.New("proxy: chunk line too long")

// readTrailer reads the trailer section (at most 64 KiB) into the request's
// Trailer, with keys made canonical, fields a proxy must not forward as
// trailers left out by the proxy (h1.TrailerForbidden).
func (b *h1Body) readTrailer() error {
	c := b.c
	budget := 64 << 10
	for {
		line, err := b.line(budget)
		if err != nil {
			return err
		}
		budget -= len(line) + 2
		if len(line) == 0 {
			return nil
		}
		f, herr := h1.FieldLine(line, h1.Span{Off: 0, End: int32(len(line))})
		if herr != nil {
			return herr
		}
		if c.trailer == nil {
			c.trailer = make(http.Header)
		}
		k := textproto.CanonicalMIMEHeaderKey(string(f.Name.Of(line)))
		c.trailer[k] = append(c.trailer[k], string(f.Value.Of(line)))
		c.req.Trailer = c.trailer
	}
}

// discard reads what is left of a body nobody read, within the bounds
// (unreadBodyMax, unreadBodyTimeout), so that the connection can carry the
// next request; false means it could not and must close. A body expected
// with 100-continue and never asked for is not read: the client may never
// send it.
func (b *h1Body) discard() bool {
	if b.done {
		return true
	}
	if b.err != nil || b.expect && !b.contSent {
		return false
	}
	if !b.chunked && b.left > unreadBodyMax {
		return false
	}
	c := b.c
	c.setReadDeadline(time.Now().Add(unreadBodyTimeout))
	var scratch [4 << 10]byte
	for read := 0; read <= unreadBodyMax; {
		n, err := b.Read(scratch[:])
		read += n
		if err == io.EOF || b.done {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}
