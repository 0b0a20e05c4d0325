package proxy

import (
	"bytes"
	"encoding/binary"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluicehq/sluice/internal/h2raw"
)

// panicLog is a server's error log that keeps the lines telling of a panic
// in a handler (net/http recovers it and logs it; http.ErrAbortHandler, how
// the proxy cuts a response, is not logged).
type panicLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *panicLog) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("panic")) {
		l.mu.Lock()
		l.lines = append(l.lines, string(p))
		l.mu.Unlock()
	}
	return len(p), nil
}

func (l *panicLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.lines
	l.lines = nil
	return lines
}

// FuzzH2Frames sends the proxy, over h2c, the frames the input describes
// (HEADERS opening streams of GET, POST, large and gRPC requests, DATA,
// trailers, RST_STREAM, SETTINGS, WINDOW_UPDATE, PING, and raw frames of any
// type), in a gate's group, in front of an upstream speaking HTTP/1.1 and
// h2c, then closes the connection: no handler panics, and every stream's
// concurrency slot comes back (the group's in-flight count returns to 0).
func FuzzH2Frames(f *testing.F) {
	big := strings.Repeat("b", 64<<10)
	up := startUpstream(f, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Trailer", "Grpc-Status")
			_, _ = w.Write([]byte{0, 0, 0, 0, 1, 'x'})
			w.Header().Set("Grpc-Status", "0")
			return
		}
		if r.URL.Path == "/big" {
			_, _ = io.WriteString(w, big)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}), true)
	g := testGate(f, roomyGroup)
	px, err := New(Params{Upstream: up.URL, Gate: g, ClientTimeout: 200 * time.Millisecond, UpstreamTimeout: 2 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	panics := &panicLog{}
	srv, err := NewServer(ServerParams{Handler: px, ErrorLog: log.New(panics, "", 0)})
	if err != nil {
		f.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go func() { _ = srv.Serve(GuardListener(ln, 0)) }()
	f.Cleanup(func() { _ = srv.Close(); _ = px.Close() })
	addr := ln.Addr().String()

	for _, seed := range [][]byte{
		{0, 1, 0, 0},                         // a GET
		{0, 0, 1, 0, 1, 0, 200, 1},           // a POST, some DATA, the end
		{0, 0, 1, 0, 2, 0, 8},                // a POST reset
		{3, 4, 0, 0, 0, 0, 0, 1, 2, 0, 0},    // no window, a large GET
		{0, 0, 3, 0, 1, 0, 10, 0, 7, 0},      // a gRPC call, a message, trailers
		{6, 1, 4, 1, 3, 0, 0, 0, 8, 0, 1, 0}, // a raw frame
		{0, 1, 0, 0, 2, 0, 8, 0, 1, 0, 0, 2, 0, 8, 0, 1, 0, 0, 2, 0, 8, 5, 4, 0, 0, 0, 0, 0, 1},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := h2raw.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		ended, acked := make(chan struct{}), make(chan struct{}, 1)
		mark := [8]byte{'f', 'u', 'z', 'z'}
		signal := func() {
			select {
			case acked <- struct{}{}:
			default: // said already
			}
		}
		go func() {
			defer close(ended)
			for {
				f, err := c.Fr.ReadFrame()
				if err != nil {
					return
				}
				switch f := f.(type) {
				case *http2.PingFrame:
					if f.IsAck() && f.Data == mark {
						signal()
					}
				case *http2.GoAwayFrame:
					// The server ends the connection and answers no PING
					// after a GOAWAY for an error (it would close only after
					// a second): it read what it will act on.
					if f.ErrCode != http2.ErrCodeNo {
						signal()
					}
				}
			}
		}()
		writeFrames(c, data)
		// Once the PING is answered (or a GOAWAY for an error came), the
		// server has read every frame and started the handlers it will
		// start; then the connection closes.
		if c.Fr.WritePing(false, mark) == nil {
			select {
			case <-acked:
			case <-ended:
			case <-time.After(waitLimit):
				t.Fatalf("no PING ACK (frames %v)", data)
			}
		}
		c.Close()
		<-ended
		for i := 0; ; i++ {
			st, _ := g.Group("all")
			if st.InFlight == 0 {
				break
			}
			if i > 20_000_000 {
				t.Fatalf("%d slots still held after the connection closed (frames %v)", st.InFlight, data)
			}
			runtime.Gosched()
		}
		if lines := panics.take(); len(lines) > 0 {
			t.Fatalf("a handler panicked: %q (frames %v)", lines, data)
		}
	})
}

// writeFrames writes on c the frames data describes, an operation a byte
// (modulo 8) followed by its arguments; it stops at the first failed write
// or when data runs out.
func writeFrames(c *h2raw.Conn, data []byte) {
	var ids []uint32
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	stream := func() uint32 {
		b := next()
		if len(ids) == 0 || b == 255 {
			return uint32(b) // a stream never opened (0: the connection)
		}
		return ids[int(b)%len(ids)]
	}
	for len(data) > 0 {
		var err error
		switch op := next() % 8; op {
		case 0: // HEADERS: a request
			flags, kind := next(), next()
			fields := []hpack.HeaderField{{Name: ":scheme", Value: "http"}, {Name: ":authority", Value: "app"}}
			switch kind % 4 {
			case 0:
				fields = append(fields, hpack.HeaderField{Name: ":method", Value: "GET"}, hpack.HeaderField{Name: ":path", Value: "/a"})
			case 1:
				fields = append(fields, hpack.HeaderField{Name: ":method", Value: "POST"}, hpack.HeaderField{Name: ":path", Value: "/p"},
					hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(int(flags))})
			case 2:
				fields = append(fields, hpack.HeaderField{Name: ":method", Value: "GET"}, hpack.HeaderField{Name: ":path", Value: "/big"})
			case 3:
				fields = h2raw.GRPC("/g.Svc/M")
			}
			var id uint32
			id, err = c.Headers(flags&1 == 1, fields)
			ids = append(ids, id)
		case 1: // DATA
			id, n, flags := stream(), next(), next()
			err = c.Fr.WriteData(id, flags&1 == 1, make([]byte, n))
		case 2: // RST_STREAM
			err = c.Fr.WriteRSTStream(stream(), http2.ErrCode(next()%14))
		case 3: // SETTINGS
			id := http2.SettingID(next()%6 + 1)
			err = c.Fr.WriteSettings(http2.Setting{ID: id, Val: binary.BigEndian.Uint32([]byte{next(), next(), next(), next()})})
		case 4: // WINDOW_UPDATE
			id := stream()
			inc := binary.BigEndian.Uint32([]byte{next() & 0x7f, next(), next(), next()})
			if inc == 0 {
				inc = 1
			}
			err = c.Fr.WriteWindowUpdate(id, inc)
		case 5: // PING
			err = c.Fr.WritePing(next()&1 == 1, [8]byte{next()})
		case 6: // a raw frame
			typ, flags, id, n := next(), next(), stream(), int(next())
			payload := make([]byte, n)
			for i := range payload {
				payload[i] = next()
			}
			err = c.Fr.WriteRawFrame(http2.FrameType(typ%10), http2.Flags(flags), id, payload)
		case 7: // trailers
			id := stream()
			var buf bytes.Buffer
			enc := hpack.NewEncoder(&buf)
			_ = enc.WriteField(hpack.HeaderField{Name: "x-t", Value: "1"})
			err = c.Fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: buf.Bytes(), EndHeaders: true, EndStream: true})
		}
		if err != nil {
			return
		}
	}
}
