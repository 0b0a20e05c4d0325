package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/proxy/h1"

	"github.com/sluicehq/sluice/gate"
)

// FuzzResponseHead checks the upstream response parser against net/http's
// http.ReadResponse, on a head and whatever bytes follow it (a body, the next
// response), for a GET or a HEAD. It never panics, and what it keeps is
// well-formed. Where both accept the head:
//
//   - the status and the framing agree: whether the body is chunked, its
//     length, and whether it runs to the end of the connection; a connection
//     net/http would not reuse after the response, the proxy does not reuse;
//   - every field net/http keeps and the proxy forwards has the same values,
//     looked up under its trimmed, canonical name (net/http keeps "X-Foo :bar"
//     under "X-Foo ", the proxy forwards it as X-Foo, as RFC 9112 §5.1 says);
//   - reading the body, the proxy refuses whatever net/http's reader refuses,
//     and where both read it they yield the same bytes and stop at the same
//     place: the next response starts at the same byte for both (a desync is
//     where the two would disagree).
func FuzzResponseHead(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n0\r\nX-T: v\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.0 404 Not Found\r\nConnection: keep-alive, X-A\r\nX-A: 1\r\nX-B: 2\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nX:  spaced \t\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
		"HTTP/1.1 200 OK\nBare: lf\n\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nxy",
		"HTTP/1.1 999 Weird\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-Foo :bar\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\nx\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		method := "GET"
		if head {
			method = "HEAD"
		}
		// Both parsers read on into a next response, as on a live
		// connection (net/http's trailer reader wants two bytes to peek at).
		data = append(data[:len(data):len(data)], "HTTP/1.1 204 No Content\r\n\r\n"...)
		var sc h1.Scratch
		dst := http.Header{}
		budget := 4096
		ourR := bytes.NewReader(data)
		br := bufio.NewReaderSize(ourR, 16)
		h, err := sc.ReadResponseHead(br, dst, &budget)
		if err != nil {
			return
		}
		if h.Status < 100 || h.Status > 599 || (h.Chunked && h.Length >= 0) {
			t.Fatalf("head %+v", h)
		}
		for k, vv := range dst {
			if k != textproto.CanonicalMIMEHeaderKey(k) || !h1.ValidFieldName(k) || h1.ResponseSkipped(k) {
				t.Fatalf("field name %q kept", k)
			}
			for _, v := range vv {
				if strings.ContainsAny(v, "\r\n\x00") || v != strings.Trim(v, " \t") {
					t.Fatalf("field %s value %q kept", k, v)
				}
			}
		}
		refR := bytes.NewReader(data)
		refBR := bufio.NewReaderSize(refR, 4096) // as net/http's Transport reads
		ref, err := http.ReadResponse(refBR, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("took a head net/http refuses (%v): %+v %q", err, h, dst)
		}
		if ref.StatusCode != h.Status {
			t.Fatalf("status %d, net/http says %d", h.Status, ref.StatusCode)
		}

		// Framing.
		bodyless := h.Bodyless(method)
		refChunked := len(ref.TransferEncoding) > 0 && ref.TransferEncoding[0] == "chunked"
		if !bodyless && h.Chunked != refChunked {
			t.Fatalf("chunked %v, net/http says %v (%q)", h.Chunked, refChunked, ref.TransferEncoding)
		}
		if !bodyless && h.Length != ref.ContentLength {
			t.Fatalf("length %d, net/http says %d", h.Length, ref.ContentLength)
		}
		untilEOF := !bodyless && !h.Chunked && h.Length < 0
		reuse := !h.Close && !untilEOF
		refReuse := !ref.Close && (bodyless || ref.ContentLength >= 0 || refChunked)
		if reuse && !refReuse {
			t.Fatalf("reused where net/http closes (close %v, length %d)", ref.Close, ref.ContentLength)
		}

		sameFields(t, dst, ref.Header)

		// The body, and where the next response starts.
		refBody, refErr := io.ReadAll(ref.Body)
		refNext := refR.Len() + refBR.Buffered()
		sameBody(t, br, ourR.Len, &h, bodyless, refBody, refErr, refNext)
	})
}

// sameFields fails t unless dst, the fields the proxy kept of a response
// head, are those of ref, net/http's reading of it, under their trimmed
// canonical names, less the hop-by-hop and framing ones.
func sameFields(t *testing.T, dst, ref http.Header) {
	t.Helper()
	refFields := http.Header{}
	for k, vv := range ref {
		name := textproto.CanonicalMIMEHeaderKey(strings.TrimRight(k, " \t"))
		refFields[name] = append(refFields[name], vv...)
	}
	named := ref["Connection"]
	for k, vv := range refFields {
		if h1.ResponseSkipped(k) || k == "Content-Length" || k == "Trailer" || h1.ConnectionListed(named, k) {
			continue
		}
		got, want := slices.Clone(dst[k]), slices.Clone(vv)
		if len(ref[k]) != len(vv) { // gathered from two keys: the order is lost
			slices.Sort(got)
			slices.Sort(want)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("field %s: %q, net/http says %q", k, dst[k], vv)
		}
	}
}

// sameBody fails t unless the proxy copies the body of the response whose
// head h it read from br as net/http read it (refBody, refErr), and leaves
// where net/http left the next response: refNext bytes unread (left() of
// them not yet in br). A body the proxy refuses where net/http reads one is
// stricter, and passes.
func sameBody(t *testing.T, br *bufio.Reader, left func() int, h *h1.ResponseHead, bodyless bool, refBody []byte, refErr error, refNext int) {
	t.Helper()
	if bodyless {
		if next := left() + br.Buffered(); refErr != nil || len(refBody) != 0 || next != refNext {
			t.Fatalf("bodyless: net/http read %q (%v); %d bytes left, for net/http %d", refBody, refErr, next, refNext)
		}
		return
	}
	p := &Proxy{upstreamTimeout: time.Second, maxHead: 4096}
	c := &h1.Conn{Net: deadlineConn{}, R: br}
	w := &recWriter{h: http.Header{}}
	cs := clientSide{w: w, ctl: w}
	upErr, clErr := p.copyResponse(&cs, c, h)
	if clErr != nil {
		t.Fatalf("client error %v", clErr)
	}
	if refErr != nil {
		if upErr == nil {
			t.Fatalf("read the body %q where net/http failed: %v", w.body.Bytes(), refErr)
		}
		return
	}
	if upErr != nil {
		return // stricter than net/http
	}
	if !bytes.Equal(w.body.Bytes(), refBody) {
		t.Fatalf("body %q, net/http reads %q", w.body.Bytes(), refBody)
	}
	if next := left() + br.Buffered(); next != refNext {
		t.Fatalf("%d bytes left after the response, for net/http %d", next, refNext)
	}
}

// FuzzGRPCStatus checks the grpc-status parser against strconv.
func FuzzGRPCStatus(f *testing.F) {
	for _, s := range []string{"0", "14", " 8 ", "-1", "1.0", "", "999999999", "1234567890"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		code, ok := parseGRPCStatus(s)
		if !ok {
			return
		}
		want, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || want != code || code < 0 {
			t.Fatalf("parseGRPCStatus(%q) = %d, strconv says %d (%v)", s, code, want, err)
		}
		_ = grpcOutcome(code)
	})
}

// FuzzGRPCKind checks that Content-Type classification ignores case and only
// recognises the application/grpc family.
func FuzzGRPCKind(f *testing.F) {
	for _, s := range []string{"application/grpc", "application/grpc+proto", "application/grpc-web-text", "application/grpcx", "text/plain", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		g := grpcKindOf(ct)
		if g2 := grpcKindOf(strings.ToUpper(ct)); g2 != g && strings.ToUpper(ct) == strings.ToUpper(strings.ToLower(ct)) {
			t.Fatalf("%q is %d, upper case %d", ct, g, g2)
		}
		if g != grpcNone && !strings.HasPrefix(strings.ToLower(ct), "application/grpc") {
			t.Fatalf("%q classified as gRPC", ct)
		}
	})
}

// FuzzRequestHead checks the request head writer: whatever a request carries, the
// head is one well-formed message (no field smuggled in by a line break), and
// when net/http can read it back, it has the same method, fields and query,
// and the path gate.NormalPath made of the client's: the upstream is sent the
// path that was matched, so that a fresh classification of what it received
// finds the group the request was counted in.
func FuzzRequestHead(f *testing.F) {
	f.Add("GET", "/a?b=c", "example.com", "X-Custom", "value", "10.0.0.1:5", "1.1.1.1")
	f.Add("POST", "/", "h", "X-A", "a\r\nX-Injected: 1", "[::1]:1", "")
	f.Add("GET", "/", "h\r\nX-Injected: 1", "Bad Name", "v", "@", "2.2.2.2, 3.3.3.3\nX-Injected: 2")
	f.Add("GET", "//limited/./a/../b?x=%2e", "h", "X-A", "v", "10.0.0.1:5", "")
	f.Add("GET", "/%2e/limited/%41%20?", "h", "X-A", "v", "10.0.0.1:5", "")
	f.Add("GET", "/limited/x/../caf%C3%A9", "h", "X-A", "v", "10.0.0.1:5", "")
	g := testGate(f, `
[[group]]
name = "exact"
match = { path = "/limited/café" }
[[group]]
name = "limited"
match = { path_prefix = "/limited/" }
[[group]]
name = "keyed"
match = { path_prefix = "/k" }
key = "path"
`)
	f.Fuzz(func(t *testing.T, method, uri, host, key, value, remote, xff string) {
		if _, err := url.ParseRequestURI(uri); err != nil || !h1.ValidFieldName(method) || uri[0] != '/' || strings.Contains(uri, " ") || hasCTL(uri) {
			return // net/http's server never hands such a request line over
		}
		p := &Proxy{up: upstream{host: "up:80"}}
		r := &http.Request{Method: method, RequestURI: uri, Host: host, RemoteAddr: remote,
			Header: http.Header{key: {value}, "X-Forwarded-For": {xff}}, ProtoMajor: 1, ProtoMinor: 1}
		r.URL, _ = url.ParseRequestURI(uri)
		path, match, err := gate.NormalPath(gate.RequestPath(r))
		if err != nil {
			return // answered 400, never forwarded
		}
		class := g.ClassifyPath(r, match)
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		p.writeRequestHead(bw, r, path, "", bodyNone)
		bw.Flush()
		head := buf.String()
		if !strings.HasSuffix(head, "\r\n\r\n") || strings.Count(head, "\r\n\r\n") != 1 {
			t.Fatalf("not one head:\n%q", head)
		}
		lines := strings.Split(strings.TrimSuffix(head, "\r\n\r\n"), "\r\n")
		for _, l := range lines[1:] {
			name, _, ok := strings.Cut(l, ": ")
			if !ok || !h1.ValidFieldName(name) || strings.ContainsAny(l, "\r\n\x00") {
				t.Fatalf("bad field line %q in\n%q", l, head)
			}
			if name == "X-Injected" && key != "X-Injected" {
				t.Fatalf("a field was smuggled in:\n%q", head)
			}
		}
		if hasCTL(host + key + value + xff + remote) {
			return // passed on as is (no split is possible); net/http would refuse it
		}
		got, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
		if err != nil {
			t.Fatalf("head does not parse: %v\n%q", err, head)
		}
		want := path
		if i := strings.IndexByte(uri, '?'); i >= 0 {
			want += uri[i:]
		}
		if got.Method != method || got.RequestURI != want {
			t.Fatalf("method %q uri %q, want %q %q (sent %q)", got.Method, got.RequestURI, method, want, uri)
		}
		if again := g.Classify(got); again.Group() != class.Group() || again.Key != class.Key {
			t.Fatalf("%q was counted in %s (key %q); what the upstream got, %q, classifies into %s (key %q)",
				uri, class.Group(), class.Key, got.RequestURI, again.Group(), again.Key)
		}
		if textproto.CanonicalMIMEHeaderKey(key) == key && h1.ValidFieldName(key) && !requestSkipped(key) {
			if v := got.Header.Get(key); v != strings.Trim(value, " \t") {
				t.Fatalf("field %s = %q, want %q", key, v, value)
			}
		}
		if got.Header.Get("X-Forwarded-Proto") != "http" {
			t.Fatalf("X-Forwarded-Proto %q", got.Header.Get("X-Forwarded-Proto"))
		}
	})
}

// hasCTL reports whether s holds a control character other than HT, or DEL.
func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && (c < 0x20 || c == 0x7f) {
			return true
		}
	}
	return false
}

// plainASCII reports whether s is non-empty printable ASCII without spaces or
// commas: what an address may be.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == ',' {
			return false
		}
	}
	return s != ""
}

// recWriter records a response body and has net/http's controls as no-ops.
type recWriter struct {
	h    http.Header
	body bytes.Buffer
}

func (w *recWriter) Header() http.Header              { return w.h }
func (w *recWriter) WriteHeader(int)                  {}
func (w *recWriter) Write(b []byte) (int, error)      { return w.body.Write(b) }
func (w *recWriter) FlushError() error                { return nil }
func (w *recWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *recWriter) SetWriteDeadline(time.Time) error { return nil }
func (w *recWriter) EnableFullDuplex() error          { return nil }

// deadlineConn is a net.Conn whose deadlines do nothing; the fuzz targets read
// through a bufio.Reader over bytes instead.
type deadlineConn struct{ net.Conn }

func (deadlineConn) SetReadDeadline(time.Time) error  { return nil }
func (deadlineConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzChunkedBody checks the chunked body decoder: it never panics, and where
// net/http's own decoder also accepts the body, both yield the same bytes; the
// trailer fields it keeps are well-formed.
func FuzzChunkedBody(f *testing.F) {
	for _, s := range []string{
		"5\r\nhello\r\n0\r\n\r\n",
		"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 1\r\n\r\n",
		"A\r\n0123456789\r\n0\r\n\r\n",
		"5\r\nhel\r\n",
		"5\r\nhelloXX\r\n0\r\n\r\n",
		"zz\r\n",
		"0\r\nContent-Length: 5\r\nX-T: v\r\n\r\n",
		"1\nx\n0\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &Proxy{upstreamTimeout: time.Second, maxHead: 4096}
		c := &h1.Conn{Net: deadlineConn{}, R: bufio.NewReaderSize(bytes.NewReader(data), 16)}
		w := &recWriter{h: http.Header{}}
		cs := clientSide{w: w, ctl: w}
		upErr, clErr := p.copyChunked(&cs, c)
		if clErr != nil {
			t.Fatalf("client error %v", clErr)
		}
		for k, vv := range w.h {
			name, ok := strings.CutPrefix(k, http.TrailerPrefix)
			if !ok || !h1.ValidFieldName(name) || h1.TrailerForbidden(name) {
				t.Fatalf("trailer key %q kept", k)
			}
			for _, v := range vv {
				if hasCTL(v) {
					t.Fatalf("trailer %s value %q kept", name, v)
				}
			}
		}
		if upErr != nil {
			return
		}
		ref, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(data)))
		if err == nil && !bytes.Equal(ref, w.body.Bytes()) {
			t.Fatalf("decoded %q, net/http decodes %q", w.body.Bytes(), ref)
		}
	})
}

// FuzzParseUpstream checks the upstream URL parser: no panic, and what it
// accepts has an address to dial.
func FuzzParseUpstream(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:9000", "http://app/base/", "unix:///run/app.sock", "https://h", "http://[::1]:1", "::", "http://h:/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := parseUpstream(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "proxy: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
			return
		}
		if u.addr == "" || (u.network != "tcp" && u.network != "unix") || strings.HasSuffix(u.prefix, "/") {
			t.Fatalf("parseUpstream(%q) = %+v", s, u)
		}
		if u.network == "tcp" {
			if _, port, err := net.SplitHostPort(u.addr); err != nil || port == "" {
				t.Fatalf("parseUpstream(%q): address %q has no port", s, u.addr)
			}
		}
	})
}

// chunkedConn is a net.Conn whose reads return the bytes of data in pieces of
// the sizes given (cycled), then EOF.
type chunkedConn struct {
	net.Conn
	data  []byte
	sizes []byte
	i     int
}

func (c *chunkedConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)]) + 1
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// readGuarded reads data through a guardConn, in the read sizes of a server
// (bufio's 4 KiB, with a 1-byte read now and then, as net/http's background
// read does), the connection's reads cut as sizes says; a head is held to 512
// bytes, so that one too large is within the fuzzer's reach.
func readGuarded(data, sizes []byte) []byte {
	g := &guardConn{Conn: &chunkedConn{data: data, sizes: sizes}, limit: 1 << 9, scan: reqScan{}}
	var out []byte
	buf := make([]byte, 4096)
	for i := 0; ; i++ {
		p := buf
		if i%3 == 1 {
			p = buf[:1]
		}
		n, err := g.Read(p)
		out = append(out, p[:n]...)
		if err != nil {
			return out
		}
	}
}

// FuzzGuard checks GuardListener's scan of a request stream: however the
// stream is cut into reads, the server reads the same bytes; those are a
// prefix of the stream (all of it but a head it ends in the middle of, or up
// to where its framing broke), followed by nothing, by refusedHead (a head
// refused) or by filler (a head too large).
func FuzzGuard(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbodyGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4;x\r\nbody\r\n0\r\nT: 1\r\n\r\nGET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00",
		"\x16\x03\x01\x00",
		"GET / HTTP/1.1\nContent-Length: 2\nX: y\n\nab",
		"POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\nx\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\nx\r\n0\r\n\r\n",
		"GET / HTTP/1.1\r\nX: " + strings.Repeat("x", 600) + "\r\n\r\n",
	} {
		f.Add([]byte(s), []byte{0, 7, 200})
	}
	f.Fuzz(func(t *testing.T, data, sizes []byte) {
		whole := readGuarded(data, []byte{255})
		if cut := readGuarded(data, sizes); !bytes.Equal(cut, whole) {
			t.Fatalf("read in pieces %v:\n%q\nread whole:\n%q", sizes, cut, whole)
		}
		if prefix, ok := bytes.CutSuffix(whole, []byte(refusedHead)); ok && bytes.HasPrefix(data, prefix) {
			return // a head refused
		}
		if !bytes.HasPrefix(data, whole) && !bytes.HasPrefix(data, bytes.TrimRight(whole, "x")) {
			t.Fatalf("the server read\n%q\nof\n%q", whole, data)
		}
	})
}
