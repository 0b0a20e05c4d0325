package proxy

import (
	"bufio"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/proxy/breaker"
)

func TestGRPCKindOf(t *testing.T) {
	for ct, want := range map[string]grpcKind{
		"":                              grpcNone,
		"application/json":              grpcNone,
		"application/grpc":              grpcNative,
		"Application/GRPC":              grpcNative,
		"application/grpc+proto":        grpcNative,
		"application/grpc;charset=utf8": grpcNative,
		"application/grpcx":             grpcNone,
		"application/grpc-web":          grpcWeb,
		"application/grpc-web+proto":    grpcWeb,
		"application/grpc-web-text":     grpcWeb,
		"application/grpc-webx":         grpcNone,
		"application/grp":               grpcNone,
	} {
		if got := grpcKindOf(ct); got != want {
			t.Errorf("grpcKindOf(%q) = %d, want %d", ct, got, want)
		}
	}
}

func TestParseGRPCStatus(t *testing.T) {
	for s, want := range map[string]int{"0": 0, "14": 14, " 8 ": 8, "016": 16, "999999999": 999999999} {
		if got, ok := parseGRPCStatus(s); !ok || got != want {
			t.Errorf("parseGRPCStatus(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", " ", "-1", "+1", "1.0", "0x1", "1234567890", "１"} {
		if _, ok := parseGRPCStatus(s); ok {
			t.Errorf("parseGRPCStatus(%q) accepted", s)
		}
	}
}

func TestGRPCOutcome(t *testing.T) {
	want := map[int]gate.Outcome{
		0: gate.Success, 1: gate.Ignored, 2: gate.Dropped, 3: gate.Ignored, 4: gate.Dropped,
		5: gate.Ignored, 6: gate.Ignored, 7: gate.Ignored, 8: gate.Dropped, 9: gate.Ignored,
		10: gate.Ignored, 11: gate.Ignored, 12: gate.Ignored, 13: gate.Dropped, 14: gate.Dropped,
		15: gate.Dropped, 16: gate.Ignored, 17: gate.Dropped, -1: gate.Dropped,
	}
	for code, o := range want {
		if got := grpcOutcome(code); got != o {
			t.Errorf("grpcOutcome(%d) = %v, want %v", code, got, o)
		}
	}
}

func TestStatusOutcome(t *testing.T) {
	for code, want := range map[int]gate.Outcome{101: gate.Success, 200: gate.Success, 204: gate.Success, 302: gate.Success, 304: gate.Success,
		400: gate.Ignored, 404: gate.Ignored, 429: gate.Ignored, 499: gate.Ignored, 500: gate.Dropped, 502: gate.Dropped, 503: gate.Dropped, 504: gate.Dropped} {
		if got := statusOutcome(code); got != want {
			t.Errorf("statusOutcome(%d) = %v, want %v", code, got, want)
		}
	}
}

func TestGRPCResponseOutcome(t *testing.T) {
	for _, tc := range []struct {
		h    http.Header
		g    grpcKind
		want gate.Outcome
	}{
		{http.Header{"Trailer:Grpc-Status": {"0"}}, grpcNative, gate.Success},
		{http.Header{"Trailer:Grpc-Status": {"14"}}, grpcNative, gate.Dropped},
		{http.Header{"Grpc-Status": {"5"}}, grpcNative, gate.Ignored},
		{http.Header{}, grpcNative, gate.Dropped},
		{http.Header{}, grpcWeb, gate.Success},
		{http.Header{"Grpc-Status": {"x"}}, grpcWeb, gate.Dropped},
	} {
		if got := grpcResponseOutcome(tc.h, tc.g); got != tc.want {
			t.Errorf("grpcResponseOutcome(%v, %d) = %v, want %v", tc.h, tc.g, got, tc.want)
		}
	}
}

func TestTokens(t *testing.T) {
	if !hasToken([]string{"keep-alive, Upgrade"}, "upgrade") || !hasToken([]string{"close", " x-a ,, x-b "}, "X-B") {
		t.Error("hasToken missed a token")
	}
	if hasToken([]string{"upgrade-insecure"}, "upgrade") || hasToken(nil, "close") || hasToken([]string{" , "}, "") {
		t.Error("hasToken found a token that is not there")
	}
	var got []string
	for s := " a, ,b ,\tc\t,"; ; {
		tok, rest, ok := nextToken(s)
		if !ok {
			break
		}
		got = append(got, tok)
		s = rest
	}
	if !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("tokens %q", got)
	}
}

func TestIsIdempotent(t *testing.T) {
	for m, want := range map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true, "TRACE": true, "PUT": true, "DELETE": true, "POST": false, "PATCH": false} {
		if isIdempotent(m, false) != want {
			t.Errorf("isIdempotent(%s) = %v", m, !want)
		}
	}
	if !isIdempotent("POST", true) {
		t.Error("an Idempotency-Key makes POST idempotent")
	}
}

func parseHead(t *testing.T, raw string) (respHead, http.Header, error) {
	t.Helper()
	var sc headScratch
	dst := http.Header{}
	budget := 1 << 16
	h, err := sc.readResponseHead(bufio.NewReaderSize(strings.NewReader(raw), 16), dst, &budget)
	return h, dst, err
}

func TestReadResponseHead(t *testing.T) {
	raw := "HTTP/1.1 200 OK\r\n" +
		"content-type: text/plain\r\n" +
		"X-Custom :  a value \t\r\n" +
		"Set-Cookie: a=1\r\n" +
		"set-cookie: b=2\n" + // a bare LF ends a line too
		"Connection: keep-alive, X-Hop\r\n" +
		"X-Hop: secret\r\n" +
		"Keep-Alive: timeout=5\r\n" +
		"Content-Length: 5\r\n" +
		"Content-Length: 5\r\n" +
		"Upgrade: h2c\r\n" +
		"Trailer: X-T\r\n" +
		"X-Very-Long-Header-Name-That-Is-Longer-Than-The-Reader-Buffer-Of-Sixteen: v\r\n" +
		"\r\n"
	h, dst, err := parseHead(t, raw)
	if err != nil {
		t.Fatal(err)
	}
	if h.status != 200 || h.minor != 1 || h.length != 5 || h.chunked || h.closeConn || h.upgrade || h.upgradeTo != "h2c" {
		t.Errorf("head %+v", h)
	}
	want := http.Header{
		"Content-Type":   {"text/plain"},
		"X-Custom":       {"a value"},
		"Set-Cookie":     {"a=1", "b=2"},
		"Content-Length": {"5"},
		"Trailer":        {"X-T"},
		"X-Very-Long-Header-Name-That-Is-Longer-Than-The-Reader-Buffer-Of-Sixteen": {"v"},
	}
	if !reflect.DeepEqual(dst, want) {
		t.Errorf("fields\n got %q\nwant %q", dst, want)
	}
}

func TestReadResponseHeadFraming(t *testing.T) {
	for _, tc := range []struct {
		raw                  string
		length               int64
		chunked, close, upgr bool
		hasLength            bool
	}{
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", -1, true, false, false, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: Chunked\r\n\r\n", -1, true, true, false, false},
		{"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n", 3, false, true, false, true},
		{"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\n", 3, false, false, false, true},
		{"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", -1, false, true, false, false},
		{"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", -1, false, false, true, false},
		{"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", 0, false, false, false, false},
		{"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", 10, false, false, false, true},
		{"HTTP/1.1 200\r\n\r\n", -1, false, false, false, false},
	} {
		h, dst, err := parseHead(t, tc.raw)
		if err != nil {
			t.Errorf("%q: %v", tc.raw, err)
			continue
		}
		if h.length != tc.length || h.chunked != tc.chunked || h.closeConn != tc.close || h.upgrade != tc.upgr {
			t.Errorf("%q: head %+v", tc.raw, h)
		}
		if _, ok := dst["Content-Length"]; ok != tc.hasLength {
			t.Errorf("%q: Content-Length forwarded %v, want %v", tc.raw, ok, tc.hasLength)
		}
		if dst["Transfer-Encoding"] != nil || dst["Connection"] != nil || dst["Upgrade"] != nil {
			t.Errorf("%q: hop-by-hop fields forwarded: %q", tc.raw, dst)
		}
	}
}

func TestReadResponseHeadErrors(t *testing.T) {
	for _, raw := range []string{
		"",
		"HTTP/1.1 200 OK\r\n",
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 099 Low\r\n\r\n",
		"HTTP/1.1 600 High\r\n\r\n",
		"HTTP/1.1 20x OK\r\n\r\n",
		"HTTP/1.1 200OK\r\n\r\n",
		"HTTP/1.1 200 O\x00K\r\n\r\n",
		"ICY 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNo-Colon\r\n\r\n",
		"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1,2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 9999999999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n",
	} {
		if h, _, err := parseHead(t, raw); err == nil {
			t.Errorf("%q: accepted as %+v", raw, h)
		}
	}
}

func TestReadResponseHeadTooLarge(t *testing.T) {
	var sc headScratch
	raw := "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 5000) + "\r\n\r\n"
	budget := 4096
	_, err := sc.readResponseHead(bufio.NewReaderSize(strings.NewReader(raw), 16), http.Header{}, &budget)
	if err != errHeadTooLarge {
		t.Fatalf("err %v, want %v", err, errHeadTooLarge)
	}
	raw = "HTTP/1.1 200 OK\r\n" + strings.Repeat("X: a\r\n", 1000) + "\r\n"
	budget = 4096
	_, err = sc.readResponseHead(bufio.NewReaderSize(strings.NewReader(raw), 4096), http.Header{}, &budget)
	if err != errHeadTooLarge {
		t.Fatalf("many fields: err %v, want %v", err, errHeadTooLarge)
	}
}

func TestReadTrailers(t *testing.T) {
	var sc headScratch
	dst := http.Header{}
	raw := "X-Sum: abc\r\nContent-Length: 5\r\nGrpc-Status: 0\r\n\r\n"
	var h respHead
	budget := 1 << 16
	if err := sc.readFields(bufio.NewReader(strings.NewReader(raw)), dst, &h, modeTrailer, &budget); err != nil {
		t.Fatal(err)
	}
	want := http.Header{"Trailer:X-Sum": {"abc"}, "Trailer:Grpc-Status": {"0"}}
	if !reflect.DeepEqual(dst, want) {
		t.Errorf("trailers %q, want %q", dst, want)
	}
}

func TestCanonicalKey(t *testing.T) {
	for in, want := range map[string]string{
		"content-type": "Content-Type", "CONTENT-LENGTH": "Content-Length", "x-a-b": "X-A-B",
		"www-authenticate": "Www-Authenticate", "a": "A", "x_y": "X_y", strings.Repeat("a", 70): "A" + strings.Repeat("a", 69),
	} {
		if got, ok := canonicalKey([]byte(in)); !ok || got != want {
			t.Errorf("canonicalKey(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "a b", "a:b", "ä", "a\x00"} {
		if _, ok := canonicalKey([]byte(in)); ok {
			t.Errorf("canonicalKey(%q) accepted", in)
		}
	}
	n := testing.AllocsPerRun(100, func() { canonicalKey([]byte("content-type")) })
	if n != 0 {
		t.Errorf("canonicalKey of a common field allocates %v times", n)
	}
}

func TestParseChunkSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "a": 10, "FF": 255, "10;ext=1": 16, "1f ; name": 31, "0000000000000001": 1, "7ffffffffffffff": 1<<59 - 1} {
		if got, err := parseChunkSize([]byte(in)); err != nil || got != want {
			t.Errorf("parseChunkSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	// net/http refuses more than 16 digits, leading zeros too.
	for _, in := range []string{"", ";x", "g", "1 2", "-1", "0x10", "1;\x00", "fffffffffffffffff", "00000000000000001", "ffffffffffffffff"} {
		if _, err := parseChunkSize([]byte(in)); err == nil {
			t.Errorf("parseChunkSize(%q) accepted", in)
		}
	}
	for n, want := range map[int]string{0: "0\r\n", 9: "9\r\n", 255: "ff\r\n", 32768: "8000\r\n"} {
		if got := string(appendChunkHeader(nil, n)); got != want {
			t.Errorf("appendChunkHeader(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseContentLength(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "42": 42, "007": 7, "999999999999999999": 999999999999999999} {
		if got, ok := parseContentLength([]byte(in)); !ok || got != want {
			t.Errorf("parseContentLength(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	// A list, even of one value repeated, is refused as net/http and nginx
	// refuse it; the caller trims the value.
	for _, in := range []string{"", ",", "-1", "+1", "1 1", "1,2", "7, 7", "7,7", " 8 ", "0x1", "1e3", "9999999999999999999"} {
		if _, ok := parseContentLength([]byte(in)); ok {
			t.Errorf("parseContentLength(%q) accepted", in)
		}
	}
}

func TestParseUpstream(t *testing.T) {
	for in, want := range map[string]upstream{
		"http://127.0.0.1:9000": {network: "tcp", addr: "127.0.0.1:9000", host: "127.0.0.1:9000"},
		"http://app":            {network: "tcp", addr: "app:80", host: "app"},
		"http://[::1]:81/base/": {network: "tcp", addr: "[::1]:81", host: "[::1]:81", prefix: "/base"},
		"http://h/a%20b":        {network: "tcp", addr: "h:80", host: "h", prefix: "/a%20b"},
		"unix:///run/app.sock":  {network: "unix", addr: "/run/app.sock", host: "localhost"},
	} {
		got, err := parseUpstream(in)
		if err != nil || got != want {
			t.Errorf("parseUpstream(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "https://h", "ftp://h", "http://", "http://u:p@h", "http://h/?q=1", "http://h/#f", "unix://host/x", "unix:", "::"} {
		if _, err := parseUpstream(in); err == nil || !strings.HasPrefix(err.Error(), "proxy: ") {
			t.Errorf("parseUpstream(%q): err %v", in, err)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	if err := (Params{Upstream: "http://127.0.0.1:1"}).Validate(); err != nil {
		t.Fatal(err)
	}
	err := Params{Protocol: 9, Gate: testGate(t, ""), TrustedProxies: &gate.TrustedProxies{}, Host: "a\nb", DialTimeout: -1, UpstreamTimeout: -1, ClientTimeout: -1,
		IdleConnTimeout: -1, MaxIdleConns: -1, MaxResponseHeaderBytes: -1, Breaker: breaker.Params{Probes: -1}}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"upstream is required", "protocol", "trusted proxies", "host", "dial timeout", "upstream timeout",
		"client timeout", "idle connection timeout", "max idle", "header bytes", "probes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if _, err := New(Params{}); err == nil {
		t.Error("New accepted params without an upstream")
	}
	if err := (Params{Upstream: "http://h", DisableBreaker: true, Breaker: breaker.Params{Probes: -1}}).Validate(); err != nil {
		t.Errorf("a disabled breaker's params were validated: %v", err)
	}
}

func TestServerParamsValidate(t *testing.T) {
	err := ServerParams{ReadHeaderTimeout: -1, IdleTimeout: -1, MaxHeaderBytes: -1, MaxConcurrentStreams: -1}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"handler", "read header", "idle", "header bytes", "streams"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	s, err := NewServer(ServerParams{Handler: http.NotFoundHandler()})
	if err != nil {
		t.Fatal(err)
	}
	if s.ReadHeaderTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes != defaultMaxHeaderBytes || s.ReadTimeout != 0 || s.WriteTimeout != 0 ||
		!s.Protocols.HTTP1() || !s.Protocols.HTTP2() || !s.Protocols.UnencryptedHTTP2() {
		t.Errorf("server settings: %+v", s)
	}
}
