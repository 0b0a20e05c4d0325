package proxy

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// wsFrame builds one WebSocket frame's bytes: a text frame of n payload
// bytes, masked (a client's) or not, with the shortest length encoding.
func wsFrame(n int, masked bool) []byte {
	b := []byte{0x81, 0}
	switch {
	case n < 126:
		b[1] = byte(n)
	case n < 1<<16:
		b[1] = 126
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b[1] = 127
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if masked {
		b[1] |= 0x80
		b = append(b, 1, 2, 3, 4)
	}
	return append(b, bytes.Repeat([]byte{'x'}, n)...)
}

// wsFrames tells the boundaries between frames of every length encoding,
// masked or not, however the bytes are cut into reads; and the close frames
// it would write are frames it reads as whole.
func TestWSFramesBoundaries(t *testing.T) {
	var stream []byte
	var ends []int // offsets at which a frame ends
	for _, n := range []int{0, 1, 125, 126, 127, 65535, 65536, 70000} {
		for _, masked := range []bool{false, true} {
			stream = append(stream, wsFrame(n, masked)...)
			ends = append(ends, len(stream))
		}
	}
	for _, chunk := range []int{1, 2, 3, 7, 13, 4096, len(stream)} {
		var f wsFrames
		at := map[int]bool{}
		for _, e := range ends {
			at[e] = true
		}
		for off := 0; off < len(stream); {
			n := min(chunk, len(stream)-off)
			// between() is asked after every read (every offset, for
			// chunks of one byte).
			f.advance(stream[off : off+n])
			off += n
			if got := f.between(); got != at[off] {
				t.Fatalf("chunks of %d: between() = %v at offset %d, want %v", chunk, got, off, at[off])
			}
		}
	}
	for _, close := range [][]byte{wsGoingAway, wsGoingAwayMasked} {
		var f wsFrames
		f.advance(close[:len(close)-1])
		if f.between() {
			t.Fatalf("close frame %x: between before its last byte", close)
		}
		f.advance(close[len(close)-1:])
		if !f.between() || close[0] != 0x88 || binary.BigEndian.Uint16(close[len(close)-len("sluice is shutting down")-2:]) != 1001 {
			t.Fatalf("close frame %x: not one whole close frame with status 1001", close)
		}
	}
}
