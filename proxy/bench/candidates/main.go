// Command candidates runs the transports weighed against sluice's own HTTP/1.1
// client in proxy/bench/run.sh (CANDIDATES=...), each as a plain reverse proxy
// that admits everything:
//
//   - fasthttp: valyala/fasthttp's server in front and its HostClient behind;
//   - fhclient: net/http's server in front (as sluice has it) and fasthttp's
//     HostClient behind;
//   - gnet: panjf2000/gnet's event loop (no goroutine per connection, no
//     read tried before the poller says a socket is ready), with -refuse only:
//     a head is looked at up to its end and answered from prebuilt bytes.
//
// With -refuse, each answers every request 429 at once, as a limiter that
// refuses everything would (the refuse part of run.sh): fasthttp's server,
// net/http's server (fhclient) and gnet's loop, each with no limiter behind.
//
// (net/http's Transport, tuned, is the "httputil" front of proxy/bench/front.)
// It lives in a module of its own so that fasthttp stays out of sluice's
// dependencies: both fail the proxy's differential test (proxy/diff_test.go),
// which is the safety bar every transport must pass, so neither is used; the
// figures show what their speed would have bought.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

func main() { os.Exit(run()) }

func run() int {
	listen := flag.String("listen", "127.0.0.1:9084", "address to listen on")
	upstream := flag.String("upstream", "http://127.0.0.1:9000", "upstream URL (http://host:port)")
	mode := flag.String("mode", "fasthttp", "candidate: fasthttp, fhclient or gnet")
	refuse := flag.Bool("refuse", false, "answer every request 429 instead of forwarding it")
	flag.Parse()
	if *mode == "gnet" {
		if !*refuse {
			fmt.Fprintln(os.Stderr, "candidates: gnet runs with -refuse only")
			return 2
		}
		return serveGnet(*listen)
	}

	hc := &fasthttp.HostClient{
		Addr:                          strings.TrimPrefix(*upstream, "http://"),
		MaxConns:                      1024,
		MaxIdleConnDuration:           90 * time.Second,
		NoDefaultUserAgentHeader:      true,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "candidates:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); ln.Close() }()

	switch *mode {
	case "fasthttp":
		srv := &fasthttp.Server{
			Handler: func(c *fasthttp.RequestCtx) {
				if *refuse {
					c.Response.Header.Set("Retry-After", "1")
					c.Error(refusedBody, fasthttp.StatusTooManyRequests)
					return
				}
				proxyFast(hc, c)
			},
			NoDefaultServerHeader:         true,
			NoDefaultDate:                 false,
			DisableHeaderNamesNormalizing: true,
			ReadTimeout:                   60 * time.Second,
		}
		_ = srv.Serve(ln)
	case "fhclient":
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if *refuse {
					w.Header()["Retry-After"] = []string{"1"}
					http.Error(w, refusedBody, http.StatusTooManyRequests)
					return
				}
				proxyHTTP(hc, w, r)
			}),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          log.New(io.Discard, "", 0),
		}
		_ = srv.Serve(ln)
	default:
		fmt.Fprintf(os.Stderr, "candidates: unknown mode %q\n", *mode)
		return 2
	}
	return 0
}

// refusedBody is the text of a refusal.
const refusedBody = "too many requests (rate)"

// hopByHop lists the fields a proxy drops in both directions (RFC 9110 §7.6.1).
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// isHop reports whether field k is hop-by-hop, or named by the Connection value conn.
func isHop(k, conn string) bool {
	for _, h := range hopByHop {
		if strings.EqualFold(h, k) {
			return true
		}
	}
	for _, t := range strings.Split(conn, ",") {
		if t = strings.TrimSpace(t); t != "" && strings.EqualFold(t, k) {
			return true
		}
	}
	return false
}

// dropHops deletes the hop-by-hop fields of a fasthttp header, given its
// VisitAll, its Connection value and its Del.
func dropHops(visit func(func(k, v []byte)), conn string, del func(string)) {
	var hops []string
	visit(func(k, _ []byte) {
		if isHop(string(k), conn) {
			hops = append(hops, string(k))
		}
	})
	for _, k := range hops {
		del(k)
	}
}

// proxyFast forwards one request with fasthttp on both sides.
func proxyFast(hc *fasthttp.HostClient, c *fasthttp.RequestCtx) {
	req, resp := &c.Request, &c.Response
	dropHops(req.Header.VisitAll, string(req.Header.Peek("Connection")), req.Header.Del)
	if ip, _, err := net.SplitHostPort(c.RemoteAddr().String()); err == nil {
		req.Header.Add("X-Forwarded-For", ip)
	}
	req.Header.Set("X-Forwarded-Proto", "http")
	if err := hc.Do(req, resp); err != nil {
		resp.Reset()
		c.Error("502 Bad Gateway (upstream)", fasthttp.StatusBadGateway)
		return
	}
	dropHops(resp.Header.VisitAll, string(resp.Header.Peek("Connection")), resp.Header.Del)
}

// proxyHTTP forwards one request read by net/http's server with fasthttp's client.
func proxyHTTP(hc *fasthttp.HostClient, w http.ResponseWriter, r *http.Request) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(r.Method)
	req.SetRequestURI(r.RequestURI)
	req.Header.SetHost(r.Host)
	conn := strings.Join(r.Header["Connection"], ",")
	for k, vv := range r.Header {
		if isHop(k, conn) || k == "Content-Length" {
			continue
		}
		for _, v := range vv {
			req.Header.Add(k, v)
		}
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		req.Header.Set("X-Forwarded-For", ip)
	}
	req.Header.Set("X-Forwarded-Proto", "http")
	if r.ContentLength != 0 {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "400 Bad Request", http.StatusBadRequest)
			return
		}
		req.SetBody(b)
	}
	if err := hc.Do(req, resp); err != nil {
		http.Error(w, "502 Bad Gateway (upstream)", http.StatusBadGateway)
		return
	}
	h := w.Header()
	rc := string(resp.Header.Peek("Connection"))
	resp.Header.VisitAll(func(k, v []byte) {
		if !isHop(string(k), rc) {
			h.Add(string(k), string(v))
		}
	})
	w.WriteHeader(resp.StatusCode())
	_, _ = w.Write(resp.Body())
}
