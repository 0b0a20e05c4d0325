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

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/proxy/breaker"
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
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: up}, ServerParams{})
	client := healthpb.NewHealthClient(dialGRPC(t, base))

	resp, err := client.Check(grpcCtx(t), &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check: %v, %v", resp, err)
	}
	if f := adm.outcome(t); f.outcome != gate.Success {
		t.Errorf("outcome %v, want success", f.outcome)
	}

	_, err = client.Check(grpcCtx(t), &healthpb.HealthCheckRequest{Service: "nope"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("Check of an unknown service: %v, want NotFound", err)
	}
	if f := adm.outcome(t); f.outcome != gate.Ignored {
		t.Errorf("NotFound: outcome %v, want ignored", f.outcome)
	}
}

// TestGRPCServerStreaming watches a health status through the proxy: each
// update must arrive while the stream stays open, so nothing may sit in a buffer.
func TestGRPCServerStreaming(t *testing.T) {
	hs, up := startGRPCUpstream(t)
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: up}, ServerParams{})
	client := healthpb.NewHealthClient(dialGRPC(t, base))
	ctx, cancel := context.WithCancel(grpcCtx(t))
	start := time.Now()
	stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	var first time.Duration // until the first message, which follows the headers
	for i, want := range []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_SERVING} {
		m, err := stream.Recv()
		if err != nil || m.Status != want {
			t.Fatalf("Recv: %v, %v; want %v", m, err, want)
		}
		if i == 0 {
			first = time.Since(start)
		}
		if want == healthpb.HealthCheckResponse_SERVING {
			hs.SetServingStatus("svc", healthpb.HealthCheckResponse_NOT_SERVING)
		} else {
			hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
		}
	}
	// A stream: its outcome came once it outlived its response headers
	// (grpcStreamAfter), as of them, and its end reports nothing more.
	if f := adm.outcome(t); f.outcome != gate.Success || f.latency > first {
		t.Errorf("a stream: outcome %v after %v, want success at its headers (before its first message, at %v)", f.outcome, f.latency, first)
	}
	cancel()
	adm.noMoreFinishes(t)
}

func TestGRPCStatusOutcomes(t *testing.T) {
	_, up := startGRPCUpstream(t)
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: up, DisableBreaker: true}, ServerParams{})
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

// shedGroups: one Watch stream at a time, and Check calls at one per 100 s
// per client, so the second call in a row is over its quota.
const shedGroups = `
[[group]]
name = "watch"
match = { path = "/grpc.health.v1.Health/Watch" }
  [group.streams]
  max = 1
[[group]]
name = "check"
match = { path = "/grpc.health.v1.Health/Check" }
  [group.rate]
  rate = 0.01
`

// TestGRPCShed runs gRPC calls into a real gate's limits: overload (no stream slot)
// comes back as UNAVAILABLE, a rate limit as RESOURCE_EXHAUSTED, each with the
// gate's reason, RateLimit fields for the rate, and a retry pushback.
func TestGRPCShed(t *testing.T) {
	hs, up := startGRPCUpstream(t)
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	g := testGate(t, shedGroups)
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: up, Gate: g}, ServerParams{})
	client := healthpb.NewHealthClient(dialGRPC(t, base))

	// The first stream takes the watch group's only stream slot and keeps
	// it; its outcome comes once it outlives its headers.
	ctx, cancel := context.WithCancel(grpcCtx(t))
	defer cancel()
	first, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := first.Recv(); err != nil || m.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first Watch: %v, %v", m, err)
	}
	if f := adm.outcome(t); f.outcome != gate.Success {
		t.Errorf("first Watch: outcome %v", f.outcome)
	}
	second, err := client.Watch(grpcCtx(t), &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	// A request until it outlives its headers: its first message comes,
	// then the refusal, in its trailers.
	if _, err := second.Recv(); err != nil {
		t.Fatalf("second Watch's first message: %v", err)
	}
	_, err = second.Recv()
	checkShed(t, "second Watch", err, second.Trailer(), codes.Unavailable, "streams")

	if _, err := client.Check(grpcCtx(t), &healthpb.HealthCheckRequest{Service: "svc"}); err != nil {
		t.Fatalf("first Check: %v", err)
	}
	if f := adm.outcome(t); f.outcome != gate.Success {
		t.Errorf("first Check: outcome %v", f.outcome)
	}
	var trailer metadata.MD
	_, err = client.Check(grpcCtx(t), &healthpb.HealthCheckRequest{Service: "svc"}, grpc.Trailer(&trailer))
	checkShed(t, "second Check", err, trailer, codes.ResourceExhausted, "rate")
	if got := trailer.Get("ratelimit-policy"); len(got) != 1 || !strings.HasPrefix(got[0], `"check";q=`) {
		t.Errorf("second Check: ratelimit-policy %q", got)
	}
	if st := groupStatus(t, g, "watch"); st.Rejected[adaptive.RejectStreams] != 1 || st.InFlight != 0 || st.Streams.Open != 1 {
		t.Errorf("watch group: %d streams rejections, %d in flight, %d streams; want 1, 0, 1", st.Rejected[adaptive.RejectStreams], st.InFlight, st.Streams.Open)
	}
	if st := groupStatus(t, g, "check"); st.Rejected[adaptive.RejectRate] != 1 || st.Completed[gate.Success] != 1 {
		t.Errorf("check group: %d rate rejections, %d successes; want 1 and 1", st.Rejected[adaptive.RejectRate], st.Completed[gate.Success])
	}
	cancel()
	adm.noMoreFinishes(t)
}

// checkShed checks a call the gate shed: its code, its Sluice-Reason and a
// retry pushback of at least a second.
func checkShed(t *testing.T, what string, err error, trailer metadata.MD, code codes.Code, reason string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), reason) {
		t.Errorf("%s: got %v, want %v (%s)", what, err, code, reason)
	}
	if got := trailer.Get("sluice-reason"); len(got) != 1 || got[0] != reason {
		t.Errorf("%s: sluice-reason %q, want %q", what, got, reason)
	}
	if ms, _ := strconv.Atoi(strings.Join(trailer.Get("grpc-retry-pushback-ms"), "")); ms < 1000 {
		t.Errorf("%s: grpc-retry-pushback-ms %q", what, trailer.Get("grpc-retry-pushback-ms"))
	}
}

func TestGRPCUpstreamDown(t *testing.T) {
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: "http://" + closedAddr(t),
		Breaker: breaker.Params{ConsecutiveFailures: 2, Cooldown: time.Hour}}, ServerParams{})
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
		if f := adm.outcome(t); f.outcome != gate.Dropped {
			t.Errorf("outcome %v, want dropped", f.outcome)
		}
	}
	adm.noMoreFinishes(t)
}

// TestGRPCAbandonedCallFinishes: a unary gRPC call whose caller cancels it
// (its stream reset) while the upstream works on it is not reset upstream:
// the handler's context lives on, its answer is read and dropped, and the
// call finishes as its status says, holding its slot until then.
func TestGRPCAbandonedCallFinishes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	upstreamCtx := make(chan error, 1)
	s := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		arrived <- struct{}{}
		<-release // the work, which does not watch its context
		upstreamCtx <- stream.Context().Err()
		return stream.SendMsg(&healthpb.HealthCheckResponse{})
	}))
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	adm := newFinishes(t)
	px, base := startWatched(t, adm, Params{Upstream: "http://" + ln.Addr().String()}, ServerParams{})
	cc := dialGRPC(t, base)

	ctx, cancel := context.WithCancel(grpcCtx(t))
	errc := make(chan error, 1)
	go func() {
		errc <- cc.Invoke(ctx, "/busy/work", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
	}()
	recv(t, arrived, "the call at the upstream")
	cancel()
	if err := recv(t, errc, "the caller's error"); status.Code(err) != codes.Canceled {
		t.Fatalf("the cancelled call: %v, want Canceled", err)
	}
	waitFor(t, "the proxy seeing the caller gone", func() bool { return px.Stats().AbandonedInFlight == 1 })
	close(release)
	if err := recv(t, upstreamCtx, "the upstream's answer"); err != nil {
		t.Errorf("the upstream's call was cancelled (%v): its stream was reset", err)
	}
	if f := adm.outcome(t); f.outcome != gate.Success {
		t.Errorf("outcome %v, want success (the upstream answered OK)", f.outcome)
	}
	if st := px.Stats(); st.Abandoned != 1 || st.AbandonedInFlight != 0 {
		t.Errorf("%d abandoned, %d in flight; want 1, 0", st.Abandoned, st.AbandonedInFlight)
	}
}
