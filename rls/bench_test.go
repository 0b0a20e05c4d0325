package rls_test

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/rls"
)

// benchService has one descriptor mapped onto a per-client token bucket
// that never runs dry, on the real clock.
func benchService(b *testing.B) *rls.Service {
	b.Helper()
	cfg, err := configs.Parse("bench.toml", []byte(`
[upstream]
url = "http://127.0.0.1:9"
[[group]]
name = "per-client"
key = "ip"
  [group.concurrency]
  law = "fixed"
  limit = 10000
  [group.rate]
  algorithm = "token_bucket"
  rate = 1e9
  burst = 1000000000
`))
	if err != nil {
		b.Fatal(err)
	}
	g, err := gate.New(gate.Params{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := rls.New(rls.Params{Gate: rateOnly{g}, Mapping: rls.Mapping{Domains: []rls.Domain{{Name: "edge",
		Descriptors: []rls.Descriptor{{Entries: []rls.Entry{{Key: "remote_address"}}, Group: "per-client"}}}}}})
	if err != nil {
		b.Fatal(err)
	}
	return svc
}

var benchRequest = request("edge", 1, desc("remote_address", "198.51.100.7"))

// BenchmarkShouldRateLimit is one descriptor's decision in process.
func BenchmarkShouldRateLimit(b *testing.B) {
	svc := benchService(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := svc.ShouldRateLimit(ctx, benchRequest); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShouldRateLimitGRPC is one caller's calls over a unix socket,
// one after the other: p50 and p99 (µs).
func BenchmarkShouldRateLimitGRPC(b *testing.B) {
	for _, n := range []string{"unix", "tcp"} {
		b.Run(n, func(b *testing.B) {
			c, ctx, _ := serve(b, benchService(b), n)
			lats := make([]time.Duration, 0, 1<<16)
			for b.Loop() {
				t := time.Now()
				resp, err := c.ShouldRateLimit(ctx, benchRequest)
				if err != nil || resp.GetOverallCode() != rlsv3.RateLimitResponse_OK {
					b.Fatal(resp, err)
				}
				lats = append(lats, time.Since(t))
			}
			slices.Sort(lats)
			q := func(p float64) float64 { return float64(lats[int(p*float64(len(lats)-1))]) / float64(time.Microsecond) }
			b.ReportMetric(q(0.5), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
		})
	}
}

// BenchmarkShouldRateLimitGRPC64 is 64 concurrent callers on one
// connection, as Envoy multiplexes its calls: calls/s.
func BenchmarkShouldRateLimitGRPC64(b *testing.B) {
	for _, n := range []string{"unix", "tcp"} {
		b.Run(n, func(b *testing.B) {
			c, ctx, _ := serve(b, benchService(b), n)
			b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.ShouldRateLimit(ctx, benchRequest); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
}
