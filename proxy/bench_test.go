package proxy

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"
)

// cannedUpstream is an HTTP/1.1 upstream that answers every request with the same
// bytes and allocates nothing per request, so that a benchmark's allocations are
// the proxy's own. It understands requests without bodies only.
func cannedUpstream(tb testing.TB, response string) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	resp := []byte(response)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 64<<10)
				n := 0
				for {
					m, err := c.Read(buf[n:])
					if err != nil {
						return
					}
					n += m
					for {
						i := bytes.Index(buf[:n], []byte("\r\n\r\n"))
						if i < 0 {
							break
						}
						if _, err := c.Write(resp); err != nil {
							return
						}
						n = copy(buf, buf[i+4:n])
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// benchWriter is a minimal http.ResponseWriter with net/http's controls, reused
// across iterations.
type benchWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *benchWriter) Header() http.Header              { return w.h }
func (w *benchWriter) WriteHeader(code int)             { w.status = code }
func (w *benchWriter) Write(b []byte) (int, error)      { w.n += len(b); return len(b), nil }
func (w *benchWriter) FlushError() error                { return nil }
func (w *benchWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *benchWriter) SetWriteDeadline(time.Time) error { return nil }
func (w *benchWriter) EnableFullDuplex() error          { return nil }

const cannedOK = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 128\r\nDate: Sun, 29 Nov 2026 19:36:17 GMT\r\n\r\n" +
	"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwx"

func benchRequest() *http.Request {
	r := httptest.NewRequest("GET", "http://example.com/api/items?id=7", nil)
	r.RequestURI = "/api/items?id=7" // as a server reads it (origin form)
	r.RemoteAddr = "10.1.2.3:45678"
	r.Header.Set("User-Agent", "wrk")
	r.Header.Set("Accept", "*/*")
	return r
}

// BenchmarkServeHTTP measures the proxy's own per-request cost: ServeHTTP called
// directly (no server in front) against a canned loopback upstream, with a fresh
// cancelable context per request as net/http's server gives one. The two
// allocations of context.WithCancel are the server's, counted here.
func BenchmarkServeHTTP(b *testing.B) {
	for _, bc := range []struct {
		name    string
		gate    string // the gate's config; "" for none
		breaker bool
	}{
		{"bare", "", false},
		{"breaker", "", true},
		{"gate+breaker", roomyGroup, true},
		// The request's peer is a trusted proxy and the key is the client's
		// address: the client address and the forwarding fields take their
		// longer way (no X-Forwarded-For came, as from wrk).
		{"gate+breaker+trusted", `
[server]
trusted_proxies = ["10.0.0.0/8"]
[[group]]
name = "all"
key = "ip"
  [group.concurrency]
  law = "fixed"
  limit = 10000
`, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			params := Params{Upstream: cannedUpstream(b, cannedOK), DisableBreaker: !bc.breaker}
			if bc.gate != "" {
				params.Gate = testGate(b, bc.gate)
			}
			p, err := New(params)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			r0 := benchRequest()
			w := &benchWriter{h: make(http.Header)}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				r := r0.WithContext(ctx)
				clear(w.h)
				p.ServeHTTP(w, r)
				cancel()
				if w.status != 200 || w.n == 0 {
					b.Fatalf("status %d, %d bytes", w.status, w.n)
				}
				w.n = 0
			}
		})
	}
}

// BenchmarkServeHTTPSharedContext is BenchmarkServeHTTP with one context for all
// requests: what is left is the proxy's own allocations.
func BenchmarkServeHTTPSharedContext(b *testing.B) {
	p, err := New(Params{Upstream: cannedUpstream(b, cannedOK)})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := benchRequest().WithContext(ctx)
	w := &benchWriter{h: make(http.Header)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clear(w.h)
		p.ServeHTTP(w, r)
		if w.status != 200 {
			b.Fatalf("status %d", w.status)
		}
	}
}

// BenchmarkEndToEnd measures one proxied request through the whole proxy
// process: net/http's server, the proxy, and a canned upstream, driven by a raw
// keep-alive client that allocates nothing; allocs/op is everything the proxy
// process allocates per request. The tuned httputil.ReverseProxy runs in the same
// harness for comparison.
func BenchmarkEndToEnd(b *testing.B) {
	up := cannedUpstream(b, cannedOK)
	defer asServed()()
	for _, own := range []struct{ name, gate string }{{"own", ""}, {"own+gate", roomyGroup}, {"own+gate+trusted", trustedIPGroup}} {
		b.Run(own.name, func(b *testing.B) {
			params := Params{Upstream: up}
			if own.gate != "" {
				params.Gate = testGate(b, own.gate)
			}
			benchOwn(b, params, 128)
		})
	}
	for _, bc := range []struct {
		name  string
		h     func() http.Handler
		guard bool // served on a GuardListener, as the daemon serves the proxy
	}{
		{"sluice", func() http.Handler {
			p, err := New(Params{Upstream: up})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { p.Close() })
			return p
		}, true},
		{"sluice+gate", func() http.Handler {
			p, err := New(Params{Upstream: up, Gate: testGate(b, roomyGroup)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { p.Close() })
			return p
		}, true},
		{"httputil", func() http.Handler { return tunedReverseProxy(b, up) }, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv, err := NewServer(ServerParams{Handler: bc.h()})
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			if bc.guard {
				ln = GuardListener(ln, 0)
			}
			go srv.Serve(ln)
			defer srv.Close()
			benchRoundTrips(b, ln.Addr().String(), 128)
		})
	}
}

// trustedIPGroup is run.sh's group: the client's address as the key (its
// peer trusted, so that X-Forwarded-For is looked at), a rate and a
// concurrency limit that never refuse.
const trustedIPGroup = `
[server]
trusted_proxies = ["127.0.0.1"]
[[group]]
name = "all"
key = "ip"
  [group.rate]
  rate = 1e9
  [group.concurrency]
  law = "fixed"
  limit = 100000
`

// refuseIPGroup is trustedIPGroup with a rate no client stays under: every
// request is refused at the rate stage (run.sh's refuse part).
const refuseIPGroup = `
[server]
trusted_proxies = ["127.0.0.1"]
[[group]]
name = "all"
key = "ip"
  [group.rate]
  rate = 0.001
  burst = 1
  [group.concurrency]
  law = "fixed"
  limit = 100000
`

// asServed makes the own server run as the daemon runs it, for a benchmark:
// no overwriting of ended heads, the client-gone watch after its delay (the
// tests watch at once, which costs a read and a goroutine per request); the
// returned function puts the tests' settings back.
func asServed() func() {
	poisonHeads, clientWatchDelay = false, servedWatchDelay
	return func() { poisonHeads, clientWatchDelay = true, 0 }
}

// benchOwn serves a Proxy for params behind the own server and measures
// round trips whose responses have bodyLen bytes.
func benchOwn(b *testing.B, params Params, bodyLen int) {
	p, err := New(params)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	srv, err := NewH1Server(p, ServerParams{})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	benchRoundTrips(b, ln.Addr().String(), bodyLen)
}

// benchRoundTrips measures round trips of one request on one keep-alive
// connection to addr, with a raw client that allocates nothing: allocs/op is
// everything the server's process allocates per request. Each response has
// bodyLen bytes of body.
func benchRoundTrips(b *testing.B, addr string, bodyLen int) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req := []byte("GET /api/items?id=7 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
	buf := make([]byte, 4096)
	roundTrip := func() {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		n, body := 0, -1
		for {
			m, err := conn.Read(buf[n:])
			if err != nil {
				b.Fatal(err)
			}
			n += m
			if body < 0 {
				if i := bytes.Index(buf[:n], []byte("\r\n\r\n")); i >= 0 {
					body = i + 4
				}
			}
			if body >= 0 && n-body >= bodyLen {
				return
			}
		}
	}
	roundTrip()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		roundTrip()
	}
}

// BenchmarkRefusal measures a refusal at the rate stage (refuseIPGroup)
// through the own server and through net/http's on a GuardListener: the
// own server's target is no allocation per refusal.
func BenchmarkRefusal(b *testing.B) {
	up := cannedUpstream(b, cannedOK)
	defer asServed()()
	const bodyLen = len("too many requests (rate)\n")
	b.Run("own", func(b *testing.B) {
		benchOwn(b, Params{Upstream: up, Gate: testGate(b, refuseIPGroup)}, bodyLen)
	})
	b.Run("net/http", func(b *testing.B) {
		p, err := New(Params{Upstream: up, Gate: testGate(b, refuseIPGroup)})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		srv, err := NewServer(ServerParams{Handler: p})
		if err != nil {
			b.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go srv.Serve(GuardListener(ln, 0))
		defer srv.Close()
		benchRoundTrips(b, ln.Addr().String(), bodyLen)
	})
}

// tunedReverseProxy is the baseline of proxy/bench/front: httputil.ReverseProxy
// with pooled buffers, a large idle pool and no compression.
func tunedReverseProxy(tb testing.TB, upstream string) http.Handler {
	u, err := url.Parse(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	tb.Cleanup(tr.CloseIdleConnections)
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport:  tr,
		BufferPool: &rpBufferPool{},
		ErrorLog:   log.New(io.Discard, "", 0),
	}
}

type rpBufferPool struct{ p sync.Pool }

func (b *rpBufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *rpBufferPool) Put(buf []byte) { b.p.Put(&buf) }
