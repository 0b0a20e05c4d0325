package proxy

import (
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluicehq/sluice/internal/h2raw"
)

// TestH2PseudoHeadersRefused sends HTTP/2 requests whose :method is not a
// token or whose :path is not a request-target a request line can carry (a
// space, a tab, a control byte, no leading slash, "*" with another method
// than OPTIONS), in raw frames: each is answered 400 (or, for a control byte
// or no leading slash, reset by net/http's server itself) and reaches neither
// the gate nor the upstream (which would otherwise get them raw in its request
// line: "POST\t /d1 HTTP/1.1"), over either upstream protocol.
func TestH2PseudoHeadersRefused(t *testing.T) {
	for _, proto := range []struct {
		name string
		p    Protocol
	}{{"auto", ProtocolAuto}, {"h2c", ProtocolH2C}} {
		up, base, _ := rawProxy(t, Params{Protocol: proto.p}, ServerParams{})
		c, err := h2raw.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		in := frames(c)
		for _, tc := range []struct{ method, path string }{
			{"POST\t", "/d1"},
			{"PO ST", "/d1"},
			{"GET(", "/d1"},
			{"GET", "/a b"},
			{"GET", "/a\tb"},
			{"GET", "/a\x01b"},
			{"GET", "/a\x7fb"},
			{"GET", "/a?b c"},
			{"GET", "a/b"},
			{"GET", "*"},
			{"POST", "*"},
		} {
			id, err := c.Headers(true, []hpack.HeaderField{
				{Name: ":method", Value: tc.method}, {Name: ":scheme", Value: "http"},
				{Name: ":path", Value: tc.path}, {Name: ":authority", Value: "app"},
			})
			if err != nil {
				t.Fatal(err)
			}
			f := awaitFrame(t, in, "an answer", func(f frame) bool { return f.stream == id && (f.head || f.reset) })
			if (!f.head || f.status != "400") && (!f.reset || f.code != http2.ErrCodeProtocol) {
				t.Errorf("%s: :method %q :path %q: %+v, want a 400 or a reset", proto.name, tc.method, tc.path, f)
			}
		}
		up.noConn(t)
	}
}
