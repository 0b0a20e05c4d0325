package permit

import (
	"context"
	"errors"
	"math"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/permit/permitpb"
)

// grpcService is the gRPC API of a Service (permitpb.PermitsServer).
type grpcService struct {
	permitpb.UnimplementedPermitsServer
	svc *Service
}

// outcomes maps the wire's outcomes to the gate's.
var outcomes = map[permitpb.Outcome]gate.Outcome{
	permitpb.Outcome_SUCCESS: gate.Success,
	permitpb.Outcome_DROPPED: gate.Dropped,
	permitpb.Outcome_IGNORED: gate.Ignored,
}

var results = [...]permitpb.ReleaseResult{
	Released:        permitpb.ReleaseResult_RELEASED,
	AlreadyReleased: permitpb.ReleaseResult_ALREADY_RELEASED,
	Expired:         permitpb.ReleaseResult_EXPIRED,
}

func (g *grpcService) Acquire(ctx context.Context, in *permitpb.AcquireRequest) (*permitpb.AcquireResponse, error) {
	p, err := ParsePriority(in.GetPriority())
	if err != nil {
		return nil, grpcError(err)
	}
	req := Request{Group: in.GetGroup(), Key: in.GetKey(), Priority: p, Cost: in.GetCost(),
		Wait: time.Duration(in.GetWaitMs()) * time.Millisecond}
	gr, rej, err := g.svc.Acquire(ctx, req)
	if err != nil {
		return nil, grpcError(err)
	}
	if rej.Rejected() {
		r := refusalOf(rej, make(http.Header, 4))
		return &permitpb.AcquireResponse{Result: &permitpb.AcquireResponse_Refusal{Refusal: &permitpb.Refusal{
			Reason: r.Reason, Status: uint32(r.Status), RetryAfterS: uint32(min(r.RetryAfter, math.MaxUint32)),
			RatelimitPolicy: r.RateLimitPolicy, Ratelimit: r.RateLimit, Group: r.Group,
		}}}, nil
	}
	return &permitpb.AcquireResponse{Result: &permitpb.AcquireResponse_Grant{Grant: &permitpb.Grant{
		Id: uint64(gr.ID), Group: gr.Group, LeaseMs: uint32(min(gr.Lease.Milliseconds(), math.MaxUint32)),
	}}}, nil
}

func (g *grpcService) Release(_ context.Context, in *permitpb.ReleaseRequest) (*permitpb.ReleaseResponse, error) {
	o, ok := outcomes[in.GetOutcome()]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "permit: outcome %v: want SUCCESS, DROPPED or IGNORED", in.GetOutcome())
	}
	lat := Unmeasured
	if in.LatencyMs != nil {
		var err error
		if lat, err = LatencyOf(in.GetLatencyMs()); err != nil {
			return nil, grpcError(err)
		}
	}
	res, err := g.svc.Release(ID(in.GetId()), o, lat)
	if err != nil {
		return nil, grpcError(err)
	}
	if res == Unknown {
		return nil, status.Errorf(codes.NotFound, "permit: no permit %s", ID(in.GetId()))
	}
	return &permitpb.ReleaseResponse{Result: results[res]}, nil
}

// grpcError maps an error of Acquire or Release to its gRPC status.
func grpcError(err error) error {
	switch {
	case errors.Is(err, ErrInvalid):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrNoGroup):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, ErrClosed):
		return status.Error(codes.Unavailable, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}
