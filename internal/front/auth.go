package front

import (
	"bytes"
	"io"
	"net"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/internal/listen"
)

// MaxHeaderBytes bounds the header fields of a gRPC stream on a front-end,
// decoded (HTTP/2's SETTINGS_MAX_HEADER_LIST_SIZE): far beyond a call's
// pseudo-headers, content type and token.
const MaxHeaderBytes = 16 << 10

// maxPrelude bounds what a gRPC connection may send before the headers of
// its first stream end: its preface, settings, window updates and those
// headers.
const maxPrelude = 4 * MaxHeaderBytes

// authenticate reads what a gRPC connection c sends up to the end of its
// first stream's headers, first being the bytes read already, and returns
// all it read (for the gRPC server to read again) when those headers carry
// the door's token, within firstTimeout. Otherwise it answers that stream
// UNAUTHENTICATED (when there is one), sends GOAWAY, closes c and returns
// nil. Until the gRPC server takes c, c costs its goroutine and the bytes
// read: neither a transport nor a stream is made for a client without the
// token.
//
// It writes an empty SETTINGS frame first, the server's preface, which a
// client may wait for before its first stream (grpc-go does); the gRPC
// server then sends its own settings, which take effect from there (RFC
// 9113 §6.5), and ignores the client's acknowledgement of the empty frame.
func (d *Door) authenticate(c net.Conn, first []byte) []byte {
	rec := bytes.NewBuffer(make([]byte, 0, 512))
	rec.Write(first)
	r := io.TeeReader(io.LimitReader(c, maxPrelude), rec)
	_ = c.SetReadDeadline(time.Now().Add(firstTimeout))
	rest := make([]byte, len(http2.ClientPreface)-len(first))
	if _, err := io.ReadFull(r, rest); err != nil || rec.String() != http2.ClientPreface {
		c.Close()
		return nil
	}
	fr := http2.NewFramer(c, r)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.MaxHeaderListSize = MaxHeaderBytes
	if err := fr.WriteSettings(); err != nil {
		c.Close()
		return nil
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			c.Close()
			return nil
		}
		switch f := f.(type) {
		case *http2.SettingsFrame, *http2.WindowUpdateFrame, *http2.PingFrame, *http2.PriorityFrame, *http2.UnknownFrame:
			continue // the gRPC server reads them again
		case *http2.MetaHeadersFrame:
			if !f.Truncated && d.allows(f) {
				_ = c.SetReadDeadline(time.Time{})
				return rec.Bytes()
			}
			refuse(c, fr, f.StreamID)
			return nil
		}
		c.Close() // data, a reset or GOAWAY before any stream: not gRPC
		return nil
	}
}

// allows reports whether the headers of a stream carry the token, as
// Guard.Tap checks every later stream's.
func (d *Door) allows(f *http2.MetaHeadersFrame) bool {
	n, ok := 0, false
	for _, hf := range f.RegularFields() {
		if hf.Name == "authorization" {
			n++
			ok = d.Allows(hf.Value)
		}
	}
	return n == 1 && ok
}

// unauthenticated is the header block of the answer to a stream without the
// token: gRPC's trailers-only response with status UNAUTHENTICATED and the
// message the gRPC server gives a later stream (listen.ErrUnauthenticated,
// printable ASCII without "%", so its grpc-message needs no escaping).
var unauthenticated = func() []byte {
	var b bytes.Buffer
	e := hpack.NewEncoder(&b)
	st := status.Convert(listen.ErrUnauthenticated)
	for _, f := range [...]hpack.HeaderField{
		{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"},
		{Name: "grpc-status", Value: "16"}, {Name: "grpc-message", Value: st.Message()},
	} {
		_ = e.WriteField(f)
	}
	return b.Bytes()
}()

// refuse answers stream id of c UNAUTHENTICATED, sends GOAWAY and closes c,
// after reading for up to a second what the client sent meanwhile (at most
// maxPrelude bytes), so that closing does not reset the connection before
// the answer is read.
func refuse(c net.Conn, fr *http2.Framer, id uint32) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: unauthenticated, EndStream: true, EndHeaders: true}) != nil ||
		fr.WriteGoAway(id, http2.ErrCodeNo, nil) != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.CopyN(io.Discard, c, maxPrelude)
}
