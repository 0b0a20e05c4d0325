package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluicehq/sluice/internal/h2raw"
)

// forwardingTrailers are forwarding fields a client puts in its request's
// trailers, hoping the upstream reads them as the proxy's (X-Forwarded-For
// is the client's address to many), and the harmless one beside them.
var forwardingTrailers = [][2]string{
	{"X-Forwarded-For", "6.6.6.6"}, {"X-Forwarded-Proto", "https"}, {"X-Forwarded-Host", "evil"},
	{"Forwarded", "for=6.6.6.6"}, {"X-Real-Ip", "6.6.6.6"}, {"X_Forwarded_For", "6.6.6.6"}, {"X-Real_IP", "6.6.6.6"},
	{"X-Checksum", "ok"},
}

// TestForwardingFieldsInTrailersDropped: the forwarding fields are dropped
// from request trailers as from heads, from any peer; another trailer passes.
// Over HTTP/1.1 (raw bytes, a chunked body) to an HTTP/1.1 upstream, and over
// HTTP/2 (raw frames) both to an HTTP/1.1 upstream and, for gRPC, over h2c.
func TestForwardingFieldsInTrailersDropped(t *testing.T) {
	t.Run("HTTP/1.1", func(t *testing.T) {
		up, base, _ := rawProxy(t, Params{}, ServerParams{})
		c := dialRaw(t, base)
		req := "POST /t HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"
		for _, f := range forwardingTrailers {
			req += f[0] + ": " + f[1] + "\r\n"
		}
		c.send(t, req+"\r\n")
		conn := up.accept(t)
		got := conn.readRequest(t)
		conn.write(t, freshResponse)
		if resp, _, _ := c.readResponse(t, "POST"); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		_, trailer, _ := strings.Cut(got, "\r\n0\r\n")
		checkTrailers(t, trailer, func(name string) bool {
			return strings.Contains(strings.ToLower(trailer), strings.ToLower(name)+":")
		})
	})
	for _, grpc := range []bool{false, true} {
		name := "HTTP/2 to HTTP/1.1"
		if grpc {
			name = "HTTP/2 to h2c (gRPC)"
		}
		t.Run(name, func(t *testing.T) {
			trailers := make(chan http.Header, 1)
			up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				trailers <- r.Trailer
				if grpc {
					w.Header().Set("Content-Type", "application/grpc")
					w.Header().Set("Grpc-Status", "0")
				}
			}))
			if grpc {
				var p http.Protocols
				p.SetHTTP1(true)
				p.SetUnencryptedHTTP2(true)
				up.Config.Protocols = &p
			}
			up.Start()
			t.Cleanup(up.Close)
			_, base := startProxy(t, Params{Upstream: up.URL}, ServerParams{})
			c := dialH2(t, strings.TrimPrefix(base, "http://"))
			in := frames(c)
			fields := []hpack.HeaderField{
				{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: "/t"}, {Name: ":authority", Value: "app"},
			}
			if grpc {
				fields = h2raw.GRPC("/t.Svc/Put")
			}
			var declared []string
			for _, f := range forwardingTrailers {
				declared = append(declared, f[0])
			}
			fields = append(fields, hpack.HeaderField{Name: "trailer", Value: strings.Join(declared, ", ")})
			id, err := c.Headers(false, fields)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Fr.WriteData(id, false, []byte("abc")); err != nil {
				t.Fatal(err)
			}
			var tf []hpack.HeaderField
			for _, f := range forwardingTrailers {
				tf = append(tf, hpack.HeaderField{Name: strings.ToLower(f[0]), Value: f[1]})
			}
			if err := writeTrailers(c, id, tf); err != nil {
				t.Fatal(err)
			}
			got := recv(t, trailers, "the upstream's request")
			awaitFrame(t, in, "the response", func(f frame) bool { return f.stream == id && f.head })
			checkTrailers(t, got, func(name string) bool { return got.Get(name) != "" || len(got[name]) > 0 })
		})
	}
}

// checkTrailers fails t unless, of forwardingTrailers, only X-Checksum is
// present by has (described as seen).
func checkTrailers(t *testing.T, seen any, has func(name string) bool) {
	t.Helper()
	for _, f := range forwardingTrailers {
		if want := f[0] == "X-Checksum"; has(f[0]) != want {
			t.Errorf("trailer %s reached the upstream: %v, want %v (trailers: %q)", f[0], !want, want, seen)
		}
	}
}

// writeTrailers sends fields as a trailer section (HEADERS with END_STREAM)
// on stream id.
func writeTrailers(c *h2raw.Conn, id uint32, fields []hpack.HeaderField) error {
	var buf strings.Builder
	enc := hpack.NewEncoder(&buf)
	for _, f := range fields {
		if err := enc.WriteField(f); err != nil {
			return err
		}
	}
	return c.Fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte(buf.String()), EndHeaders: true, EndStream: true})
}
