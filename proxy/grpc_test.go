package proxy

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// These tests use grpc-go on both ends: its health service as the upstream (no
// generated code of our own needed) and its client through the proxy over h2c.

// startGRPCUpstream serves the health service and, for methods under /codes/N,
// fails with status N.
func startGRPCUpstream(t *testing.T) (*health.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		m, _ := grpc.MethodFromServerStream(stream)
		n, err := strconv.Atoi(strings.TrimPrefix(m, "/codes/"))
		if err != nil {
			return status.Error(codes.Unimplemented, m)
		}
		if n == 0 {
			return stream.SendMsg(&healthpb.HealthCheckResponse{})
		}
		return status.Error(codes.Code(n), "as asked")
	}))
	hs := health.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return hs, "http://" + ln.Addr().String()
}

func dialGRPC(t *testing.T, base string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(strings.TrimPrefix(base, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func grpcCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

func TestGRPCPassThrough(t *testing.T) {
	hs, up := startGRPCUpstream(t)
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	adm := newFakeAdmitter(t)
	_, base := startProxy(t, Params{Upstream: up, Admitter: adm}, ServerParams{})
	client := healthpb.NewHealthClient(dialGRPC(t, base))

	resp, err := client.Check(grpcCtx(t), &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check: %v, %v", resp, err)
	}
	if f := adm.outcome(t); f.outcome != OutcomeSuccess {
		t.Errorf("outcome %v, want success", f.outcome)
	}

	_, err = client.Check(grpcCtx(t), &healthpb.HealthCheckRequest{Service: "nope"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("Check of an unknown service: %v, want NotFound", err)
	}
	if f := adm.outcome(t); f.outcome != OutcomeIgnored {
		t.Errorf("NotFound: outcome %v, want ignored", f.outcome)
	}
}

// TestGRPCServerStreaming watches a health status through the proxy: each
// update must arrive while the stream stays open, so nothing may sit in a buffer.
func TestGRPCServerStreaming(t *testing.T) {
	hs, up := startGRPCUpstream(t)
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	adm := newFakeAdmitter(t)
	_, base := startProxy(t, Params{Upstream: up, Admitter: adm}, ServerParams{})
	client := healthpb.NewHealthClient(dialGRPC(t, base))
	ctx, cancel := context.WithCancel(grpcCtx(t))
	stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_SERVING} {
		m, err := stream.Recv()
		if err != nil || m.Status != want {
			t.Fatalf("Recv: %v, %v; want %v", m, err, want)
		}
		if want == healthpb.HealthCheckResponse_SERVING {
			hs.SetServingStatus("svc", healthpb.HealthCheckResponse_NOT_SERVING)
		} else {
			hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
		}
	}
	cancel()
	if f := adm.outcome(t); f.outcome != OutcomeIgnored {
		t.Errorf("a stream the client cancelled: outcome %v, want ignored", f.outcome)
	}
}

func TestGRPCStatusOutcomes(t *testing.T) {
	_, up := startGRPCUpstream(t)
	adm := newFakeAdmitter(t)
	_, base := startProxy(t, Params{Upstream: up, Admitter: adm, DisableBreaker: true}, ServerParams{})
	cc := dialGRPC(t, base)
	for code := codes.OK; code <= codes.Unauthenticated; code++ {
		err := cc.Invoke(grpcCtx(t), "/codes/"+strconv.Itoa(int(code)), &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
		if status.Code(err) != code {
			t.Fatalf("code %v came back as %v", code, err)
		}
		if f := adm.outcome(t); f.outcome != grpcOutcome(int(code)) {
			t.Errorf("%v: outcome %v, want %v", code, f.outcome, grpcOutcome(int(code)))
		}
	}
}

func TestGRPCShed(t *testing.T) {
	_, up := startGRPCUpstream(t)
	adm := newFakeAdmitter(t)
	_, base := startProxy(t, Params{Upstream: up, Admitter: adm}, ServerParams{})
	client := healthpb.NewHealthClient(dialGRPC(t, base))
	for _, tc := range []struct {
		rej  Rejection
		code codes.Code
	}{
		{Rejection{Kind: RejectOverload, Reason: ReasonQueueFull, RetryAfter: time.Second}, codes.Unavailable},
		{Rejection{Kind: RejectOverload, Reason: ReasonCPU}, codes.Unavailable},
		{Rejection{Kind: RejectRate, Reason: ReasonRate, RetryAfter: 2 * time.Second, Quota: Quota{Limit: 10, Window: time.Second}}, codes.ResourceExhausted},
	} {
		adm.mu.Lock()
		adm.reject = &tc.rej
		adm.mu.Unlock()
		var trailer metadata.MD
		_, err := client.Check(grpcCtx(t), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
		if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.rej.Reason.String()) {
			t.Errorf("%v: got %v, want %v", tc.rej.Reason, err, tc.code)
		}
		if got := trailer.Get("sluice-reason"); len(got) != 1 || got[0] != tc.rej.Reason.String() {
			t.Errorf("%v: sluice-reason %q", tc.rej.Reason, got)
		}
		if ms, _ := strconv.Atoi(strings.Join(trailer.Get("grpc-retry-pushback-ms"), "")); ms < 1000 {
			t.Errorf("%v: grpc-retry-pushback-ms %q", tc.rej.Reason, trailer.Get("grpc-retry-pushback-ms"))
		}
	}
	adm.noMoreFinishes(t)
}

func TestGRPCUpstreamDown(t *testing.T) {
	adm := newFakeAdmitter(t)
	_, base := startProxy(t, Params{Upstream: "http://" + closedAddr(t), Admitter: adm,
		Breaker: BreakerParams{ConsecutiveFailures: 2, Cooldown: time.Hour}}, ServerParams{})
	client := healthpb.NewHealthClient(dialGRPC(t, base))
	for i, want := range []string{"connect", "connect", "circuit_open"} {
		var trailer metadata.MD
		_, err := client.Check(grpcCtx(t), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("call %d: %v, want Unavailable", i, err)
		}
		got := append(trailer.Get("sluice-error"), trailer.Get("sluice-reason")...)
		if len(got) != 1 || got[0] != want {
			t.Errorf("call %d: sluice-error/reason %q, want %q", i, got, want)
		}
	}
	for i := 0; i < 2; i++ {
		if f := adm.outcome(t); f.outcome != OutcomeDropped {
			t.Errorf("outcome %v, want dropped", f.outcome)
		}
	}
	adm.noMoreFinishes(t)
}
