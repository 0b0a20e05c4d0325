package grpcclient

import (
	"context"
	"errors"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/client"
)

// answer is what the health server says to one call: a status code and
// trailers.
type answer struct {
	code    codes.Code
	trailer []string
}

// health is a real gRPC server whose answers are scripted, and which
// remembers the metadata of each call.
type health struct {
	healthpb.UnimplementedHealthServer
	mu      sync.Mutex
	answers []answer
	calls   []metadata.MD
}

func (h *health) next(ctx context.Context) answer {
	md, _ := metadata.FromIncomingContext(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.answers[min(len(h.calls), len(h.answers)-1)]
	h.calls = append(h.calls, md)
	return a
}

func (h *health) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

func (h *health) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	a := h.next(ctx)
	if len(a.trailer) > 0 {
		grpc.SetTrailer(ctx, metadata.Pairs(a.trailer...))
	}
	if a.code != codes.OK {
		return nil, status.Error(a.code, "scripted")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (h *health) Watch(_ *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	a := h.next(s.Context())
	if a.code != codes.OK {
		return status.Error(a.code, "scripted")
	}
	return s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
}

// fakeClock moves when slept on, and remembers the waits.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.sleeps = append(c.sleeps, d)
	return ctx.Err()
}

func setup(t *testing.T, cfg client.Config, o Options, answers ...answer) (*health, healthpb.HealthClient, *client.Client, *fakeClock, string) {
	t.Helper()
	h := &health{answers: answers}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, h)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	cfg.Clock = clock
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target := lis.Addr().String()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(Unary(c, o)), grpc.WithStreamInterceptor(Stream(c)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return h, healthpb.NewHealthClient(conn), c, clock, target
}

func always(string) bool { return true }

func noDrop() float64 { return 0.75 }

// A refusal with a pushback is retried after it, when the method is
// idempotent; the tags reach the server as metadata.
func TestUnaryRetriesAfterPushback(t *testing.T) {
	h, hc, c, clock, target := setup(t, client.Config{Rand: noDrop, Tags: client.Tags{Tenant: "acme", Priority: client.PrioritySheddable}},
		Options{Idempotent: always},
		answer{codes.ResourceExhausted, []string{"sluice-reason", "rate", "grpc-retry-pushback-ms", "1500"}},
		answer{code: codes.OK})
	if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if h.count() != 2 || len(clock.sleeps) != 1 || clock.sleeps[0] < 1500*time.Millisecond {
		t.Errorf("%d calls, waits %v, want 2 calls and a wait ≥ 1.5s", h.count(), clock.sleeps)
	}
	if md := h.calls[0]; md.Get("x-tenant")[0] != "acme" || md.Get("x-priority")[0] != "sheddable" {
		t.Errorf("metadata %v", md)
	}
	if s := c.Stats(target); s.Requests != 2 || s.Accepts != 1 || s.BudgetRetries != 1 {
		t.Errorf("stats %+v", s)
	}
}

// Not idempotent: no retry; a negative pushback: no retry either.
func TestUnaryNoRetry(t *testing.T) {
	refused := answer{codes.Unavailable, []string{"sluice-reason", "concurrency", "grpc-retry-pushback-ms", "1000"}}
	h, hc, _, _, _ := setup(t, client.Config{Rand: noDrop}, Options{}, refused, answer{code: codes.OK})
	if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable || h.count() != 1 {
		t.Errorf("not idempotent: %v after %d calls", err, h.count())
	}
	pushedBack := answer{codes.Unavailable, []string{"grpc-retry-pushback-ms", "-1"}}
	h, hc, _, _, _ = setup(t, client.Config{Rand: noDrop}, Options{Idempotent: always}, pushedBack, answer{code: codes.OK})
	if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable || h.count() != 1 {
		t.Errorf("negative pushback: %v after %d calls", err, h.count())
	}
}

// An application error is an answer: accepted, never retried.
func TestUnaryApplicationErrorAccepted(t *testing.T) {
	h, hc, c, _, target := setup(t, client.Config{Rand: noDrop}, Options{Idempotent: always}, answer{code: codes.NotFound})
	if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.NotFound || h.count() != 1 {
		t.Errorf("%v after %d calls", err, h.count())
	}
	if s := c.Stats(target); s.Requests != 1 || s.Accepts != 1 {
		t.Errorf("stats %+v", s)
	}
}

// A dropped call fails UNAVAILABLE, wraps ErrDropped, and sends nothing.
func TestUnaryDrop(t *testing.T) {
	h, hc, _, _, _ := setup(t, client.Config{Rand: func() float64 { return 0 }, MaxRetries: -1}, Options{},
		answer{code: codes.Unavailable})
	_, _ = hc.Check(context.Background(), &healthpb.HealthCheckRequest{}) // refused: p = 1/2
	_, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unavailable || !errors.Is(err, client.ErrDropped) || h.count() != 1 {
		t.Errorf("got %v (dropped: %v) after %d calls, want a local drop after 1", err, errors.Is(err, client.ErrDropped), h.count())
	}
}

// A stream is counted by its first answer, and dropped when it opens.
func TestStream(t *testing.T) {
	h, hc, c, _, target := setup(t, client.Config{Rand: func() float64 { return 0 }, K: math.Inf(1)}, Options{},
		answer{code: codes.OK}, answer{code: codes.Unavailable})
	for range 2 {
		s, err := hc.Watch(context.Background(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := s.Recv(); err != nil {
				break
			}
		}
	}
	if s := c.Stats(target); h.count() != 2 || s.Requests != 2 || s.Accepts != 1 {
		t.Errorf("%d streams, stats %+v, want 2 streams, 1 accepted", h.count(), s)
	}
	h2, hc2, _, _, _ := setup(t, client.Config{Rand: func() float64 { return 0 }}, Options{}, answer{code: codes.Unavailable})
	for range 2 {
		s, err := hc2.Watch(context.Background(), &healthpb.HealthCheckRequest{})
		if err == nil {
			for {
				if _, err = s.Recv(); err != nil {
					break
				}
			}
		}
		if errors.Is(err, client.ErrDropped) {
			if status.Code(err) != codes.Unavailable || h2.count() != 1 {
				t.Errorf("dropped stream: %v after %d streams", err, h2.count())
			}
			return
		}
	}
	t.Error("no stream was dropped after a refusal with draws of 0")
}

func TestResultOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		md   metadata.MD
		want client.Result
	}{
		{nil, nil, client.Result{}},
		{status.Error(codes.NotFound, ""), nil, client.Result{}},
		{status.Error(codes.DeadlineExceeded, ""), nil, client.Result{Failed: true}},
		{status.Error(codes.ResourceExhausted, ""), metadata.Pairs("sluice-reason", "fair_share", "grpc-retry-pushback-ms", "2000"),
			client.Result{Refused: true, Quota: true, Reason: "fair_share", RetryAfter: 2 * time.Second}},
		{status.Error(codes.Unavailable, ""), metadata.Pairs("sluice-reason", "rate", "retry-after", "3"),
			client.Result{Refused: true, Quota: true, Reason: "rate", RetryAfter: 3 * time.Second}},
		{status.Error(codes.Unavailable, ""), metadata.Pairs("grpc-retry-pushback-ms", "soon"), client.Result{Refused: true, NoRetry: true}},
	} {
		if got := ResultOf(tc.err, tc.md); got != tc.want {
			t.Errorf("ResultOf(%v, %v) = %+v, want %+v", tc.err, tc.md, got, tc.want)
		}
	}
}
