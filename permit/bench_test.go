package permit_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/permit/permitclient"
	"github.com/sluicehq/sluice/permit/permitpb"
)

// benchGroups has room for every benchmark client: no refusals, no queue.
const benchGroups = `
[[group]]
name = "jobs"
  [group.concurrency]
  law = "fixed"
  limit = 10000
  [group.queue]
  max = 0
`

// benchService is a service on the real clock (the clocks of the tests
// take a mutex per read).
func benchService(b *testing.B) *permit.Service {
	b.Helper()
	cfg, err := configs.Parse("bench.toml", []byte("[upstream]\nurl = \"http://127.0.0.1:9\"\n"+benchGroups))
	if err != nil {
		b.Fatal(err)
	}
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := permit.New(permit.Params{Gate: g})
	if err != nil {
		b.Fatal(err)
	}
	return svc
}

// BenchmarkGrant is a grant and its release in process: what the service
// adds to the gate's own Enter and Done.
func BenchmarkGrant(b *testing.B) {
	svc := benchService(b)
	ctx := context.Background()
	r := permit.Request{Group: "jobs"}
	b.ReportAllocs()
	for b.Loop() {
		g, _, _ := svc.Acquire(ctx, r)
		svc.Release(g.ID, gate.Success, time.Millisecond)
	}
}

func BenchmarkGrantParallel(b *testing.B) {
	svc := benchService(b)
	r := permit.Request{Group: "jobs"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			g, _, _ := svc.Acquire(ctx, r)
			svc.Release(g.ID, gate.Success, time.Millisecond)
		}
	})
}

// variants are the ways a client takes and releases a permit: permitclient
// over gRPC (its Session streams) and over HTTP/JSON, and the unary gRPC
// calls as another language's client would make them.
var variants = []string{"grpc", "grpc-unary", "http"}

// roundTripper returns one client of s, with a connection of its own, as a
// function that takes a permit and releases it.
func roundTripper(b *testing.B, s *served, variant string) func(ctx context.Context) error {
	switch variant {
	case "grpc", "http":
		tr := permitclient.GRPC
		if variant == "http" {
			tr = permitclient.HTTP
		}
		c := s.client(b, tr)
		r := permitclient.Request{Group: "jobs"}
		return func(ctx context.Context) error {
			p, err := c.Acquire(ctx, r)
			if err != nil {
				return err
			}
			return p.DoneAfter(permitclient.Success, time.Millisecond)
		}
	}
	target, opts := s.addr, []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if !strings.HasPrefix(target, "unix://") {
		target = "passthrough:///" + target
		opts = append(opts, grpc.WithPerRPCCredentials(tokenCreds(testToken)))
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	c := permitpb.NewPermitsClient(conn)
	req := &permitpb.AcquireRequest{Group: "jobs"}
	lat := 1.0
	return func(ctx context.Context) error {
		a, err := c.Acquire(ctx, req)
		if err != nil {
			return err
		}
		_, err = c.Release(ctx, &permitpb.ReleaseRequest{Id: a.GetGrant().GetId(), Outcome: permitpb.Outcome_SUCCESS, LatencyMs: &lat})
		return err
	}
}

// tokenCreds sends the bearer token with every call.
type tokenCreds string

func (t tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}
func (tokenCreds) RequireTransportSecurity() bool { return false }

// BenchmarkRoundTrip is one client taking a permit and releasing it, one
// after the other, over a real socket: two calls each. It reports the
// round trip's p50 and p99 (µs).
func BenchmarkRoundTrip(b *testing.B) {
	for _, n := range networks {
		for _, v := range variants {
			b.Run(n+"/"+v, func(b *testing.B) {
				rt := roundTripper(b, serve(b, benchService(b), n), v)
				ctx := context.Background()
				lats := make([]time.Duration, 0, 1<<16)
				for b.Loop() {
					t := time.Now()
					if err := rt(ctx); err != nil {
						b.Fatal(err)
					}
					lats = append(lats, time.Since(t))
				}
				reportQuantiles(b, lats)
			})
		}
	}
}

// BenchmarkRoundTrip64 is 64 clients, each with a connection of its own,
// taking and releasing permits as fast as they can. It reports permits/s.
func BenchmarkRoundTrip64(b *testing.B) {
	const clients = 64
	for _, n := range networks {
		for _, v := range variants {
			b.Run(n+"/"+v, func(b *testing.B) {
				s := serve(b, benchService(b), n)
				rts := make([]func(context.Context) error, clients)
				for i := range rts {
					rts[i] = roundTripper(b, s, v)
				}
				var next atomic.Int32
				b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					rt := rts[int(next.Add(1)-1)%clients]
					ctx := context.Background()
					for pb.Next() {
						if err := rt(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "permits/s")
			})
		}
	}
}

// reportQuantiles reports the p50 and p99 of lats in microseconds.
func reportQuantiles(b *testing.B, lats []time.Duration) {
	if len(lats) == 0 {
		return
	}
	slices.Sort(lats)
	q := func(p float64) float64 { return float64(lats[int(p*float64(len(lats)-1))]) / float64(time.Microsecond) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}
