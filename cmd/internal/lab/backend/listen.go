package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Instance is a Server listening on a TCP address.
type Instance struct {
	*Server
	URL  string // base URL, e.g. "http://127.0.0.1:40123"
	http *http.Server
	done chan error
}

// Listen starts a Server for p on addr ("127.0.0.1:0" picks a free port).
// Stop it with Shutdown.
func Listen(addr string, p Params) (*Instance, error) {
	s, err := New(p)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("backend: listen: %w", err)
	}
	in := &Instance{
		Server: s,
		URL:    "http://" + ln.Addr().String(),
		http:   &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second},
		done:   make(chan error, 1),
	}
	go func() { in.done <- in.http.Serve(ln) }()
	return in, nil
}

// Shutdown stops accepting, waits for requests in flight until ctx ends,
// then closes every connection and fails the requests still queued, so
// their goroutines end too.
func (in *Instance) Shutdown(ctx context.Context) error {
	in.Server.Close()
	err := in.http.Shutdown(ctx)
	if err != nil {
		_ = in.http.Close()
		in.Server.pool.failAll()
	}
	if serr := <-in.done; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
