package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/proxy/h1/h1test"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// FuzzGuardOracle holds GuardListener to net/http's request parser as the
// oracle: the bytes the guard lets through are read as net/http's server
// reads them (http.ReadRequest, the body read whole, the checks its server
// makes before it serves a request, up to 4 CR or LF skipped after a POST),
// and every request that would be served must begin where the guard's own
// scan of the same bytes is between requests, and must not be one the guard
// refuses (Content-Length with Transfer-Encoding, Transfer-Encoding in
// HTTP/1.0). A request the two read differently is refused, never served.
func FuzzGuardOracle(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;x\r\nhello\r\n0\r\nT: 1\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.2\r\nHost: a\r\nContent-Length: 1\r\n\r\nXGET /s HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0000000000000000000\r\n\r\nGET /s HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n \r\n\r\nhelloGET /s HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\nGET /s HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkGuardOracle)
}

// checkGuardOracle is FuzzGuardOracle's check of data.
func checkGuardOracle(t *testing.T, data []byte) {
	g := readGuarded(data, []byte{255})
	cr := &countingReader{r: bytes.NewReader(g)}
	br := bufio.NewReader(cr)
	at := func() int { return cr.n - br.Buffered() }
	lastPost := false
	for served := 0; ; served++ {
		if lastPost {
			peek, _ := br.Peek(4)
			_, _ = br.Discard(numLeadingCROrLF(peek))
		}
		pos := at()
		if pos == len(g) {
			return
		}
		var s reqScan
		if ready := s.feed(g[:pos], 0); s.state != scanHead || ready != pos {
			t.Fatalf("net/http reads a request at %d of %q, where the guard is not between requests (state %d, %d bytes ready)", pos, g, s.state, ready)
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return // answered 400 (or 505, 431) and closed
		}
		head := g[pos:at()]
		if h1test.NetHTTPReads(head) == nil {
			return // the same, by its server's checks
		}
		if cl, te := framingFields(head); te && (cl || req.ProtoMinor == 0) {
			t.Fatalf("net/http serves %q, a request the guard refuses (of %q)", head, data)
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return // a body net/http refuses: the guard ended the stream, or it closes
		}
		if req.Close {
			return
		}
		lastPost = req.Method == "POST"
	}
}

// numLeadingCROrLF counts the CR and LF bytes that begin v (net/http's
// server skips them, after a POST, before the next request line).
func numLeadingCROrLF(v []byte) (n int) {
	for _, b := range v {
		if b != '\r' && b != '\n' {
			break
		}
		n++
	}
	return n
}

// framingFields reports whether a raw request head holds a Content-Length
// field and a Transfer-Encoding field, by name.
func framingFields(head []byte) (cl, te bool) {
	lines := strings.Split(string(head), "\n")
	for _, l := range lines[1:] {
		name, _, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "content-length":
			cl = true
		case "transfer-encoding":
			te = true
		}
	}
	return cl, te
}
