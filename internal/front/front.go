// Package front holds what the servers of sluice's front-ends beside the
// proxy (permit, rls) share: their door (a listen.Door whose errors name the
// front-end), the Split that serves its listener (a bound on connections,
// the protocol told by the first bytes, a gRPC connection authenticated
// before a gRPC server sees it), the options of their gRPC servers, and the
// graceful stop of those. It imports internal/listen and grpc, nothing of
// the front-ends, which import it and never each other.
//
// Everything here is safe for concurrent use.
package front

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/sluicehq/sluice/internal/listen"
)

// Door is the listen.Door of a front-end's server, whose errors are the
// front-end's: its ErrNoToken, and the others prefixed with its name.
type Door struct {
	*listen.Door
	name    string // "permit", "rls"
	noToken error  // the front-end's ErrNoToken, which wraps listen.ErrNoToken
}

// NewDoor returns the door of front-end name (the prefix of its errors)
// that will listen on addr (a unix socket created with mode) with token
// tok. A TCP addr without a token is noToken, naming addr.
func NewDoor(name string, noToken error, addr string, mode fs.FileMode, tok string) (*Door, error) {
	d, err := listen.NewDoor(addr, mode, tok)
	if errors.Is(err, listen.ErrNoToken) {
		return nil, fmt.Errorf("%w (listen %q)", noToken, addr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Door{Door: d, name: name, noToken: noToken}, nil
}

// SetToken changes the bearer token (a reload of the token file): noToken
// for "" on a TCP listener.
func (d *Door) SetToken(tok string) error {
	if err := d.Door.SetToken(tok); err != nil {
		return d.noToken
	}
	return nil
}

// Listen opens the door's address.
func (d *Door) Listen() (net.Listener, error) {
	ln, err := d.Door.Listen()
	if err != nil {
		return nil, fmt.Errorf("%s: listen: %w", d.name, err)
	}
	return ln, nil
}

// Serve takes ln as the listener served (listen.Door.Open, which closes ln
// on failure): closed once the door is closed (the server shut down),
// noToken naming ln's address when ln is TCP and no token is set.
func (d *Door) Serve(ln net.Listener, closed error) error {
	addr := ln.Addr()
	switch err := d.Open(ln); {
	case errors.Is(err, listen.ErrClosed):
		return closed
	case errors.Is(err, listen.ErrNoToken):
		return fmt.Errorf("%w (bound to %s)", d.noToken, addr)
	case err != nil:
		return fmt.Errorf("%s: %w", d.name, err)
	}
	return nil
}

// window is the HTTP/2 flow-control window of a stream and of a connection
// of a front-end's gRPC server: far beyond what their small messages need.
const window = 1 << 20

// GRPCOptions are the options every front-end's gRPC server starts with:
// the door's token check of each stream before it is made a goroutine or
// its message read (Guard.Tap, on TCP); at most maxStreams streams open at
// once on a connection (a client's next stream waits for one to end) and
// header fields of at most MaxHeaderBytes; fixed flow-control windows,
// which turn off grpc's bandwidth-delay probing (it pings the peer on
// almost every small message); and pings allowed every 10s at most, with
// or without calls in flight. Serve the server on a Split's H2, which
// bounds the connections and authenticates each before the server sees it.
func GRPCOptions(d *Door, maxStreams uint32) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InTapHandle(d.Tap),
		grpc.MaxConcurrentStreams(maxStreams),
		grpc.MaxHeaderListSize(MaxHeaderBytes),
		grpc.InitialWindowSize(window),
		grpc.InitialConnWindowSize(window),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	}
}

// StopGRPC stops srv gracefully, waiting for the calls in progress until
// ctx ends, then cuts the rest and returns ctx.Err().
func StopGRPC(ctx context.Context, srv *grpc.Server) error {
	done := make(chan struct{})
	go func() { srv.GracefulStop(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		srv.Stop()
		<-done
		return ctx.Err()
	}
}
