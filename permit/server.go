package permit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/sluicehq/sluice/internal/defaults"
	"github.com/sluicehq/sluice/internal/front"
	"github.com/sluicehq/sluice/internal/listen"
	"github.com/sluicehq/sluice/permit/permitpb"
)

// DefaultListen is where a Server listens when ServerParams.Listen is
// empty: loopback TCP, which needs a Token (the daemon's permit.listen
// default too). A unix socket ("unix:///run/sluice/permit.sock") needs
// none: its file mode decides who connects.
const DefaultListen = defaults.PermitListen

// ServerParams configures a Server. Service is required; the zero value of
// every other field means its default.
type ServerParams struct {
	// Service is the permit service to serve.
	Service *Service
	// Listen is "host:port" or "unix:///path.sock". Default DefaultListen.
	Listen string
	// SocketMode is the file mode of a unix socket. Default 0660.
	SocketMode fs.FileMode
	// Token is the bearer token every call on a TCP listener must carry;
	// NewServer and Serve refuse a TCP listener without one. A unix socket
	// ignores it: its file mode decides who connects.
	Token string
	// MaxBodyBytes bounds an HTTP/JSON body. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ErrorLog receives the HTTP server's own errors (hclog's
	// StandardLogger fits). Nil: the log package's standard logger.
	ErrorLog *log.Logger
}

// maxStreams bounds the calls and Session streams open at once on one
// connection (each Session holds two goroutines); beyond it a client's new
// streams wait for one to end. permitclient keeps no more sessions open.
const maxStreams = permitpb.MaxStreams

// ErrNoToken is returned by NewServer, Serve and SetToken for a TCP
// listener without a token.
var ErrNoToken = fmt.Errorf("permit: %w (permit.token_file)", listen.ErrNoToken)

// Server serves a Service over HTTP/JSON (HTTP/1.1) and gRPC (HTTP/2) on one
// listener: a connection that opens with the HTTP/2 preface goes to gRPC,
// any other to the JSON API. Build it with NewServer; it is safe for
// concurrent use.
type Server struct {
	door  *front.Door
	http  *http.Server
	grpc  *grpc.Server
	drain *drain // tells the Session streams to end
}

// NewServer builds a Server for p. It does not listen: call Listen then
// Serve.
func NewServer(p ServerParams) (*Server, error) {
	if p.Service == nil {
		return nil, errors.New("permit: no service")
	}
	if p.Listen == "" {
		p.Listen = DefaultListen
	}
	if p.MaxBodyBytes <= 0 {
		p.MaxBodyBytes = DefaultMaxBodyBytes
	}
	door, err := front.NewDoor("permit", ErrNoToken, p.Listen, p.SocketMode, p.Token)
	if err != nil {
		return nil, err
	}
	s := &Server{door: door, drain: newDrain()}
	h := &handler{svc: p.Service, maxBody: p.MaxBodyBytes, authorized: func(r *http.Request) bool {
		return door.Allows(r.Header.Get("Authorization"))
	}}
	s.http = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          p.ErrorLog,
	}
	s.grpc = grpc.NewServer(append(front.GRPCOptions(door, maxStreams),
		// permitpb's messages encoded without protobuf's reflection: the
		// same wire format at a fraction of the CPU.
		grpc.ForceServerCodecV2(permitpb.Codec{}),
		grpc.MaxRecvMsgSize(int(p.MaxBodyBytes)),
	)...)
	permitpb.RegisterPermitsServer(s.grpc, &grpcService{svc: p.Service, drain: s.drain, streamCheck: door.StreamCheck})
	return s, nil
}

// Handler returns the HTTP/JSON API, the token check included, for a
// caller that serves it on a listener of its own.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// SetToken changes the bearer token (a reload of the token file). A TCP
// listener cannot go without one (ErrNoToken).
func (s *Server) SetToken(tok string) error { return s.door.SetToken(tok) }

// Listen opens ServerParams.Listen: a TCP address or a unix socket
// (created with SocketMode, after removing a stale socket file that
// nothing listens on).
func (s *Server) Listen() (net.Listener, error) { return s.door.Listen() }

// Serve serves on ln until Shutdown or Close, and then returns
// http.ErrServerClosed (at once after them); or ErrNoToken (closing ln) when ln is TCP and no
// token is set, whatever ServerParams.Listen said. It may be called once.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.door.Serve(ln, http.ErrServerClosed); err != nil {
		return err
	}
	sp := s.door.Split(ln, front.SplitParams{HTTP1: true})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = s.http.Serve(sp.H1()) }()
	go func() { defer wg.Done(); _ = s.grpc.Serve(sp.H2()) }()
	err := sp.Run()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("permit: accept: %w", err)
	}
	return http.ErrServerClosed
}

// Addr returns the address served, nil before Serve.
func (s *Server) Addr() net.Addr { return s.door.Addr() }

// Shutdown stops accepting connections and calls, waits for the calls in
// progress (a caller waiting in a queue included; a Session stream ends
// after its call, an idle one at once) until ctx ends, then cuts the rest.
// The permits granted stay with the Service.
func (s *Server) Shutdown(ctx context.Context) error {
	s.door.Close()
	s.drain.start()
	stopped := make(chan error, 1)
	go func() { stopped <- front.StopGRPC(ctx, s.grpc) }()
	err := s.http.Shutdown(ctx)
	if gerr := <-stopped; gerr != nil {
		err = gerr
	}
	return err
}

// Close cuts every connection at once.
func (s *Server) Close() error {
	s.door.Close()
	s.drain.start()
	s.grpc.Stop()
	return s.http.Close()
}
