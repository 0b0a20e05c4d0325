// Command upstream is the backend of the proxy benchmark (proxy/bench/run.sh): a
// plain net/http server that answers every request with a fixed small body, so the
// benchmark measures the proxies and not the backend.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() { os.Exit(run()) }

func run() int {
	addr := flag.String("listen", "127.0.0.1:9000", "address to listen on")
	size := flag.Int("size", 128, "response body size in bytes")
	flag.Parse()

	body := make([]byte, *size)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	length := strconv.Itoa(len(body))
	srv := &http.Server{
		Addr:              *addr,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h["Content-Type"] = []string{"text/plain"}
			h["Content-Length"] = []string{length}
			_, _ = w.Write(body)
		}),
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		return 1
	}
	return 0
}
