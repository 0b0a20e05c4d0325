package rls_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/proxy"
	"github.com/sluicehq/sluice/rls"
)

// benchService has one descriptor mapped onto a per-client token bucket
// that never runs dry, on the real clock.
func benchService(b *testing.B) *rls.Service {
	b.Helper()
	svc, err := rls.New(rls.Params{Gate: benchGate(b), Mapping: rls.Mapping{Domains: []rls.Domain{{Name: "edge",
		Descriptors: []rls.Descriptor{{Entries: []rls.Entry{{Key: "remote_address"}}, Group: "per-client"}}}}}})
	if err != nil {
		b.Fatal(err)
	}
	return svc
}

// benchGate is a gate of one group, a per-client token bucket that never
// runs dry, on the real clock.
func benchGate(b *testing.B) *gate.Gate {
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
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
	if err != nil {
		b.Fatal(err)
	}
	return g
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
			reportQuantiles(b, lats)
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

// benchProxy serves benchGate's group through sluice's HTTP proxy on
// loopback TCP, in front of an upstream that answers 204 at once: the same
// rate decision as a ShouldRateLimit call (the group's key is the client's
// address), and the whole of a proxied request besides. It returns the URL
// to ask.
func benchProxy(b *testing.B) string {
	b.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(up.Close)
	px, err := proxy.New(proxy.Params{Upstream: up.URL, Gate: benchGate(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { px.Close() })
	srv, err := proxy.NewServer(proxy.ServerParams{Handler: px})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

// get asks url once with c and reads the answer whole.
func get(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusNoContent {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return err
}

// BenchmarkProxyRateLimit is BenchmarkShouldRateLimitGRPC's decision made
// by the HTTP proxy for the request it forwards, one caller on one
// keep-alive connection: p50 and p99 (µs).
func BenchmarkProxyRateLimit(b *testing.B) {
	url := benchProxy(b)
	c := &http.Client{Transport: &http.Transport{}}
	lats := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		t := time.Now()
		if err := get(c, url); err != nil {
			b.Fatal(err)
		}
		lats = append(lats, time.Since(t))
	}
	reportQuantiles(b, lats)
}

// BenchmarkProxyRateLimit64 is 64 concurrent callers through the HTTP
// proxy, each on a keep-alive connection: requests/s.
func BenchmarkProxyRateLimit64(b *testing.B) {
	url := benchProxy(b)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := get(c, url); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "requests/s")
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
