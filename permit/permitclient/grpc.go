package permitclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/permit/permitpb"
)

// grpcTransport makes its calls on Session streams, one call at a time per
// stream, from a pool of idle ones: a call costs two messages on an open
// stream rather than a call's setup.
type grpcTransport struct {
	conn    *grpc.ClientConn
	c       permitpb.PermitsClient
	maxIdle int

	mu     sync.Mutex
	idle   []*session
	closed bool
}

type session struct {
	st     grpc.BidiStreamingClient[permitpb.SessionRequest, permitpb.SessionResponse]
	cancel context.CancelFunc
}

func (s *session) close() {
	_ = s.st.CloseSend()
	s.cancel()
}

// bearer sends the token with every call.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false: the service listens without TLS, on
// loopback or a unix socket.
func (bearer) RequireTransportSecurity() bool { return false }

func newGRPC(network, address string, o Options) (transport, error) {
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		d := net.Dialer{Timeout: o.DialTimeout}
		return d.DialContext(ctx, network, address)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial),
		// permitpb's messages encoded without protobuf's reflection.
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(permitpb.Codec{})),
		// Pings on a connection with calls in flight, so that a dead service
		// fails them (the service allows one every 10s at most).
		// Fixed flow-control windows: they turn off grpc's bandwidth-delay
		// probing, which pings the service on almost every small message.
		grpc.WithInitialWindowSize(1 << 20),
		grpc.WithInitialConnWindowSize(1 << 20),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 20 * time.Second, Timeout: 10 * time.Second}),
	}
	if o.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(o.Token)))
	}
	// passthrough: the dialer above reaches the address; no name resolution.
	conn, err := grpc.NewClient("passthrough:///permit", opts...)
	if err != nil {
		return nil, fmt.Errorf("permitclient: %w", err)
	}
	return &grpcTransport{conn: conn, c: permitpb.NewPermitsClient(conn), maxIdle: o.MaxConns}, nil
}

// get returns an idle session, or opens one (reused = false).
func (t *grpcTransport) get() (s *session, reused bool, err error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, false, status.Error(codes.Canceled, "permitclient: client closed")
	}
	if n := len(t.idle); n > 0 {
		s = t.idle[n-1]
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		return s, true, nil
	}
	t.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := t.c.Session(ctx)
	if err != nil {
		cancel()
		return nil, false, err
	}
	return &session{st: st, cancel: cancel}, false, nil
}

func (t *grpcTransport) put(s *session) {
	t.mu.Lock()
	if t.closed || len(t.idle) >= t.maxIdle {
		t.mu.Unlock()
		s.close()
		return
	}
	t.idle = append(t.idle, s)
	t.mu.Unlock()
}

// call sends req on a session and reads its answer. A call whose ctx ends
// meanwhile cancels its stream (the service then stops waiting for it) and
// returns ctx's status. A stream found broken when reused (the service
// restarted) is replaced once.
func (t *grpcTransport) call(ctx context.Context, req *permitpb.SessionRequest) (*permitpb.SessionResponse, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, status.FromContextError(err).Err()
		}
		s, reused, err := t.get()
		if err != nil {
			return nil, err
		}
		var stop func() bool
		if ctx.Done() != nil {
			stop = context.AfterFunc(ctx, s.cancel)
		}
		err = s.st.Send(req)
		var resp *permitpb.SessionResponse
		if err == nil || err == io.EOF { // io.EOF: the stream ended; Recv says why
			resp, err = s.st.Recv()
		}
		if stop != nil && !stop() {
			s.close() // ctx ended: the stream is cancelled
			if err != nil {
				return nil, status.FromContextError(ctx.Err()).Err()
			}
			return resp, nil
		}
		if err != nil {
			s.close()
			if reused && attempt == 0 {
				continue
			}
			return nil, err
		}
		t.put(s)
		if e := resp.GetError(); e != nil {
			return nil, status.Error(codes.Code(e.GetCode()), e.GetMessage())
		}
		return resp, nil
	}
}

func (t *grpcTransport) acquire(ctx context.Context, r Request) (grant, error) {
	wait := r.Wait
	if dl, ok := ctx.Deadline(); ok {
		// A stream carries no deadline per message: the wait does.
		left := time.Until(dl)
		if left < time.Millisecond {
			return grant{}, status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
		}
		if wait == 0 || left < wait {
			wait = left
		}
	}
	resp, err := t.call(ctx, &permitpb.SessionRequest{Call: &permitpb.SessionRequest_Acquire{Acquire: &permitpb.AcquireRequest{
		Group: r.Group, Key: r.Key, Priority: r.Priority, Cost: r.Cost, WaitMs: uint32(wait.Milliseconds()),
	}}})
	if err != nil {
		return grant{}, err
	}
	a := resp.GetAcquire()
	if ref := a.GetRefusal(); ref != nil {
		return grant{}, &RefusedError{Group: ref.GetGroup(), Reason: ref.GetReason(), Status: int(ref.GetStatus()),
			RetryAfter:      time.Duration(ref.GetRetryAfterS()) * time.Second,
			RateLimitPolicy: ref.GetRatelimitPolicy(), RateLimit: ref.GetRatelimit()}
	}
	g := a.GetGrant()
	if g == nil {
		return grant{}, errors.New("permitclient: the service answered neither a grant nor a refusal")
	}
	return grant{id: g.GetId(), group: g.GetGroup(), lease: time.Duration(g.GetLeaseMs()) * time.Millisecond, shadowed: g.GetShadowed()}, nil
}

var wireOutcomes = [...]permitpb.Outcome{Success: permitpb.Outcome_SUCCESS, Dropped: permitpb.Outcome_DROPPED, Ignored: permitpb.Outcome_IGNORED}

// release waits for its answer for as long as the connection lives: the
// keepalive pings (see newGRPC) tell a dead one within about 30s.
func (t *grpcTransport) release(id uint64, o Outcome, latency time.Duration) error {
	ms := float64(latency) / float64(time.Millisecond)
	resp, err := t.call(context.Background(), &permitpb.SessionRequest{Call: &permitpb.SessionRequest_Release{Release: &permitpb.ReleaseRequest{
		Id: id, Outcome: wireOutcomes[o], LatencyMs: &ms,
	}}})
	if status.Code(err) == codes.NotFound {
		return fmt.Errorf("%w: %v", ErrUnknown, status.Convert(err).Message())
	}
	if err != nil {
		return err
	}
	if resp.GetRelease().GetResult() == permitpb.ReleaseResult_EXPIRED {
		return ErrExpired
	}
	return nil
}

func (t *grpcTransport) close() error {
	t.mu.Lock()
	t.closed = true
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, s := range idle {
		s.close()
	}
	return t.conn.Close()
}
