package proxy

import (
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// smuggler is a request a hop in front that prefers Content-Length reads as
// one request with a body, and net/http's server, which prefers
// Transfer-Encoding, as an empty chunked body followed by GET /smuggled.
var smuggler = func() string {
	body := "0\r\n\r\n" + "GET /smuggled HTTP/1.1\r\nHost: app\r\n\r\n"
	return "POST /follower HTTP/1.1\r\nHost: app\r\nContent-Length: " + strconv.Itoa(len(body)) +
		"\r\nTransfer-Encoding: chunked\r\n\r\n" + body
}()

// TestGuardCannotBeBlinded sends, on one connection, a request the guard and
// net/http's server once read differently, followed by smuggler, to the proxy
// and to a bare net/http server behind GuardListener (its handler reads bodies
// in full duplex, as the proxy's does): whatever the first request gets,
// neither smuggler nor the request hidden in its body ever reaches the
// upstream (the handler), and the connection closes. (The guard used to stop
// scanning at a request it could not read while net/http went on parsing:
// the follower was then served, and the hidden request as one of its own.)
func TestGuardCannotBeBlinded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  string
		status []int    // the statuses answered, in order (nil: not checked)
		served []string // the paths the upstream may see (with status: must see)
	}{
		// net/http serves HTTP/1.2 to 1.9 as HTTP/1.1.
		{"HTTP/1.2", "POST /first HTTP/1.2\r\nHost: app\r\nContent-Length: 1\r\n\r\nX", []int{400}, nil},
		// net/http parses 19 digits as a length (strconv.ParseUint, 63 bits).
		{"19-digit Content-Length", "POST /first HTTP/1.1\r\nHost: app\r\nContent-Length: 0000000000000000000\r\n\r\n", []int{400}, nil},
		// net/http joins an empty folded line to the field before it.
		{"folded Content-Length", "POST /first HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\n \r\n\r\nhello", []int{400}, nil},
		{"folded line", "POST /first HTTP/1.1\r\nHost: app\r\nX-A: 1\r\n\t2\r\nContent-Length: 5\r\n\r\nhello", []int{400}, nil},
		// net/http trims a CR before the line's CRLF off a value.
		{"CR in Content-Length", "POST /first HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\r\n\r\nhello", []int{400}, nil},
		// After a POST net/http skips up to 4 CR or LF bytes before the
		// next request line; the guard skips them too, and reads smuggler.
		{"CRLF after a POST's body", "POST /first HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\n\r\nhello\r\n", []int{200, 400}, []string{"/first"}},
		{"4 CR or LF after a POST", "POST /first HTTP/1.1\r\nHost: app\r\nContent-Length: 0\r\n\r\n\n\r\r\n", []int{200, 400}, []string{"/first"}},
		// A fifth is an empty request line: net/http answers 400.
		{"5 CR or LF after a POST", "POST /first HTTP/1.1\r\nHost: app\r\nContent-Length: 0\r\n\r\n\r\n\r\n\r\n", []int{200, 400}, []string{"/first"}},
		{"CRLF after a GET", "GET /first HTTP/1.1\r\nHost: app\r\n\r\n\r\n", []int{200, 400}, []string{"/first"}},
		// A head beyond the limit: the guard gives the server the head and
		// then filler, never what follows.
		{"head too large", "GET /first HTTP/1.1\r\nHost: app\r\nX-Big: " + strings.Repeat("b", defaultMaxHeaderBytes+4096) + "\r\n\r\n", []int{431}, nil},
		// A body net/http's chunked reader refuses: with the response
		// written in full duplex, as the proxy writes it, net/http's
		// server goes on reading requests where its reader stopped.
		{"chunk line ending in a bare LF", "POST /first HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n1\n", nil, []string{"/first"}},
		{"chunk data without its CRLF", "POST /first HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nX", nil, []string{"/first"}},
		{"space before a chunk extension", "POST /first HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n1 ;x\r\n", nil, []string{"/first"}},
		{"trailer line without a colon", "POST /first HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad line\r\n", nil, []string{"/first"}},
		{"trailer line ending in a bare LF", "POST /first HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\n", nil, []string{"/first"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, run := range []struct {
				bytewise bool
				server   string
			}{{false, "proxy"}, {true, "proxy"}, {false, "net/http"}, {true, "net/http"}} {
				var mu sync.Mutex
				var paths []string
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					paths = append(paths, r.URL.Path)
					mu.Unlock()
					_ = http.NewResponseController(w).EnableFullDuplex()
					_, _ = io.Copy(io.Discard, r.Body)
				})
				var base string
				if run.server == "proxy" {
					_, base = startProxy(t, Params{Upstream: startUpstream(t, h, false).URL}, ServerParams{})
				} else {
					base = serveGuarded(t, h)
				}
				bytewise := run.bytewise
				c := dialRaw(t, base)
				send := tc.first + smuggler
				go func() {
					if !bytewise {
						_, _ = io.WriteString(c.c, send)
						return
					}
					for i := 0; i < len(send); i++ {
						if _, err := c.c.Write([]byte{send[i]}); err != nil {
							return
						}
					}
				}()
				for i, want := range tc.status {
					resp, _, _ := c.readResponse(t, "POST")
					if resp.StatusCode != want {
						t.Fatalf("%s, bytewise %v: response %d: status %d, want %d", run.server, bytewise, i+1, resp.StatusCode, want)
					}
				}
				c.waitClosed(t)
				mu.Lock()
				got := slices.Clone(paths)
				mu.Unlock()
				for _, p := range got {
					if !slices.Contains(tc.served, p) {
						t.Errorf("%s, bytewise %v: the upstream served %q (all: %q)", run.server, bytewise, p, got)
					}
				}
				if tc.status != nil && !slices.Equal(got, tc.served) {
					t.Errorf("%s, bytewise %v: the upstream served %q, want %q", run.server, bytewise, got, tc.served)
				}
			}
		})
	}
}

// serveGuarded serves h on a loopback port behind GuardListener and returns
// its URL.
func serveGuarded(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, MaxHeaderBytes: defaultMaxHeaderBytes, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(GuardListener(ln, 0)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}
