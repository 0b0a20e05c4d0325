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
// stream rather than a call's setup. It opens at most maxSessions sessions,
// the service's streams per connection, so that no call waits for a stream
// that an idle session holds; acquires, which may wait in the group's queue,
// hold at most maxAcquiring of them, so that a release, which may be what
// ends their wait, always finds one. A call beyond those waits for a
// session as long as its context lets it.
type grpcTransport struct {
	conn    *grpc.ClientConn
	c       permitpb.PermitsClient
	maxIdle int

	mu        sync.Mutex
	idle      []*session
	open      int           // sessions open, idle or in a call
	acquiring int           // sessions in an acquire
	freed     chan struct{} // closed when a session is put back or closed; nil when nobody waits
	closed    bool
}

// The bounds of a grpcTransport's sessions.
const (
	maxSessions  = permitpb.MaxStreams
	maxAcquiring = maxSessions - maxSessions/8
)

type session struct {
	st     grpc.BidiStreamingClient[permitpb.SessionRequest, permitpb.SessionResponse]
	cancel context.CancelFunc

	// The messages of the session's calls, reused from one call to the
	// next: a session carries one call at a time, grpc has encoded a
	// request when Send returns (nothing reads it later: this client has
	// no stats handler, and sluice never sets grpc.EnableTracing), and
	// RecvMsg replaces what the answer held.
	req        permitpb.SessionRequest
	acquire    permitpb.SessionRequest_Acquire
	acquireReq permitpb.AcquireRequest
	release    permitpb.SessionRequest_Release
	releaseReq permitpb.ReleaseRequest
	latencyMs  float64
	cost       int64
	resp       permitpb.SessionResponse
}

func (s *session) close() {
	_ = s.st.CloseSend()
	s.cancel()
}

// acquireRequest returns the session's request, made an acquire of r.
func (s *session) acquireRequest(r Request, wait time.Duration) *permitpb.SessionRequest {
	a := &s.acquireReq
	a.Reset()
	a.Group, a.Key, a.Priority, a.Cost, a.WaitMs = r.Group, r.Key, r.Priority, r.Cost, uint32(wait.Milliseconds())
	s.acquire.Acquire = a
	s.req.Reset()
	s.req.Call = &s.acquire
	return &s.req
}

// releaseRequest returns the session's request, made a release.
func (s *session) releaseRequest(id uint64, o Outcome, latency time.Duration, cost int64) *permitpb.SessionRequest {
	s.latencyMs = float64(latency) / float64(time.Millisecond)
	r := &s.releaseReq
	r.Reset()
	r.Id, r.Outcome, r.LatencyMs = id, wireOutcomes[o], &s.latencyMs
	if cost != noCost {
		s.cost = cost
		r.Cost = &s.cost
	}
	s.release.Release = r
	s.req.Reset()
	s.req.Call = &s.release
	return &s.req
}

// callMetadata sends the client's session, and the token if any, with
// every call (a Session stream's, once for all its calls).
type callMetadata struct{ token, session string }

func (m callMetadata) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	md := map[string]string{permitpb.SessionKey: m.session}
	if m.token != "" {
		md["authorization"] = "Bearer " + m.token
	}
	return md, nil
}

// RequireTransportSecurity is false: the service listens without TLS, on
// loopback or a unix socket.
func (callMetadata) RequireTransportSecurity() bool { return false }

func newGRPC(network, address, session string, o Options) (transport, error) {
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
		grpc.WithPerRPCCredentials(callMetadata{token: o.Token, session: session}),
	}
	// passthrough: the dialer above reaches the address; no name resolution.
	conn, err := grpc.NewClient("passthrough:///permit", opts...)
	if err != nil {
		return nil, fmt.Errorf("permitclient: %w", err)
	}
	return &grpcTransport{conn: conn, c: permitpb.NewPermitsClient(conn), maxIdle: o.MaxConns}, nil
}

// get returns a session for an acquire or a release: an idle one, or a new
// one (reused = false), within the bounds of grpcTransport; or waits for
// one until ctx ends.
func (t *grpcTransport) get(ctx context.Context, acquire bool) (s *session, reused bool, err error) {
	t.mu.Lock()
	for {
		if t.closed {
			t.mu.Unlock()
			return nil, false, status.Error(codes.Canceled, "permitclient: client closed")
		}
		if !acquire || t.acquiring < maxAcquiring {
			if n := len(t.idle); n > 0 {
				s = t.idle[n-1]
				t.idle = t.idle[:n-1]
				t.take(acquire)
				t.mu.Unlock()
				return s, true, nil
			}
			if t.open < maxSessions {
				break
			}
		}
		if t.freed == nil {
			t.freed = make(chan struct{})
		}
		freed := t.freed
		t.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, false, status.FromContextError(ctx.Err()).Err()
		}
		t.mu.Lock()
	}
	t.open++
	t.take(acquire)
	t.mu.Unlock()
	sctx, cancel := context.WithCancel(context.Background())
	st, err := t.c.Session(sctx)
	if err != nil {
		cancel()
		t.drop(nil, acquire)
		return nil, false, err
	}
	return &session{st: st, cancel: cancel}, false, nil
}

// take counts a session taken for an acquire; t.mu is held.
func (t *grpcTransport) take(acquire bool) {
	if acquire {
		t.acquiring++
	}
}

// put gives back a session after a call that went well: it is kept idle
// unless maxIdle are.
func (t *grpcTransport) put(s *session, acquire bool) {
	t.mu.Lock()
	if t.closed || len(t.idle) >= t.maxIdle {
		t.mu.Unlock()
		t.drop(s, acquire)
		return
	}
	if acquire {
		t.acquiring--
	}
	t.idle = append(t.idle, s)
	t.wake()
	t.mu.Unlock()
}

// drop closes s (nil: a session that failed to open) and counts it closed.
func (t *grpcTransport) drop(s *session, acquire bool) {
	if s != nil {
		s.close()
	}
	t.mu.Lock()
	t.open--
	if acquire {
		t.acquiring--
	}
	t.wake()
	t.mu.Unlock()
}

// wake tells the calls waiting for a session to look again; t.mu is held.
func (t *grpcTransport) wake() {
	if t.freed != nil {
		close(t.freed)
		t.freed = nil
	}
}

// call sends the request that build makes on a session and hands its
// answer to read, before the session serves another call. A call whose ctx
// ends meanwhile cancels its stream (the service then stops waiting for
// it) and returns ctx's status. A stream found broken when reused (the
// service restarted) is replaced once. An answer that is an error is
// returned as its status, without read.
func (t *grpcTransport) call(ctx context.Context, acquire bool, build func(*session) *permitpb.SessionRequest, read func(*permitpb.SessionResponse) error) error {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		s, reused, err := t.get(ctx, acquire)
		if err != nil {
			return err
		}
		var stop func() bool
		if ctx.Done() != nil {
			stop = context.AfterFunc(ctx, s.cancel)
		}
		err = s.st.Send(build(s))
		if err == nil || err == io.EOF { // io.EOF: the stream ended; RecvMsg says why
			err = s.st.RecvMsg(&s.resp)
		}
		if stop != nil && !stop() {
			t.drop(s, acquire) // ctx ended: the stream is cancelled
			if err != nil {
				return status.FromContextError(ctx.Err()).Err()
			}
			return answer(&s.resp, read)
		}
		if err != nil {
			t.drop(s, acquire)
			if reused && attempt == 0 {
				continue
			}
			return err
		}
		err = answer(&s.resp, read)
		t.put(s, acquire)
		return err
	}
}

// answer hands resp to read, or returns the error it carries.
func answer(resp *permitpb.SessionResponse, read func(*permitpb.SessionResponse) error) error {
	if e := resp.GetError(); e != nil {
		return status.Error(codes.Code(e.GetCode()), e.GetMessage())
	}
	return read(resp)
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
	var g grant
	err := t.call(ctx, true, func(s *session) *permitpb.SessionRequest { return s.acquireRequest(r, wait) },
		func(resp *permitpb.SessionResponse) error {
			a := resp.GetAcquire()
			if ref := a.GetRefusal(); ref != nil {
				return &RefusedError{Group: ref.GetGroup(), Reason: ref.GetReason(), Status: int(ref.GetStatus()),
					RetryAfter:      time.Duration(ref.GetRetryAfterS()) * time.Second,
					RateLimitPolicy: ref.GetRatelimitPolicy(), RateLimit: ref.GetRatelimit()}
			}
			m := a.GetGrant()
			if m == nil {
				return errors.New("permitclient: the service answered neither a grant nor a refusal")
			}
			g = grant{id: m.GetId(), group: m.GetGroup(), lease: time.Duration(m.GetLeaseMs()) * time.Millisecond, shadowed: m.GetShadowed()}
			return nil
		})
	if err != nil {
		return grant{}, err
	}
	return g, nil
}

var wireOutcomes = [...]permitpb.Outcome{Success: permitpb.Outcome_SUCCESS, Dropped: permitpb.Outcome_DROPPED, Ignored: permitpb.Outcome_IGNORED}

// release waits for its answer for as long as the connection lives: the
// keepalive pings (see newGRPC) tell a dead one within about 30s.
func (t *grpcTransport) release(id uint64, o Outcome, latency time.Duration, cost int64) error {
	var expired bool
	err := t.call(context.Background(), false, func(s *session) *permitpb.SessionRequest { return s.releaseRequest(id, o, latency, cost) },
		func(resp *permitpb.SessionResponse) error {
			expired = resp.GetRelease().GetResult() == permitpb.ReleaseResult_EXPIRED
			return nil
		})
	if status.Code(err) == codes.NotFound {
		return fmt.Errorf("%w: %v", ErrUnknown, status.Convert(err).Message())
	}
	if err != nil {
		return err
	}
	if expired {
		return ErrExpired
	}
	return nil
}

func (t *grpcTransport) close() error {
	t.mu.Lock()
	t.closed = true
	idle := t.idle
	t.idle = nil
	t.open -= len(idle)
	t.wake()
	t.mu.Unlock()
	for _, s := range idle {
		s.close()
	}
	return t.conn.Close()
}
