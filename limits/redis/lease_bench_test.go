package redis

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limits"
)

// BenchmarkLeased: the cost of a decision on a lease (the local path of
// leased mode) beside a local limits.TokenBucket in the same run. The lease
// is a node's only one, on a quota too large to run out (rate 1e9/s); the
// bucket decides as in limits' BenchmarkTokenBucketVsXRate (rate 1e6/s, an
// instant 1 µs later each request). Run with:
//
//	go test -run '^$' -bench Leased -benchmem ./limits/redis
func BenchmarkLeased(b *testing.B) {
	srv := startServer(b)
	l := leasedNode(b, srv.Addr(), LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 1e9, Burst: 1e12,
		Lease: LeaseParams{TTL: time.Hour}})
	// Warm up until the lease holds enough for the timed decisions.
	deadline := time.Now().Add(10 * time.Second)
	for st := l.Status(); st.Held < 1e6; st = l.Status() {
		if time.Now().After(deadline) {
			b.Fatalf("the lease holds %d units", st.Held)
		}
		for range 1000 {
			l.Allow("", 1)
		}
	}
	now := time.Now()
	newBucket := func() *limits.TokenBucket {
		return must(limits.NewTokenBucket(limits.TokenBucketParams{Rate: 1e6, Burst: 1000}))
	}
	t0 := time.Unix(1_700_000_000, 0)
	b.Run("leased", func(b *testing.B) { benchAllow(b, l, now) })
	b.Run("tokenbucket", func(b *testing.B) {
		bucket := newBucket()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			bucket.AllowAt(t0.Add(time.Duration(i)*time.Microsecond), 1)
		}
	})
	b.Run("leased/parallel", func(b *testing.B) {
		var allowed atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			n := int64(0)
			for pb.Next() {
				if l.AllowAt("", now, 1).Allowed {
					n++
				}
			}
			allowed.Add(n)
		})
		b.ReportMetric(100*float64(allowed.Load())/float64(b.N), "allowed-%")
	})
	// The lease allows every decision (its quota does not run out), so each
	// one writes its word; so does this bucket, which cannot run out
	// either. (tokenbucket/parallel below refuses many of its decisions,
	// which read the bucket's word and write nothing.)
	b.Run("tokenbucket/parallel-allowed", func(b *testing.B) {
		bucket := must(limits.NewTokenBucket(limits.TokenBucketParams{Rate: 1e9, Burst: 1e12}))
		p := int64(runtime.GOMAXPROCS(0))
		var next, allowed atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			g := next.Add(1) - 1
			n := int64(0)
			for i := int64(0); pb.Next(); i++ {
				if bucket.AllowAt(t0.Add(time.Duration(i*p+g)*time.Microsecond), 1).Allowed {
					n++
				}
			}
			allowed.Add(n)
		})
		b.ReportMetric(100*float64(allowed.Load())/float64(b.N), "allowed-%")
	})
	b.Run("tokenbucket/parallel", func(b *testing.B) {
		bucket := newBucket()
		p := int64(runtime.GOMAXPROCS(0))
		var next, allowed atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			g := next.Add(1) - 1
			n := int64(0)
			for i := int64(0); pb.Next(); i++ {
				if bucket.AllowAt(t0.Add(time.Duration(i*p+g)*time.Microsecond), 1).Allowed {
					n++
				}
			}
			allowed.Add(n)
		})
		b.ReportMetric(100*float64(allowed.Load())/float64(b.N), "allowed-%")
	})
}

// BenchmarkLeasedCluster simulates a cluster of 3, 30 and 100 nodes (each
// a Store of its own, so a node id of its own) sharing one leased quota of
// 20,000/s (burst 20,000, the default lease period and TTL) on one real
// Redis, with 60,000 decisions a second offered, spread evenly. Each row
// runs 3 s after a warm-up of 1 s and reports: the admitted rate against
// the quota (accuracy), the over-admission bound at the end (the units
// leased out, Status.Outstanding, as a % of a second of the quota), the
// decisions offered per second, and Redis's load from INFO commandstats:
// script calls (renewals) and all commands (those the scripts run
// included) per second, and as a % of the decisions. Run with:
//
//	go test -run '^$' -bench LeasedCluster -benchtime 1x ./limits/redis
func BenchmarkLeasedCluster(b *testing.B) {
	for _, n := range []int{3, 30, 100} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			for range b.N {
				clusterRow(b, n)
			}
		})
	}
}

func clusterRow(b *testing.B, count int) {
	const rate, offered = 20_000, 60_000
	srv := startServer(b)
	c := srv.Client()
	p := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: rate, Burst: rate, Sync: limits.SyncLeased}
	nodes := make([]*node, count)
	for i := range nodes {
		nodes[i] = &node{l: leasedNode(b, srv.Addr(), p), perSec: offered / float64(count)}
	}
	for _, n := range nodes {
		n.drive("")
	}
	defer func() {
		for _, n := range nodes {
			n.halt()
		}
	}()
	warm := time.NewTimer(time.Second) // the load's own schedule
	<-warm.C
	c.ConfigResetStat(bg)
	for _, n := range nodes {
		n.openWindow()
	}
	from := redisTime(b, c)
	run := time.NewTimer(3 * time.Second)
	<-run.C
	to := redisTime(b, c)
	calls, all := scriptCalls(b, c), commandCount(b, c)
	var decisions, admitted, outstanding int64
	for _, n := range nodes {
		decisions += n.windowO.Load()
		admitted += n.windowA.Load()
	}
	for _, n := range nodes {
		outstanding = max(outstanding, n.l.Status().Outstanding)
	}
	secs := to.Sub(from).Seconds()
	b.ReportMetric(100*float64(admitted)/(rate*secs), "admitted-%-of-quota")
	b.ReportMetric(100*float64(outstanding)/rate, "bound-%-of-quota-second")
	b.ReportMetric(float64(decisions)/secs, "decisions/s")
	b.ReportMetric(float64(calls)/secs, "script-calls/s")
	b.ReportMetric(float64(all)/secs, "redis-commands/s")
	b.ReportMetric(100*float64(calls)/float64(decisions), "calls-%-of-decisions")
	b.ReportMetric(100*float64(all)/float64(decisions), "commands-%-of-decisions")
}

// BenchmarkLeasedDry: a decision on a lease that has run dry, refused (the
// share's floor, asked first, has no room at this instant).
func BenchmarkLeasedDry(b *testing.B) {
	srv := startServer(b)
	l := leasedNode(b, srv.Addr(), LimiterParams{Name: "dry", Algorithm: TokenBucket, Rate: 10, Burst: 10,
		Lease: LeaseParams{TTL: time.Hour}})
	awaitLease(b, l, "", 10*time.Second)
	now := time.Now()
	for l.AllowAt("", now, 1).Allowed { // spend what the lease holds
	}
	benchAllow(b, l, now)
}

// benchAllow measures one caller's decisions of a unit of key "" at now
// against l, and reports the share admitted.
func benchAllow(b *testing.B, l *Limiter, now time.Time) {
	b.ReportAllocs()
	allowed := 0
	for b.Loop() {
		if l.AllowAt("", now, 1).Allowed {
			allowed++
		}
	}
	b.ReportMetric(100*float64(allowed)/float64(b.N), "allowed-%")
}
