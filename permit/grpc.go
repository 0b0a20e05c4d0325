package permit

import (
	"context"
	"errors"
	"io"
	"math"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/internal/listen"
	"github.com/sluicehq/sluice/permit/permitpb"
)

// grpcService is the gRPC API of a Service (permitpb.PermitsServer).
type grpcService struct {
	permitpb.UnimplementedPermitsServer
	svc   *Service
	drain *drain
	// streamCheck returns the check of a Session's calls: its token (the
	// stream's metadata) against the token in force at each call.
	streamCheck func(ctx context.Context) func() bool
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

// sessionOf returns the Session of a call's metadata.
func sessionOf(ctx context.Context) (Session, error) {
	return sessionOfValues(metadata.ValueFromIncomingContext(ctx, permitpb.SessionKey))
}

func (g *grpcService) Acquire(ctx context.Context, in *permitpb.AcquireRequest) (*permitpb.AcquireResponse, error) {
	sess, err := sessionOf(ctx)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &permitpb.AcquireResponse{}
	if err := g.acquire(ctx, sess, in, out, &permitpb.AcquireResponse_Grant{Grant: &permitpb.Grant{}}); err != nil {
		return nil, err
	}
	return out, nil
}

// acquire answers in, of session sess, into out: a grant in grant (its
// Grant filled), or a refusal, allocated (refusals are the rare answer). A
// Session reuses out and grant from one call to the next.
func (g *grpcService) acquire(ctx context.Context, sess Session, in *permitpb.AcquireRequest, out *permitpb.AcquireResponse, grant *permitpb.AcquireResponse_Grant) error {
	p, err := ParsePriority(in.GetPriority())
	if err != nil {
		return grpcError(err)
	}
	req := Request{Group: in.GetGroup(), Key: in.GetKey(), Priority: p, Cost: in.GetCost(),
		Wait: time.Duration(in.GetWaitMs()) * time.Millisecond, Session: sess}
	gr, rej, err := g.svc.Acquire(ctx, req)
	if err != nil {
		return grpcError(err)
	}
	if rej.Rejected() {
		r := refusalOf(rej, nil)
		out.Result = &permitpb.AcquireResponse_Refusal{Refusal: &permitpb.Refusal{
			Reason: r.Reason, Status: uint32(r.Status), RetryAfterS: uint32(min(r.RetryAfter, math.MaxUint32)),
			RatelimitPolicy: r.RateLimitPolicy, Ratelimit: r.RateLimit, Group: r.Group,
		}}
		return nil
	}
	m := grant.Grant
	m.Reset()
	m.Id, m.Group, m.LeaseMs = uint64(gr.ID), gr.Group, uint32(min(gr.Lease.Milliseconds(), math.MaxUint32))
	m.Shadowed = shadowedName(gr.Shadowed)
	out.Result = grant
	return nil
}

func (g *grpcService) Release(ctx context.Context, in *permitpb.ReleaseRequest) (*permitpb.ReleaseResponse, error) {
	sess, err := sessionOf(ctx)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &permitpb.ReleaseResponse{}
	if err := g.release(sess, in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// release answers in, of session sess, into out.
func (g *grpcService) release(sess Session, in *permitpb.ReleaseRequest, out *permitpb.ReleaseResponse) error {
	o, ok := outcomes[in.GetOutcome()]
	if !ok {
		return status.Errorf(codes.InvalidArgument, "permit: outcome %v: want SUCCESS, DROPPED or IGNORED", in.GetOutcome())
	}
	lat := Unmeasured
	if in.LatencyMs != nil {
		var err error
		if lat, err = LatencyOf(in.GetLatencyMs()); err != nil {
			return grpcError(err)
		}
	}
	cost := NoCost
	if in.Cost != nil {
		if cost = in.GetCost(); cost < 0 {
			return status.Errorf(codes.InvalidArgument, "permit: cost %d: want 0 or more", cost)
		}
	}
	res, err := g.svc.ReleaseCostIn(sess, ID(in.GetId()), o, lat, cost)
	if err != nil {
		return grpcError(err)
	}
	if res == Unknown {
		return status.Errorf(codes.NotFound, "permit: no permit %s", ID(in.GetId()))
	}
	out.Reset()
	out.Result = results[res]
	return nil
}

// Session serves Acquire and Release calls on one stream, one after the
// other, as the unary calls serve them. Its calls run on a goroutine of
// their own, so that a shutdown ends an idle session at once and a busy one
// after its call (which may wait in a queue); the token of a TCP listener is
// checked on every call, so that a new token shuts out old sessions.
func (g *grpcService) Session(st grpc.BidiStreamingServer[permitpb.SessionRequest, permitpb.SessionResponse]) error {
	var (
		mu    sync.Mutex // held while a call is served; ended is set under it
		ended bool
		done  = make(chan error, 1)
	)
	go func() { done <- g.session(st, &mu, &ended) }()
	select {
	case err := <-done:
		return err
	case <-g.drain.stop:
		mu.Lock()
		ended = true // the stream is no longer the goroutine's to use
		mu.Unlock()
		return errDraining
	}
}

func (g *grpcService) session(st grpc.BidiStreamingServer[permitpb.SessionRequest, permitpb.SessionResponse], mu *sync.Mutex, ended *bool) error {
	ctx := st.Context()
	authorized := g.streamCheck(ctx)
	sess, sessErr := sessionOf(ctx) // the stream's, for each of its calls
	// The stream's messages are reused from one call to the next: grpc has
	// encoded an answer when Send returns (nothing reads it later: this
	// server has no stats handler, and sluice never sets
	// grpc.EnableTracing), and RecvMsg replaces what the request held.
	var (
		in      permitpb.SessionRequest
		answer  permitpb.SessionResponse
		acquire = &permitpb.SessionResponse_Acquire{Acquire: &permitpb.AcquireResponse{}}
		grant   = &permitpb.AcquireResponse_Grant{Grant: &permitpb.Grant{}}
		release = &permitpb.SessionResponse_Release{Release: &permitpb.ReleaseResponse{}}
	)
	for {
		err := st.RecvMsg(&in)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		mu.Lock()
		if *ended {
			mu.Unlock()
			return errDraining
		}
		answer.Reset()
		call := in.GetCall()
		switch {
		case !authorized():
			call, err = nil, listen.ErrUnauthenticated
		case sessErr != nil:
			call, err = nil, grpcError(sessErr)
		}
		switch c := call.(type) {
		case nil:
			if err == nil {
				err = status.Error(codes.InvalidArgument, "permit: a session request is an acquire or a release")
			}
		case *permitpb.SessionRequest_Acquire:
			acquire.Acquire.Reset()
			if err = g.acquire(ctx, sess, c.Acquire, acquire.Acquire, grant); err == nil {
				answer.Answer = acquire
			}
		case *permitpb.SessionRequest_Release:
			if err = g.release(sess, c.Release, release.Release); err == nil {
				answer.Answer = release
			}
		}
		if err != nil {
			s := status.Convert(err)
			answer.Answer = &permitpb.SessionResponse_Error{Error: &permitpb.Error{Code: uint32(s.Code()), Message: s.Message()}}
		}
		err = st.Send(&answer)
		mu.Unlock()
		if err != nil {
			return err
		}
	}
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
