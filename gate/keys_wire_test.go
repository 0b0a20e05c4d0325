package gate

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/h2raw"
)

// keyConfig keys a group by X-Api-Key, one request per key an hour.
const keyConfig = `
[[group]]
name = "api"
key = "header:x-api-key"
  [group.rate]
  algorithm = "fixed_window"
  limit = 1
  window = "1h"
`

// TestHeaderKeyTrimmed: a key header's value is the key without the
// whitespace around it, so "K ", "K\t", " K" and "K" with spaces are the key
// K; one with nothing else is the key of a request without the header; two
// fields of it are flagged (issue 23, item 4: each got a fresh quota, and
// the first of two was the key).
func TestHeaderKeyTrimmed(t *testing.T) {
	g, _ := newGate(t, keyConfig)
	for _, c := range []struct {
		values []string
		key    string
		twice  bool
	}{
		{[]string{"K"}, "K", false},
		{[]string{"K "}, "K", false},
		{[]string{"K\t"}, "K", false},
		{[]string{" K"}, "K", false},
		{[]string{"\t K \t"}, "K", false},
		{[]string{"K" + strings.Repeat(" ", 12)}, "K", false},
		{[]string{"K L"}, "K L", false},
		{[]string{"   "}, "", false},
		{nil, "", false},
		{[]string{"K", "L"}, "K", true},
	} {
		r := request("/")
		if c.values != nil {
			r.Header["X-Api-Key"] = c.values
		}
		cl := g.Classify(r)
		if cl.Key != c.key || (cl.Err() != nil) != c.twice {
			t.Errorf("X-Api-Key %q: key %q, err %v; want %q, flagged %v", c.values, cl.Key, cl.Err(), c.key, c.twice)
		}
	}
}

// TestHeaderKeyOnTheWire sends the key's spellings as raw HTTP/1.1 bytes
// (obs-fold included) and raw HTTP/2 frames to Middleware on net/http's
// server: after K is admitted once, every spelling of K is refused (429),
// a key of spaces alone counts as no key, and two X-Api-Key fields are
// answered 400.
func TestHeaderKeyOnTheWire(t *testing.T) {
	g, _ := newGate(t, keyConfig)
	addr := serveWire(t, g)
	h1 := func(fields string) int {
		t.Helper()
		return h1Status(t, addr, "GET / HTTP/1.1\r\nHost: sluice\r\n"+fields+"Connection: close\r\n\r\n")
	}
	h2, err := h2raw.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	h2req := func(kv ...string) string {
		t.Helper()
		st, err := h2.Request(h2raw.HTTP("GET", "/", kv...))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	if st := h1("X-Api-Key: K\r\n"); st != 200 {
		t.Fatalf("the first K: %d", st)
	}
	for _, f := range []string{"X-Api-Key: K \r\n", "X-Api-Key:\tK\t\r\n", "X-Api-Key:    K\r\n",
		"X-Api-Key: K\r\n \r\n", "X-Api-Key: K\r\n\t\r\n", "X-Api-Key:\r\n K\r\n"} {
		if st := h1(f); st != 429 {
			t.Errorf("HTTP/1.1 %q: %d, want 429 (the key K)", f, st)
		}
	}
	for _, v := range []string{"K", "K ", "K\t", " K", "\tK", "K   ", "K" + strings.Repeat(" ", 12)} {
		if st := h2req("x-api-key", v); st != "429" {
			t.Errorf("HTTP/2 x-api-key %q: %s, want 429 (the key K)", v, st)
		}
	}
	if st := h1(""); st != 200 {
		t.Fatalf("no key, first: %d", st)
	}
	if st := h2req("x-api-key", "   "); st != "429" {
		t.Errorf("HTTP/2 x-api-key of spaces: %s, want 429 (no key, which has had its request)", st)
	}
	if st := h1("X-Api-Key: \t \r\n"); st != 429 {
		t.Errorf("HTTP/1.1 X-Api-Key of whitespace: %d, want 429 (no key)", st)
	}
	if st := h1("X-Api-Key: L\r\nX-Api-Key: M\r\n"); st != 400 {
		t.Errorf("HTTP/1.1 two X-Api-Key fields: %d, want 400", st)
	}
	if st := h2req("x-api-key", "N", "x-api-key", "O"); st != "400" {
		t.Errorf("HTTP/2 two x-api-key fields: %s, want 400", st)
	}
}

// serveWire serves Middleware(g) on net/http's server over loopback, in
// HTTP/1.1 and h2c with prior knowledge, until the test ends, and returns
// its address.
func serveWire(t *testing.T, g *Gate) string {
	t.Helper()
	srv := &http.Server{Handler: Middleware(g, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})),
		Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// h1Status sends the raw bytes of one HTTP/1.1 request to addr on a
// connection of its own and returns the answer's status.
func h1Status(t *testing.T, addr, raw string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
