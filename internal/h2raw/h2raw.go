// Package h2raw is a raw HTTP/2 client for tests: frames written and read
// with golang.org/x/net/http2's Framer, so that a test can send what no
// well-behaved client sends (HEADERS without DATA, thousands of streams, no
// token) and count what the server answers.
//
// A Conn is used by one goroutine at a time, except that Streams reads on a
// goroutine of its own while it writes.
package h2raw

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Conn is a client connection that has sent the HTTP/2 preface and an empty
// SETTINGS frame.
type Conn struct {
	net.Conn
	Fr   *http2.Framer
	enc  *hpack.Encoder
	buf  bytes.Buffer
	next uint32 // the next stream id
}

// Dial connects to addr over network ("tcp", "unix") and sends the preface.
func Dial(network, addr string) (*Conn, error) {
	nc, err := net.DialTimeout(network, addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c := &Conn{Conn: nc, next: 1}
	c.Fr = http2.NewFramer(nc, nc)
	c.Fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.buf)
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		nc.Close()
		return nil, err
	}
	if err := c.Fr.WriteSettings(); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// GRPC returns the fields of a gRPC call of method ("/pkg.Service/Method"),
// followed by extra name, value pairs ("authorization", "Bearer x").
func GRPC(method string, extra ...string) []hpack.HeaderField {
	f := []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: method}, {Name: ":authority", Value: "sluice"},
		{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		f = append(f, hpack.HeaderField{Name: extra[i], Value: extra[i+1]})
	}
	return f
}

// Headers opens a stream with a HEADERS frame of fields (END_HEADERS; with
// END_STREAM when end) and returns its id.
func (c *Conn) Headers(end bool, fields []hpack.HeaderField) (uint32, error) {
	c.buf.Reset()
	for _, f := range fields {
		if err := c.enc.WriteField(f); err != nil {
			return 0, err
		}
	}
	id := c.next
	c.next += 2
	return id, c.Fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.buf.Bytes(), EndHeaders: true, EndStream: end})
}

// ReadServerPreface reads frames until the server's first SETTINGS frame
// (which a server sends before anything else): when it returns, the server
// has accepted the connection and read its preface.
func (c *Conn) ReadServerPreface() error {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	f, err := c.Fr.ReadFrame()
	if err != nil {
		return err
	}
	if s, ok := f.(*http2.SettingsFrame); !ok || s.IsAck() {
		return fmt.Errorf("h2raw: the server's first frame is %v, not SETTINGS", f.Header())
	}
	return nil
}

// Answers counts what a server sent back while Streams ran.
type Answers struct {
	// Ended is the streams answered with a HEADERS frame that ended them
	// (a gRPC trailers-only answer); Status is the grpc-status of the last
	// one, Message its grpc-message.
	Ended           int
	Status, Message string
	// Reset is the streams reset (RST_STREAM).
	Reset int
	// GoAway is whether the server sent GOAWAY (Streams returns then);
	// Closed whether it closed the connection before Streams had its PING
	// answered.
	GoAway, Closed bool
}

// Streams opens n streams of fields, HEADERS only (neither END_STREAM nor
// DATA), while a goroutine reads what the server answers; then sends a PING
// and waits for its ACK, so that when Streams returns, the server has read
// every frame sent before the PING. A server that sends GOAWAY or closes
// the connection meanwhile ends Streams too. It gives up after timeout.
func (c *Conn) Streams(n int, fields []hpack.HeaderField, timeout time.Duration) (Answers, error) {
	type result struct {
		a   Answers
		err error
	}
	done := make(chan result, 1)
	ping := [8]byte{'h', '2', 'r', 'a', 'w'}
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	defer c.SetReadDeadline(time.Time{})
	go func() {
		var a Answers
		for {
			f, err := c.Fr.ReadFrame()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					done <- result{a, fmt.Errorf("h2raw: no PING ACK within %v: %w", timeout, err)}
					return
				}
				a.Closed = true
				done <- result{a, nil}
				return
			}
			switch f := f.(type) {
			case *http2.MetaHeadersFrame:
				if f.StreamEnded() {
					a.Ended++
					a.Status, a.Message = f.PseudoValue("status"), ""
					for _, hf := range f.RegularFields() {
						switch hf.Name {
						case "grpc-status":
							a.Status = hf.Value
						case "grpc-message":
							a.Message = hf.Value
						}
					}
				}
			case *http2.RSTStreamFrame:
				a.Reset++
			case *http2.GoAwayFrame:
				a.GoAway = true
				done <- result{a, nil}
				return
			case *http2.PingFrame:
				if f.IsAck() && f.Data == ping {
					done <- result{a, nil}
					return
				}
			}
		}
	}()
	var werr error
	for range n {
		if _, werr = c.Headers(false, fields); werr != nil {
			break
		}
	}
	if werr == nil {
		werr = c.Fr.WritePing(false, ping)
	}
	r := <-done
	if werr != nil && !r.a.Closed && !r.a.GoAway {
		return r.a, werr
	}
	return r.a, r.err
}

// Request sends a request of fields on a new stream (HEADERS with
// END_STREAM) and returns the :status of its answer, reading frames until
// it comes (within 30s).
func (c *Conn) Request(fields []hpack.HeaderField) (string, error) {
	id, err := c.Headers(true, fields)
	if err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	for {
		f, err := c.Fr.ReadFrame()
		if err != nil {
			return "", err
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamID == id {
				return f.PseudoValue("status"), nil
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return "", fmt.Errorf("h2raw: stream %d reset: %v", id, f.ErrCode)
			}
		case *http2.GoAwayFrame:
			return "", fmt.Errorf("h2raw: GOAWAY %v", f.ErrCode)
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := c.Fr.WriteSettingsAck(); err != nil {
					return "", err
				}
			}
		}
	}
}

// HTTP returns the fields of an HTTP request: method, path, authority
// "sluice", then extra name, value pairs.
func HTTP(method, path string, extra ...string) []hpack.HeaderField {
	f := []hpack.HeaderField{
		{Name: ":method", Value: method}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: path}, {Name: ":authority", Value: "sluice"},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		f = append(f, hpack.HeaderField{Name: extra[i], Value: extra[i+1]})
	}
	return f
}
