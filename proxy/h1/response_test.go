package h1

import (
	"bufio"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	if !HasToken([]string{"keep-alive, Upgrade"}, "upgrade") || !HasToken([]string{"close", " x-a ,, x-b "}, "X-B") {
		t.Error("hasToken missed a token")
	}
	if HasToken([]string{"upgrade-insecure"}, "upgrade") || HasToken(nil, "close") || HasToken([]string{" , "}, "") {
		t.Error("hasToken found a token that is not there")
	}
	var got []string
	for s := " a, ,b ,\tc\t,"; ; {
		tok, rest, ok := NextToken(s)
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

func parseHead(t *testing.T, raw string) (ResponseHead, http.Header, error) {
	t.Helper()
	var sc Scratch
	dst := http.Header{}
	budget := 1 << 16
	h, err := sc.ReadResponseHead(bufio.NewReaderSize(strings.NewReader(raw), 16), dst, &budget)
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
	if h.Status != 200 || h.minor != 1 || h.Length != 5 || h.Chunked || h.Close || h.Upgrade || h.UpgradeTo != "h2c" {
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
		if h.Length != tc.length || h.Chunked != tc.chunked || h.Close != tc.close || h.Upgrade != tc.upgr {
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
	var sc Scratch
	raw := "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 5000) + "\r\n\r\n"
	budget := 4096
	_, err := sc.ReadResponseHead(bufio.NewReaderSize(strings.NewReader(raw), 16), http.Header{}, &budget)
	if err != errHeadTooLarge {
		t.Fatalf("err %v, want %v", err, errHeadTooLarge)
	}
	raw = "HTTP/1.1 200 OK\r\n" + strings.Repeat("X: a\r\n", 1000) + "\r\n"
	budget = 4096
	_, err = sc.ReadResponseHead(bufio.NewReaderSize(strings.NewReader(raw), 4096), http.Header{}, &budget)
	if err != errHeadTooLarge {
		t.Fatalf("many fields: err %v, want %v", err, errHeadTooLarge)
	}
}

func TestReadTrailers(t *testing.T) {
	var sc Scratch
	dst := http.Header{}
	raw := "X-Sum: abc\r\nContent-Length: 5\r\nGrpc-Status: 0\r\n\r\n"
	var h ResponseHead
	budget := 1 << 16
	if err := sc.ReadFields(bufio.NewReader(strings.NewReader(raw)), dst, &h, ModeTrailer, &budget); err != nil {
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
		if got, err := ParseChunkSize([]byte(in)); err != nil || got != want {
			t.Errorf("parseChunkSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	// net/http refuses more than 16 digits, leading zeros too.
	for _, in := range []string{"", ";x", "g", "1 2", "-1", "0x10", "1;\x00", "fffffffffffffffff", "00000000000000001", "ffffffffffffffff"} {
		if _, err := ParseChunkSize([]byte(in)); err == nil {
			t.Errorf("parseChunkSize(%q) accepted", in)
		}
	}
	for n, want := range map[int]string{0: "0\r\n", 9: "9\r\n", 255: "ff\r\n", 32768: "8000\r\n"} {
		if got := string(AppendChunkHeader(nil, n)); got != want {
			t.Errorf("appendChunkHeader(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseContentLength(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "42": 42, "007": 7, "999999999999999999": 999999999999999999} {
		if got, ok := ParseContentLength([]byte(in)); !ok || got != want {
			t.Errorf("parseContentLength(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	// A list, even of one value repeated, is refused as net/http and nginx
	// refuse it; the caller trims the value.
	for _, in := range []string{"", ",", "-1", "+1", "1 1", "1,2", "7, 7", "7,7", " 8 ", "0x1", "1e3", "9999999999999999999"} {
		if _, ok := ParseContentLength([]byte(in)); ok {
			t.Errorf("parseContentLength(%q) accepted", in)
		}
	}
}
