package proxy

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A spliced connection (an upgrade) is two pumps, one per direction, each on
// its own goroutine. An idle pump holds no buffer: it waits until its source
// is readable (waitReadable, on the socket itself where it can), then reads
// into a buffer from a pool and writes it on. Ten thousand idle WebSockets
// cost their goroutines and sockets, not 64 KiB of buffers each.
//
// For a WebSocket each pump follows the frames it copies (wsFrames), so that
// a shutdown can end both sides with a close frame, status 1001 (going
// away), between two frames (RFC 6455 §5.5.1, §7.4.1).

// spliceBufs are the pumps' buffers, taken only while bytes are moving.
var spliceBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// wsFrames follows a WebSocket byte stream frame by frame: how much of the
// current frame's head or payload is still to come.
type wsFrames struct {
	head    [14]byte // the current frame's head, as far as it came
	got     int      // bytes of head
	payload uint64   // payload bytes still to come
}

// advance takes in the next bytes of the stream.
func (f *wsFrames) advance(b []byte) {
	for len(b) > 0 {
		if f.payload > 0 {
			n := min(uint64(len(b)), f.payload)
			f.payload -= n
			b = b[n:]
			continue
		}
		f.head[f.got] = b[0]
		f.got++
		b = b[1:]
		if need := f.headLen(); f.got == need {
			f.payload = f.payloadLen()
			f.got = 0
		}
	}
}

// headLen is the length of the current frame's head, as far as known: 2
// until its second byte came.
func (f *wsFrames) headLen() int {
	if f.got < 2 {
		return 2
	}
	n := 2
	switch f.head[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if f.head[1]&0x80 != 0 { // masked: the client's
		n += 4
	}
	return n
}

func (f *wsFrames) payloadLen() uint64 {
	switch l := f.head[1] & 0x7f; l {
	case 126:
		return uint64(binary.BigEndian.Uint16(f.head[2:4]))
	case 127:
		return binary.BigEndian.Uint64(f.head[2:10])
	default:
		return uint64(l)
	}
}

// between reports whether the stream is between two frames.
func (f *wsFrames) between() bool { return f.got == 0 && f.payload == 0 }

// wsGoingAway is a close frame with status 1001 and a reason, unmasked (a
// server's); wsGoingAwayMasked the same from a client (masked with a zero
// key, which RFC 6455 allows: the key must be unpredictable to fight cache
// poisoning by a browser's scripts, which a proxy's own frame is not).
var wsGoingAway, wsGoingAwayMasked = wsClose(false), wsClose(true)

func wsClose(masked bool) []byte {
	const reason = "sluice is shutting down"
	payload := append([]byte{0x03, 0xe9}, reason...) // 1001
	b := []byte{0x88, byte(len(payload))}            // FIN, opcode close
	if masked {
		b[1] |= 0x80
		b = append(b, 0, 0, 0, 0) // a zero key leaves the payload as it is
	}
	return append(b, payload...)
}

// pumpSide is one direction of a spliced connection.
type pumpSide struct {
	src, dst net.Conn
	raw      syscall.RawConn // src's socket, nil when it has none (TLS)
	frames   *wsFrames       // non-nil for a WebSocket
}

// newPumpSide returns the pump copying src to dst; ws follows its frames.
func newPumpSide(src, dst net.Conn, ws bool) *pumpSide {
	s := &pumpSide{src: src, dst: dst, raw: rawConnOf(src)}
	if ws {
		s.frames = new(wsFrames)
	}
	return s
}

// run copies until src ends or fails, or a read deadline (a cut) stops it.
func (s *pumpSide) run() {
	for {
		if s.raw != nil {
			if err := waitReadable(s.raw); err != nil {
				return
			}
		}
		bp := spliceBufs.Get().(*[]byte)
		n, err := s.src.Read(*bp)
		if n > 0 {
			if s.frames != nil {
				s.frames.advance((*bp)[:n])
			}
			if _, werr := s.dst.Write((*bp)[:n]); werr != nil {
				spliceBufs.Put(bp)
				return
			}
		}
		spliceBufs.Put(bp)
		if err != nil {
			return
		}
	}
}

// rawConnOf returns c's socket for waiting on without a buffer, under the
// proxy's own wrappers; nil when it has none (TLS), or when a wrapper holds
// bytes of its own to give first.
func rawConnOf(c net.Conn) syscall.RawConn {
	inner, held := innerConn(c)
	sc, ok := inner.(syscall.Conn)
	if held || !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// innerOf is innerConn's connection alone.
func innerOf(c net.Conn) net.Conn { inner, _ := innerConn(c); return inner }

// innerConn returns the connection under the proxy's own wrappers
// (limitedConn, guardConn), and whether a guardConn on the way holds bytes
// it has read and not given yet.
func innerConn(c net.Conn) (inner net.Conn, held bool) {
	for {
		switch w := c.(type) {
		case *limitedConn:
			c = w.Conn
		case *guardConn:
			held = held || len(w.out) > 0 || len(w.held) > 0
			c = w.Conn
		default:
			return c, held
		}
	}
}

// splicedConn is a spliced connection's two sides, and its cut.
type splicedConn struct {
	client, up net.Conn
	toUp, toCl *pumpSide
	cutting    atomic.Bool
}

// cut stops both pumps: they see their reads end and close their sides
// (with close frames for a WebSocket; see serve).
func (sc *splicedConn) cut() {
	sc.cutting.Store(true)
	past := time.Unix(1, 0)
	_ = sc.client.SetReadDeadline(past)
	_ = sc.up.SetReadDeadline(past)
}

// wsCloseWait is how long a cut WebSocket's client has to answer the close
// frame before its connection is closed.
const wsCloseWait = time.Second

// serve runs both pumps until either side ends, or a cut ends both; then it
// closes both connections. On a cut a WebSocket's sides get their close
// frames, where their streams are between two frames, and the client a
// moment to answer before its connection closes.
func (sc *splicedConn) serve() {
	done := make(chan struct{})
	go func() {
		sc.toUp.run()
		if sc.cutting.Load() && sc.toUp.frames != nil && sc.toUp.frames.between() {
			_ = sc.up.SetWriteDeadline(time.Now().Add(wsCloseWait))
			_, _ = sc.up.Write(wsGoingAwayMasked)
		}
		_ = sc.up.Close()
		close(done)
	}()
	sc.toCl.run()
	if !sc.cutting.Load() {
		_ = sc.client.Close() // either side's end ends both
		<-done
		return
	}
	<-done // the client is no longer read: its close answer is this side's to read
	if sc.toCl.frames != nil && sc.toCl.frames.between() {
		_ = sc.client.SetWriteDeadline(time.Now().Add(wsCloseWait))
		if _, err := sc.client.Write(wsGoingAway); err == nil {
			if cw, ok := innerOf(sc.client).(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
			_ = sc.client.SetReadDeadline(time.Now().Add(wsCloseWait))
			var b [512]byte
			for {
				if _, err := sc.client.Read(b[:]); err != nil {
					break
				}
			}
		}
	}
	_ = sc.client.Close()
}
