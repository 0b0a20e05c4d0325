package proxy

import (
	"bytes"
	"io"
	"net/http"
	"time"
)

// readHead reads the response head into w's header. Interim responses are passed
// on (103 Early Hints) or dropped (100 Continue: the proxy's server speaks to the
// client itself; 102). The upstream has until start + the upstream timeout.
func (p *Proxy) readHead(c *upConn, w http.ResponseWriter, method string, start time.Time) (respHead, error) {
	dst := w.Header()
	c.armRead(start.Add(p.upstreamTimeout), p.upstreamTimeout)
	for {
		if _, err := c.br.Peek(1); err != nil {
			return respHead{}, &noResponseError{err}
		}
		h, err := c.sc.readResponseHead(c.br, dst, p.maxHead)
		if err != nil {
			return h, err
		}
		if h.status >= 200 || h.status == http.StatusSwitchingProtocols {
			return h, nil
		}
		if h.status == http.StatusEarlyHints {
			w.WriteHeader(h.status) // sends the fields set so far
		}
		clear(dst)
	}
}

// copyResponse copies the response body to the client, framed as the head says.
// upErr is a failure of the upstream, clErr of the client.
func (p *Proxy) copyResponse(cs *clientSide, c *upConn, h *respHead) (upErr, clErr error) {
	switch {
	case h.chunked:
		return p.copyChunked(cs, c)
	case h.length >= 0:
		return p.copyN(cs, c, h.length)
	}
	h.closeConn = true // the body ends when the connection does
	upErr, clErr = p.copyN(cs, c, -1)
	if upErr == io.ErrUnexpectedEOF {
		upErr = nil
	}
	return upErr, clErr
}

// fill makes sure c's reader holds at least one byte. Before it blocks, it flushes
// what the client has not got yet (so streams flow) and gives the upstream the
// upstream timeout to send more.
func (p *Proxy) fill(cs *clientSide, c *upConn) (upErr, clErr error) {
	if c.br.Buffered() > 0 {
		return nil, nil
	}
	if err := cs.flush(); err != nil {
		return nil, err
	}
	c.armRead(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	if _, err := c.br.Peek(1); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err, nil
	}
	return nil, nil
}

// copyN copies n bytes (n < 0: until EOF, reported as io.ErrUnexpectedEOF) straight
// out of c's read buffer to the client.
func (p *Proxy) copyN(cs *clientSide, c *upConn, n int64) (upErr, clErr error) {
	for n != 0 {
		if upErr, clErr = p.fill(cs, c); upErr != nil || clErr != nil {
			return upErr, clErr
		}
		k := c.br.Buffered()
		if n > 0 && int64(k) > n {
			k = int(n)
		}
		b, _ := c.br.Peek(k)
		if err := cs.write(b); err != nil {
			return nil, err
		}
		_, _ = c.br.Discard(k)
		if n > 0 {
			n -= int64(k)
		}
	}
	return nil, nil
}

// copyChunked decodes a chunked body (RFC 9112 §7.1) to the client, whose server
// frames it anew, and passes the trailer fields on as trailers.
func (p *Proxy) copyChunked(cs *clientSide, c *upConn) (upErr, clErr error) {
	for {
		line, upErr, clErr := p.line(cs, c)
		if upErr != nil || clErr != nil {
			return upErr, clErr
		}
		size, err := parseChunkSize(line)
		if err != nil {
			return err, nil
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
			return protoErr("chunk data longer than its size"), nil
		}
	}
	if c.br.Buffered() == 0 || bytes.IndexByte(peekBuffered(c), '\n') < 0 {
		if err := cs.flush(); err != nil {
			return nil, err
		}
		c.armRead(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	}
	var th respHead
	if err := c.sc.readFields(c.br, cs.w.Header(), &th, modeTrailer, p.maxHead); err != nil {
		return err, nil
	}
	return nil, nil
}

// maxChunkLine bounds a chunk-size line with its extensions.
const maxChunkLine = 4 << 10

// line reads one line of chunked framing; if it is not buffered whole, it first
// flushes the client and arms the upstream timeout, as fill does.
func (p *Proxy) line(cs *clientSide, c *upConn) (line []byte, upErr, clErr error) {
	if bytes.IndexByte(peekBuffered(c), '\n') < 0 {
		if err := cs.flush(); err != nil {
			return nil, nil, err
		}
		c.armRead(time.Now().Add(p.upstreamTimeout), p.upstreamTimeout)
	}
	budget := maxChunkLine
	line, err := c.sc.readLine(c.br, &budget)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return line, err, nil
}

// peekBuffered returns the bytes c's reader holds, without reading.
func peekBuffered(c *upConn) []byte {
	b, _ := c.br.Peek(c.br.Buffered())
	return b
}
