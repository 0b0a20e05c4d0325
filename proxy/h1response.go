package proxy

import (
	"bytes"
	"io"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/proxy/h1"
)

// maxInterim bounds the interim (1xx) responses read before the final one, as
// net/http's HTTP/2 client does (5): each costs a parse and, for 103, a write to
// the client, and an upstream must not keep the proxy busy with them forever.
// They share the head budget (MaxResponseHeaderBytes) with the final head.
const maxInterim = 5

// readHead reads the response head into w's header. Interim responses are passed
// on (103 Early Hints) or dropped (100 Continue: the proxy's server speaks to the
// client itself; 102), at most maxInterim of them. The upstream has until start +
// the upstream timeout.
func (p *Proxy) readHead(c *h1.Conn, w http.ResponseWriter, method string, start time.Time) (h1.ResponseHead, error) {
	dst := w.Header()
	c.ArmRead(start.Add(p.upstreamTimeout), p.upstreamTimeout)
	budget := p.maxHead
	for interim := 0; ; interim++ {
		if _, err := c.R.Peek(1); err != nil {
			return h1.ResponseHead{}, &noResponseError{err}
		}
		h, err := c.Scratch.ReadResponseHead(c.R, dst, &budget)
		if err != nil {
			return h, err
		}
		if h.Status >= 200 || h.Status == http.StatusSwitchingProtocols {
			return h, nil
		}
		if interim == maxInterim {
			return h, h1.ProtoErr("more than %d interim responses", maxInterim)
		}
		if h.Status == http.StatusEarlyHints {
			w.WriteHeader(h.Status) // sends the fields set so far
		}
		clear(dst)
	}
}

// copyResponse copies the response body to the client, framed as the head says.
// upErr is a failure of the upstream, clErr of the client.
func (p *Proxy) copyResponse(cs *clientSide, c *h1.Conn, h *h1.ResponseHead) (upErr, clErr error) {
	switch {
	case h.Chunked:
		return p.copyChunked(cs, c)
	case h.Length >= 0:
		return p.copyN(cs, c, h.Length)
	}
	h.Close = true // the body ends when the connection does
	upErr, clErr = p.copyN(cs, c, -1)
	if upErr == io.ErrUnexpectedEOF {
		upErr = nil
	}
	return upErr, clErr
}

// fill makes sure c's reader holds at least one byte. Before it blocks, it flushes
// what the client has not got yet (so streams flow) and gives the upstream the
// upstream timeout to send more.
func (p *Proxy) fill(cs *clientSide, c *h1.Conn) (upErr, clErr error) {
	if c.R.Buffered() > 0 {
		return nil, nil
	}
	if err := cs.flush(); err != nil {
		return nil, err
	}
	c.ArmRead(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	if _, err := c.R.Peek(1); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err, nil
	}
	return nil, nil
}

// copyN copies n bytes (n < 0: until EOF, reported as io.ErrUnexpectedEOF) straight
// out of c's read buffer to the client.
func (p *Proxy) copyN(cs *clientSide, c *h1.Conn, n int64) (upErr, clErr error) {
	for n != 0 {
		if upErr, clErr = p.fill(cs, c); upErr != nil || clErr != nil {
			return upErr, clErr
		}
		k := c.R.Buffered()
		if n > 0 && int64(k) > n {
			k = int(n)
		}
		b, _ := c.R.Peek(k)
		if err := cs.write(b); err != nil {
			return nil, err
		}
		_, _ = c.R.Discard(k)
		if n > 0 {
			n -= int64(k)
		}
	}
	return nil, nil
}

// Chunked framing bounds. A chunk line (size and extensions) is at most
// maxChunkLine bytes, and what a body spends on framing and extensions beyond
// chunkOverhead bytes per chunk and twice its data may add up to
// maxChunkExcess: net/http's own bounds, which keep an upstream from making the
// proxy read without end for little data ("1;<4 KiB of extension>\r\nx\r\n"...).
const (
	maxChunkLine   = 4 << 10
	chunkOverhead  = 16
	maxChunkExcess = 16 << 10
)

var errChunkExcess = h1.ProtoErr("chunked encoding spends too much on framing")

// copyChunked decodes a chunked body (RFC 9112 §7.1) to the client, whose server
// frames it anew, and passes the trailer fields on as trailers. Chunk lines must
// end in CRLF.
func (p *Proxy) copyChunked(cs *clientSide, c *h1.Conn) (upErr, clErr error) {
	var excess int64
	for {
		line, upErr, clErr := p.line(cs, c)
		if upErr != nil || clErr != nil {
			return upErr, clErr
		}
		size, err := h1.ParseChunkSize(line)
		if err != nil {
			return err, nil
		}
		excess += int64(len(line)) + 2 // the line, and the CRLF after the data
		excess = max(excess-chunkOverhead-2*size, 0)
		if excess > maxChunkExcess {
			return errChunkExcess, nil
		}
		if size == 0 {
			break
		}
		if upErr, clErr = p.copyN(cs, c, size); upErr != nil || clErr != nil {
			return upErr, clErr
		}
		if line, upErr, clErr = p.line(cs, c); upErr != nil || clErr != nil {
			return upErr, clErr
		}
		if len(line) != 0 {
			return h1.ProtoErr("chunk data longer than its size"), nil
		}
	}
	if c.R.Buffered() == 0 || bytes.IndexByte(peekBuffered(c), '\n') < 0 {
		if err := cs.flush(); err != nil {
			return nil, err
		}
		c.ArmRead(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	}
	var th h1.ResponseHead
	budget := p.maxHead
	if err := c.Scratch.ReadFields(c.R, cs.w.Header(), &th, h1.ModeTrailer, &budget); err != nil {
		return err, nil
	}
	return nil, nil
}

// line reads one line of chunked framing; if it is not buffered whole, it first
// flushes the client and arms the upstream timeout, as fill does.
func (p *Proxy) line(cs *clientSide, c *h1.Conn) (line []byte, upErr, clErr error) {
	if bytes.IndexByte(peekBuffered(c), '\n') < 0 {
		if err := cs.flush(); err != nil {
			return nil, nil, err
		}
		c.ArmRead(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	}
	budget := maxChunkLine
	line, err := c.Scratch.ReadLine(c.R, &budget, h1.CRLFOnly)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return line, err, nil
}

// peekBuffered returns the bytes c's reader holds, without reading.
func peekBuffered(c *h1.Conn) []byte {
	b, _ := c.R.Peek(c.R.Buffered())
	return b
}
