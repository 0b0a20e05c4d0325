package permitclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/permit/permitpb"
)

type grpcTransport struct {
	conn *grpc.ClientConn
	c    permitpb.PermitsClient
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
	}
	if o.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(o.Token)))
	}
	// passthrough: the dialer above reaches the address; no name resolution.
	conn, err := grpc.NewClient("passthrough:///permit", opts...)
	if err != nil {
		return nil, fmt.Errorf("permitclient: %w", err)
	}
	return &grpcTransport{conn: conn, c: permitpb.NewPermitsClient(conn)}, nil
}

func (t *grpcTransport) acquire(ctx context.Context, r Request) (grant, error) {
	resp, err := t.c.Acquire(ctx, &permitpb.AcquireRequest{
		Group: r.Group, Key: r.Key, Priority: r.Priority, Cost: r.Cost, WaitMs: uint32(r.Wait.Milliseconds()),
	})
	if err != nil {
		return grant{}, err
	}
	if ref := resp.GetRefusal(); ref != nil {
		return grant{}, &RefusedError{Group: ref.GetGroup(), Reason: ref.GetReason(), Status: int(ref.GetStatus()),
			RetryAfter:      time.Duration(ref.GetRetryAfterS()) * time.Second,
			RateLimitPolicy: ref.GetRatelimitPolicy(), RateLimit: ref.GetRatelimit()}
	}
	g := resp.GetGrant()
	if g == nil {
		return grant{}, errors.New("permitclient: the service answered neither a grant nor a refusal")
	}
	return grant{id: g.GetId(), group: g.GetGroup(), lease: time.Duration(g.GetLeaseMs()) * time.Millisecond}, nil
}

var wireOutcomes = [...]permitpb.Outcome{Success: permitpb.Outcome_SUCCESS, Dropped: permitpb.Outcome_DROPPED, Ignored: permitpb.Outcome_IGNORED}

func (t *grpcTransport) release(ctx context.Context, id uint64, o Outcome, latency time.Duration) error {
	ms := float64(latency) / float64(time.Millisecond)
	resp, err := t.c.Release(ctx, &permitpb.ReleaseRequest{Id: id, Outcome: wireOutcomes[o], LatencyMs: &ms})
	if status.Code(err) == codes.NotFound {
		return fmt.Errorf("%w: %v", ErrUnknown, status.Convert(err).Message())
	}
	if err != nil {
		return err
	}
	if resp.GetResult() == permitpb.ReleaseResult_EXPIRED {
		return ErrExpired
	}
	return nil
}

func (t *grpcTransport) close() error { return t.conn.Close() }
