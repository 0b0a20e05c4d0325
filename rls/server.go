package rls

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"

	"github.com/sluicehq/sluice/internal/defaults"
	"github.com/sluicehq/sluice/internal/front"
	"github.com/sluicehq/sluice/internal/listen"
)

// DefaultListen is where a Server listens when ServerParams.Listen is
// empty: a unix socket (an Envoy cluster can reach one through a pipe
// address), which needs no token.
const DefaultListen = defaults.RLSListen

// maxStreams bounds the calls open at once on one connection (RFC 9113's
// recommended minimum, nginx's 128 aside): Envoy opens another connection
// for more.
const maxStreams = 100

// maxRequestBytes bounds a request: far beyond MaxDescriptors descriptors
// of MaxEntries entries of ordinary keys and values.
const maxRequestBytes = 256 << 10

// ServerParams configures a Server. Service is required; the zero value of
// every other field means its default.
type ServerParams struct {
	Service *Service
	// Listen is "host:port" or "unix:///path.sock". Default DefaultListen.
	Listen string
	// SocketMode is the file mode of a unix socket. Default 0660.
	SocketMode fs.FileMode
	// Token is the bearer token every call on a TCP listener must carry as
	// gRPC metadata "authorization: Bearer TOKEN" (Envoy sends it with the
	// rate_limit_service's grpc_service.initial_metadata); NewServer and
	// Serve refuse a TCP listener without one. A unix socket ignores it.
	Token string
}

// ErrNoToken is returned by NewServer, Serve and SetToken for a TCP
// listener without a token.
var ErrNoToken = fmt.Errorf("rls: %w (rls.token_file; Envoy sends it as initial_metadata)", listen.ErrNoToken)

// Server serves a Service over gRPC on one listener. Build it with
// NewServer; it is safe for concurrent use.
type Server struct {
	door *front.Door
	grpc *grpc.Server
}

// NewServer builds a Server for p. It does not listen: call Listen then
// Serve.
func NewServer(p ServerParams) (*Server, error) {
	if p.Service == nil {
		return nil, errors.New("rls: no service")
	}
	if p.Listen == "" {
		p.Listen = DefaultListen
	}
	door, err := front.NewDoor("rls", ErrNoToken, p.Listen, p.SocketMode, p.Token)
	if err != nil {
		return nil, err
	}
	s := &Server{door: door}
	s.grpc = grpc.NewServer(append(front.GRPCOptions(door, maxStreams), grpc.MaxRecvMsgSize(maxRequestBytes))...)
	rlsv3.RegisterRateLimitServiceServer(s.grpc, p.Service)
	return s, nil
}

// SetToken changes the bearer token (a reload of the token file).
func (s *Server) SetToken(tok string) error { return s.door.SetToken(tok) }

// Listen opens ServerParams.Listen: a TCP address or a unix socket
// (created with SocketMode, after removing a stale socket file).
func (s *Server) Listen() (net.Listener, error) { return s.door.Listen() }

// Serve serves on ln until Shutdown or Close, then returns
// grpc.ErrServerStopped (at once after them); or ErrNoToken (closing ln)
// when ln is TCP and no token is set. It may be called once.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.door.Serve(ln, grpc.ErrServerStopped); err != nil {
		return err
	}
	sp := s.door.Split(ln, front.SplitParams{})
	done := make(chan struct{})
	go func() { defer close(done); _ = s.grpc.Serve(sp.H2()) }() // ends when Run closes H2, or at Stop
	err := sp.Run()
	<-done
	if err != nil {
		return fmt.Errorf("rls: accept: %w", err)
	}
	return grpc.ErrServerStopped
}

// Addr returns the address served, nil before Serve.
func (s *Server) Addr() net.Addr { return s.door.Addr() }

// Shutdown stops accepting calls and waits for those in progress until ctx
// ends, then cuts the rest.
func (s *Server) Shutdown(ctx context.Context) error {
	s.door.Close()
	return front.StopGRPC(ctx, s.grpc)
}

// Close cuts every connection at once.
func (s *Server) Close() error {
	s.door.Close()
	s.grpc.Stop()
	return nil
}
