package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/internal/h2raw"
)

// stallGroup holds two requests at a time, with no queue: a third is refused
// at once (503, concurrency).
const stallGroup = `
[[group]]
name = "held"
  [group.concurrency]
  law = "fixed"
  limit = 2
  [group.queue]
  max = 0
`

// frame is what a test keeps of a frame a server sent (the framer reuses
// its frames).
type frame struct {
	stream uint32
	head   bool   // a HEADERS frame (with its CONTINUATIONs)
	status string // a head's :status
	reset  bool   // RST_STREAM
	code   http2.ErrCode
	goAway bool
}

// frames reads a raw HTTP/2 connection's frames on a goroutine of its own;
// the test takes them from the channel, which closes when the connection
// ends.
func frames(c *h2raw.Conn) <-chan frame {
	ch := make(chan frame, 1024)
	go func() {
		defer close(ch)
		for {
			f, err := c.Fr.ReadFrame()
			if err != nil {
				return
			}
			k := frame{stream: f.Header().StreamID}
			switch f := f.(type) {
			case *http2.MetaHeadersFrame:
				k.head, k.status = true, f.PseudoValue("status")
			case *http2.RSTStreamFrame:
				k.reset, k.code = true, f.ErrCode
			case *http2.GoAwayFrame:
				k.goAway = true
			}
			ch <- k
		}
	}()
	return ch
}

// awaitFrame takes frames from ch until match accepts one.
func awaitFrame(t *testing.T, ch <-chan frame, what string, match func(frame) bool) frame {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case f, ok := <-ch:
			if !ok {
				t.Fatalf("waiting for %s: the connection ended", what)
			}
			if match(f) {
				return f
			}
		case <-timeout:
			t.Fatalf("waiting for %s: nothing came", what)
		}
	}
}

// acceptCounter is a listener that says on accepted whenever it accepts.
type acceptCounter struct {
	net.Listener
	accepted chan struct{}
}

func (l acceptCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted <- struct{}{}
	}
	return c, err
}

// TestH2StalledStreamsGiveSlotsBack: HTTP/2 streams whose client stalls (it
// grants no flow-control window for a large response, or never sends the body
// it announced) take a group's two slots; a third client is refused
// (concurrency); after the client timeout (1 s here) each stalled stream
// ends (a write stall resets the stream, a read stall is answered 408, as over
// HTTP/1), its slot comes back, its outcome is ignored, and the third client
// is served. Over a plain HTTP/1 upstream and a gRPC one over h2c alike,
// but for gRPC calls whose response head came: those are streams, which
// give their slots back at the head (the third client is served beside
// them) and end at the client timeout all the same.
func TestH2StalledStreamsGiveSlotsBack(t *testing.T) {
	const big = 1 << 20
	const clientTimeout = time.Second
	bigBody := strings.Repeat("b", big)
	for _, tc := range []struct {
		name   string
		grpc   bool
		window bool // the client grants no window: the response stalls
		fields []hpack.HeaderField
	}{
		{"HTTP/1 upstream, no window for a large response", false, true, []hpack.HeaderField{
			{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: "/big"}, {Name: ":authority", Value: "app"},
		}},
		{"HTTP/1 upstream, a body announced and not sent", false, false, []hpack.HeaderField{
			{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: "/post"}, {Name: ":authority", Value: "app"},
			{Name: "content-length", Value: "10"},
		}},
		{"gRPC upstream, no window for a large response", true, true, h2raw.GRPC("/big.Svc/Get")},
		{"gRPC upstream, a body not sent", true, false, h2raw.GRPC("/post.Svc/Put")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			arrived := make(chan struct{}, 16) // the upstream saw a request or a connection
			up := stallUpstream(t, tc.grpc, arrived, bigBody)

			g := testGate(t, stallGroup)
			adm := newFinishes(t)
			_, base := startWatched(t, adm, Params{Upstream: up.URL, Gate: g, ClientTimeout: clientTimeout}, ServerParams{})
			c, err := h2raw.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if tc.window {
				if err := c.Fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
					t.Fatal(err)
				}
			}
			in := frames(c)
			opened := time.Now() // no stall can end a stream before opened + clientTimeout
			ids := map[uint32]bool{}
			for range 2 {
				id, err := c.Headers(tc.window, tc.fields)
				if err != nil {
					t.Fatal(err)
				}
				ids[id] = true
			}
			// Both streams hold their slots: the response heads came (no
			// window), or the upstream was reached.
			for range 2 {
				if tc.window {
					awaitFrame(t, in, "a response head", func(f frame) bool { return f.head && ids[f.stream] })
				} else {
					recv(t, arrived, "the upstream to be reached")
				}
			}
			// A gRPC call whose response head came is a stream: it gave its
			// slot back at the head, its latency the time to it, and holds a
			// stream slot till it ends.
			stream := tc.grpc && tc.window
			if stream {
				for range 2 {
					if f := adm.outcome(t); f.outcome != gate.Success || f.latency >= clientTimeout {
						t.Errorf("a gRPC stream finished %v after %v at its head, want success at once", f.outcome, f.latency)
					}
				}
				if st := groupStatus(t, g, "held"); st.Streams.Open != 2 || st.InFlight != 0 {
					t.Errorf("streams %+v, in flight %d; want 2 open, none in flight", st.Streams, st.InFlight)
				}
			}
			client := newClient(t, false)
			resp, err := client.Get(base + "/small")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			switch {
			case stream && resp.StatusCode == http.StatusOK:
			case stream:
				t.Fatalf("beside two streams: %d %q, want 200", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
			case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Sluice-Reason") == "concurrency":
			case time.Since(opened) >= clientTimeout:
				// A loaded machine took longer than the client timeout to
				// get here: the stalled streams may have ended already.
				t.Logf("the third client was answered %d after %v: the slots were not shown held", resp.StatusCode, time.Since(opened))
			default:
				t.Fatalf("with both slots held: %d %q, want 503 concurrency", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
			}

			// The client timeout ends both streams.
			awaitStalledEnds(t, adm, in, ids, stream, tc.window, clientTimeout)
			resp, err = client.Get(base + "/small")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != "small" {
				t.Fatalf("after the stalled streams ended: %d %q, want 200", resp.StatusCode, body)
			}
		})
	}
}

// stallUpstream starts the upstream of TestH2StalledStreamsGiveSlotsBack: it
// answers /small at once and anything else with body after reading the
// request's body; over gRPC (h2c) it tells arrived of each request, else
// of each connection.
func stallUpstream(t *testing.T, grpc bool, arrived chan struct{}, body string) *httptest.Server {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			_, _ = io.WriteString(w, "small")
			return
		}
		if grpc {
			arrived <- struct{}{}
		}
		_, _ = io.Copy(io.Discard, r.Body)
		if grpc {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Trailer", "Grpc-Status")
		}
		_, _ = io.WriteString(w, body)
		if grpc {
			w.Header().Set("Grpc-Status", "0")
		}
	})
	up := httptest.NewUnstartedServer(h)
	if grpc {
		var p http.Protocols
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		up.Config.Protocols = &p
	} else {
		up.Listener = acceptCounter{up.Listener, arrived}
	}
	up.Start()
	t.Cleanup(up.Close)
	return up
}

// awaitStalledEnds waits for the client timeout to end the streams ids: each
// finishes ignored after at least timeout (unless stream: they finished at
// their response heads), and ends by a reset when the client granted no
// window, else by a 408.
func awaitStalledEnds(t *testing.T, adm *finishes, in <-chan frame, ids map[uint32]bool, stream, window bool, timeout time.Duration) {
	t.Helper()
	for range len(ids) {
		if stream {
			break // finished at their heads
		}
		f := adm.outcome(t)
		if f.outcome != gate.Ignored || f.latency < timeout {
			t.Errorf("a stalled stream finished %v after %v, want ignored after at least %v", f.outcome, f.latency, timeout)
		}
	}
	for len(ids) > 0 {
		f := awaitFrame(t, in, "the stalled streams' end", func(f frame) bool { return ids[f.stream] && (f.reset || f.head) })
		switch {
		case f.reset && !window:
			t.Errorf("stream %d reset (%v), want a 408", f.stream, f.code)
		case f.head && (window || f.status != "408"):
			t.Errorf("stream %d answered %s, want a reset", f.stream, f.status)
		}
		delete(ids, f.stream)
	}
}

// TestH2StreamsPerConnection: one HTTP/2 connection opens at most
// MaxConcurrentStreams streams at once (NewServer's default, 100): with 100
// open (their bodies never sent), the next is reset (REFUSED_STREAM), and
// the upstream is reached for none beyond the 100.
func TestH2StreamsPerConnection(t *testing.T) {
	arrived := make(chan struct{}, 256)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	up.Listener = acceptCounter{up.Listener, arrived}
	up.Start()
	t.Cleanup(up.Close)
	_, base := startProxy(t, Params{Upstream: up.URL, Gate: testGate(t, roomyGroup)}, ServerParams{})
	c, err := h2raw.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.ReadServerPreface(); err != nil {
		t.Fatal(err)
	}
	post := []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: "/post"}, {Name: ":authority", Value: "app"},
		{Name: "content-length", Value: "10"},
	}
	// Let the server's SETTINGS (its stream limit) be acknowledged first, as
	// a client must before it can know the limit.
	if err := c.Fr.WriteSettingsAck(); err != nil {
		t.Fatal(err)
	}
	a, err := c.Streams(defaultMaxStreams, post, waitLimit)
	if err != nil || a.Reset != 0 || a.GoAway || a.Closed {
		t.Fatalf("the first %d streams: %+v, %v; want none refused", defaultMaxStreams, a, err)
	}
	for range defaultMaxStreams {
		recv(t, arrived, "the upstream to be reached")
	}
	a, err = c.Streams(1, post, waitLimit)
	if err != nil || a.Reset != 1 {
		t.Fatalf("stream %d: %+v, %v; want it reset", defaultMaxStreams+1, a, err)
	}
	select {
	case <-arrived:
		t.Fatal("the upstream was reached for a stream beyond the bound")
	default:
	}
}
