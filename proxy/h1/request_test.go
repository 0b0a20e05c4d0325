package h1

import (
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/proxy/h1/h1test"
)

// checkAgainstNetHTTP parses b (a whole head) with the proxy's parser and, when
// it takes it, holds what it read to net/http's reading: net/http must take the
// head too, and both must read the same request. It returns what went wrong.
func checkAgainstNetHTTP(b []byte) []string {
	var h RequestHead
	if h.Parse(b) != nil {
		return nil // refusing more than net/http is allowed
	}
	r := h1test.NetHTTPReads(b)
	if r == nil {
		return []string{"the parser takes a head net/http refuses"}
	}
	var bad []string
	differ := func(what string, ours, theirs any) {
		bad = append(bad, fmt.Sprintf("%s: the parser read %#v, net/http %#v", what, ours, theirs))
	}
	if m := string(h.Method.Of(b)); m != r.Method {
		differ("method", m, r.Method)
	}
	if u := string(h.Target.Of(b)); u != r.RequestURI {
		differ("request-target", u, r.RequestURI)
	}
	if int(h.Minor) != r.ProtoMinor {
		differ("version", h.Minor, r.ProtoMinor)
	}
	if host := string(h.Host.Of(b)); host != r.Host {
		differ("host", host, r.Host)
	}
	fields := http.Header{}
	for _, f := range h.Fields {
		k := textproto.CanonicalMIMEHeaderKey(string(f.Name.Of(b)))
		fields[k] = append(fields[k], string(f.Value.Of(b)))
	}
	theirs := r.Header.Clone()
	if hv, ok := fields["Host"]; ok && r.URL.Host == "" {
		theirs["Host"] = hv // net/http moves Host out of the map only in its server
	}
	if v, ok := fields["Host"]; ok {
		theirs["Host"] = v
	}
	if _, ok := fields["Cache-Control"]; !ok && len(theirs["Cache-Control"]) == 1 && theirs["Cache-Control"][0] == "no-cache" && len(fields["Pragma"]) > 0 {
		delete(theirs, "Cache-Control") // net/http adds it for "Pragma: no-cache"
	}
	// Framing fields are compared as framing, below: net/http takes them out
	// of the map, or folds repeated lengths into one.
	for _, k := range []string{"Transfer-Encoding", "Content-Length"} {
		delete(fields, k)
		delete(theirs, k)
	}
	for k, vv := range theirs {
		for i := range vv {
			vv[i] = textproto.TrimString(vv[i])
		}
		if !slices.Equal(vv, fields[k]) {
			differ("field "+k, fields[k], vv)
		}
	}
	for k := range fields {
		if _, ok := theirs[k]; !ok {
			differ("field "+k, fields[k], nil)
		}
	}
	chunked := len(r.TransferEncoding) == 1 && r.TransferEncoding[0] == "chunked"
	if h.Chunked != chunked {
		differ("chunked", h.Chunked, chunked)
	}
	wantLength := r.ContentLength
	if wantLength == 0 && !h.HasBody() {
		wantLength = max(h.Length, 0)
	}
	if got := h.Length; !h.Chunked && max(got, 0) != wantLength {
		differ("length", got, r.ContentLength)
	}
	if h.Close != r.Close {
		differ("close", h.Close, r.Close)
	}
	if h.ExpectContinue != (r.Header.Get("Expect") != "") {
		differ("expect", h.ExpectContinue, r.Header.Get("Expect"))
	}
	return bad
}

// parseHeads are heads for the parser's tests and the fuzzer's seeds.
var parseHeads = []struct {
	name   string
	head   string
	status int // 0: taken
}{
	{"get", "GET /a?b HTTP/1.1\r\nHost: app\r\nAccept: */*\r\n\r\n", 0},
	{"bare LF", "GET / HTTP/1.1\nHost: app\nX-A: 1\n\n", 0},
	{"HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n", 0},
	{"HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0},
	{"post", "POST /p HTTP/1.1\r\nHost: app\r\nContent-Length: 4\r\n\r\n", 0},
	{"post chunked", "POST /p HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: Chunked\r\n\r\n", 0},
	{"repeated lengths", "POST /p HTTP/1.1\r\nHost: app\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\n", 0},
	{"leading zeros", "POST /p HTTP/1.1\r\nHost: app\r\nContent-Length: 004\r\n\r\n", 0},
	{"absolute form", "GET http://app//a/./b?q HTTP/1.1\r\nHost: other\r\n\r\n", 0},
	{"options *", "OPTIONS * HTTP/1.1\r\nHost: app\r\n\r\n", 0},
	{"connect", "CONNECT app:443 HTTP/1.1\r\n\r\n", 0},
	{"expect", "PUT /u HTTP/1.1\r\nHost: app\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n", 0},
	{"close", "GET / HTTP/1.1\r\nHost: app\r\nConnection: keep-alive, Close\r\n\r\n", 0},
	{"upgrade", "GET /ws HTTP/1.1\r\nHost: app\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 0},
	{"empty value", "GET / HTTP/1.1\r\nHost: app\r\nX-E:\r\nX-F: \t \r\n\r\n", 0},
	{"obs-text", "GET / HTTP/1.1\r\nHost: app\r\nX-U: caf\xc3\xa9\r\n\r\n", 0},

	// The four disagreements of issue 22 between the guard and net/http.
	{"HTTP/1.2", "POST / HTTP/1.2\r\nHost: app\r\nContent-Length: 0\r\n\r\n", 400},
	{"19 digits of length", "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 0000000000000000000\r\n\r\n", 400},
	{"empty obs-fold after the length", "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\n \r\n\r\n", 400},
	// (the fourth, a CRLF after a POST, is the server's: TestServerFourDisagreements)

	{"length and chunks", "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
	{"HTTP/1.0 chunked", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
	{"two encodings", "POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
	{"gzip", "POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
	{"length list", "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 4, 4\r\n\r\n", 400},
	{"lengths differ", "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n", 400},
	{"empty length", "POST / HTTP/1.1\r\nHost: app\r\nContent-Length:\r\n\r\n", 400},
	{"signed length", "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: +4\r\n\r\n", 400},
	{"space before colon", "GET / HTTP/1.1\r\nHost: app\r\nX-A : 1\r\n\r\n", 400},
	{"no colon", "GET / HTTP/1.1\r\nHost: app\r\nX-A\r\n\r\n", 400},
	{"folded", "GET / HTTP/1.1\r\nHost: app\r\nX-A: 1\r\n 2\r\n\r\n", 400},
	{"folded first", "GET / HTTP/1.1\r\n Host: app\r\n\r\n", 400},
	{"no Host", "GET / HTTP/1.1\r\n\r\n", 400},
	{"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
	{"bad Host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
	{"absolute without Host", "GET http://app/ HTTP/1.1\r\n\r\n", 400},
	{"absolute with user", "GET http://u@app/ HTTP/1.1\r\nHost: app\r\n\r\n", 400},
	{"other scheme", "GET ftp://app/ HTTP/1.1\r\nHost: app\r\n\r\n", 400},
	{"get *", "GET * HTTP/1.1\r\nHost: app\r\n\r\n", 400},
	{"connect with an escape", "CONNECT %0 HTTP/1.0\n\n", 400}, // found by FuzzParseRequest
	{"absolute with an escape", "GET http://%0/ HTTP/1.1\r\nHost: app\r\n\r\n", 400},
	{"path with a cut escape", "0 /0% HTTP/1.0\n0000:\n\n", 400}, // found by FuzzParseRequest
	{"path with a bad escape", "GET /a%zzb HTTP/1.1\r\nHost: app\r\n\r\n", 400},
	{"path with an escape cut by the query", "GET /a%4?b HTTP/1.1\r\nHost: app\r\n\r\n", 400},
	{"absolute path with a bad escape", "GET http://app/a%g0 HTTP/1.1\r\nHost: app\r\n\r\n", 400},
	{"query with a bad escape", "GET /a?%zz&b=% HTTP/1.1\r\nHost: app\r\n\r\n", 0},
	{"path with escapes", "GET /a%20b%2Fc%c3%A9 HTTP/1.1\r\nHost: app\r\n\r\n", 0},
	{"connect to a port that is no number", "CONNECT :A HTTP/1.0\n\n", 400}, // found by FuzzParseRequest
	{"connect to IPv6", "CONNECT [::1]:443 HTTP/1.1\r\n\r\n", 0},
	{"control in value", "GET / HTTP/1.1\r\nHost: app\r\nX-A: a\x01b\r\n\r\n", 400},
	{"CR in value", "GET / HTTP/1.1\r\nHost: app\r\nX-A: a\rb\r\n\r\n", 400},
	{"control in target", "GET /a\x7f HTTP/1.1\r\nHost: app\r\n\r\n", 400},
	{"bad method", "G(T / HTTP/1.1\r\nHost: app\r\n\r\n", 400},
	{"one space", "GET /HTTP/1.1\r\nHost: app\r\n\r\n", 400},
	{"three parts", "GET / x HTTP/1.1\r\nHost: app\r\n\r\n", 400},
	{"HTTP/2.0", "GET / HTTP/2.0\r\nHost: app\r\n\r\n", 505},
	{"h2 preface", "PRI * HTTP/2.0\r\n\r\n", 505},
	{"lower-case version", "GET / http/1.1\r\nHost: app\r\n\r\n", 400},
	{"expect other", "GET / HTTP/1.1\r\nHost: app\r\nExpect: 200-ok\r\n\r\n", 417},
	{"expect on 1.0", "GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", 417},
	{"empty line first", "\r\nGET / HTTP/1.1\r\nHost: app\r\n\r\n", 400},
}

func TestParseRequestHead(t *testing.T) {
	for _, c := range parseHeads {
		t.Run(c.name, func(t *testing.T) {
			b := []byte(c.head)
			from := 0
			n := HeadEnd(b, &from)
			if n != len(b) {
				t.Fatalf("headEnd = %d, want %d", n, len(b))
			}
			var h RequestHead
			err := h.Parse(b)
			switch {
			case c.status == 0 && err != nil:
				t.Fatalf("refused (%d %s), want it taken", err.Status, err.Why)
			case c.status != 0 && err == nil:
				t.Fatalf("taken, want %d", c.status)
			case err != nil && err.Status != c.status:
				t.Fatalf("refused with %d (%s), want %d", err.Status, err.Why, c.status)
			}
			for _, p := range checkAgainstNetHTTP(b) {
				t.Error(p)
			}
		})
	}
}

// TestHeadEnd feeds heads byte by byte: the end is found once, where it is.
func TestHeadEnd(t *testing.T) {
	for _, c := range parseHeads {
		b := []byte(c.head)
		from, found := 0, -1
		for i := 1; i <= len(b); i++ {
			if n := HeadEnd(b[:i], &from); n >= 0 {
				found = n
				if i != len(b) {
					t.Errorf("%s: end found at %d of %d bytes", c.name, n, i)
				}
				break
			}
		}
		if found != len(b) {
			t.Errorf("%s: end %d, want %d", c.name, found, len(b))
		}
	}
}

// FuzzParseRequest holds the parser to net/http's: every head it takes, net/http
// takes and reads the same way (method, target, version, host, fields,
// framing, close); a head they read differently is refused.
func FuzzParseRequest(f *testing.F) {
	for _, c := range parseHeads {
		f.Add([]byte(c.head))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		from := 0
		n := HeadEnd(b, &from)
		if n < 0 {
			return
		}
		for _, p := range checkAgainstNetHTTP(b[:n]) {
			t.Errorf("%q: %s", b[:n], p)
		}
	})
}
