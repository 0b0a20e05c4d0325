// Command front runs a proxy for the benchmark in proxy/bench/run.sh: sluice's
// proxy behind net/http's server (the default, "sluice"), sluice's proxy behind
// its own HTTP/1.1 server ("own"), or a tuned net/http/httputil.ReverseProxy for
// comparison.
// It admits everything: the benchmark measures the forwarding path.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	_ "net/http/pprof" // served only with -pprof
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/proxy"
)

func main() { os.Exit(run()) }

func run() int {
	listen := flag.String("listen", "127.0.0.1:9081", "address to listen on")
	upstream := flag.String("upstream", "http://127.0.0.1:9000", "upstream URL")
	mode := flag.String("mode", "sluice", "proxy to run: sluice, own or httputil")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof on this address (empty: off)")
	flag.Parse()

	var h http.Handler
	switch *mode {
	case "own":
		return serveOwn(*listen, *upstream)
	case "sluice":
		p, err := proxy.New(proxy.Params{Upstream: *upstream})
		if err != nil {
			fmt.Fprintln(os.Stderr, "front:", err)
			return 2
		}
		defer p.Close()
		h = p
	case "httputil":
		rp, err := tunedReverseProxy(*upstream)
		if err != nil {
			fmt.Fprintln(os.Stderr, "front:", err)
			return 2
		}
		h = rp
	default:
		fmt.Fprintf(os.Stderr, "front: unknown mode %q\n", *mode)
		return 2
	}
	if *pprofAddr != "" {
		go func() { _ = http.ListenAndServe(*pprofAddr, nil) }() // DefaultServeMux has pprof
	}
	srv, err := proxy.NewServer(proxy.ServerParams{Addr: *listen, Handler: h, ErrorLog: log.New(io.Discard, "", 0)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "front:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "front:", err)
		return 1
	}
	if *mode == "sluice" {
		ln = proxy.GuardListener(ln, 0)
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "front:", err)
		return 1
	}
	return 0
}

// serveOwn serves sluice's proxy behind its own server on listen.
func serveOwn(listen, upstream string) int {
	p, err := proxy.New(proxy.Params{Upstream: upstream})
	if err != nil {
		fmt.Fprintln(os.Stderr, "front:", err)
		return 2
	}
	defer p.Close()
	srv, err := proxy.NewH1Server(p, proxy.ServerParams{ErrorLog: log.New(io.Discard, "", 0)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "front:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "front:", err)
		return 1
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "front:", err)
		return 1
	}
	return 0
}

// tunedReverseProxy is the baseline: httputil.ReverseProxy with pooled buffers, a
// large idle pool, no compression and a Rewrite that does only what it must.
func tunedReverseProxy(upstream string) (*httputil.ReverseProxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport:  tr,
		BufferPool: &bufferPool{},
		ErrorLog:   log.New(io.Discard, "", 0),
	}, nil
}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }
