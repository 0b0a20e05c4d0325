package permit_test

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/permit/permitclient"
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
	g, err := gate.New(gate.Params{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := permit.New(permit.Params{Gate: fixedCost{g}})
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

// BenchmarkRoundTrip is one client's Acquire then Done, one after the
// other, over a real socket: each iteration is two calls. It reports the
// round trip's p50 and p99 (µs).
func BenchmarkRoundTrip(b *testing.B) {
	for _, n := range networks {
		for _, tr := range transports {
			b.Run(n+"/"+tr.name, func(b *testing.B) {
				s := serve(b, benchService(b), n)
				c := s.client(b, tr.tr)
				ctx := context.Background()
				r := permitclient.Request{Group: "jobs"}
				lats := make([]time.Duration, 0, 1<<16)
				for b.Loop() {
					t := time.Now()
					p, err := c.Acquire(ctx, r)
					if err != nil {
						b.Fatal(err)
					}
					if err := p.DoneAfter(permitclient.Success, time.Millisecond); err != nil {
						b.Fatal(err)
					}
					lats = append(lats, time.Since(t))
				}
				reportQuantiles(b, lats)
			})
		}
	}
}

// BenchmarkRoundTrip64 is 64 clients, each with connections of its own,
// taking and releasing permits as fast as they can. It reports permits/s.
func BenchmarkRoundTrip64(b *testing.B) {
	const clients = 64
	for _, n := range networks {
		for _, tr := range transports {
			b.Run(n+"/"+tr.name, func(b *testing.B) {
				s := serve(b, benchService(b), n)
				cs := make([]*permitclient.Client, clients)
				for i := range cs {
					cs[i] = s.client(b, tr.tr)
				}
				var next atomic.Int32
				b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					c := cs[int(next.Add(1)-1)%clients]
					ctx := context.Background()
					r := permitclient.Request{Group: "jobs"}
					for pb.Next() {
						p, err := c.Acquire(ctx, r)
						if err != nil {
							b.Error(err)
							return
						}
						if err := p.DoneAfter(permitclient.Success, time.Millisecond); err != nil {
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
