package backend

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCapacity measures the backend's throughput under saturation
// (four times more clients than workers, so the queue never empties) and
// reports it next to the model's C = W / mean. The rate is taken between
// the 10th and the 90th percentile of completions, leaving out the ramp-up
// and the tail, where workers idle because nothing is left to send:
//
//	go test -run=^$ -bench=Capacity -benchtime=4000x -count=3 ./cmd/internal/lab/backend
//
// req/s is the measured capacity, of_model the ratio to C (1.00 = exact).
func BenchmarkCapacity(b *testing.B) {
	for _, tc := range []struct {
		name string
		p    Params
	}{
		{"W16_exp40ms_C400", Params{Workers: 16, Service: Dist{Kind: Exponential, Mean: 40 * time.Millisecond}}},
		{"W8_const10ms_C800", Params{Workers: 8, Service: Dist{Kind: Const, Mean: 10 * time.Millisecond}}},
		{"W32_lognormal40ms_C800", Params{Workers: 32, Service: Dist{Kind: LogNormal, Mean: 40 * time.Millisecond, Sigma: 0.8}}},
		{"W16_bimodal_C400", Params{Workers: 16, Service: Dist{Kind: Bimodal, Mean: 25 * time.Millisecond, Slow: 175 * time.Millisecond, SlowFraction: 0.1}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			in := start(b, tc.p)
			clients := 4*tc.p.Workers + 16
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
			var left atomic.Int64
			left.Store(int64(b.N))
			var failed, completed atomic.Int64
			var t10, t90 atomic.Int64 // unix ns of the completions at 10 % and 90 %
			n10, n90 := int64(b.N)/10, int64(b.N)*9/10
			var wg sync.WaitGroup
			b.ResetTimer()
			begin := time.Now()
			for range clients {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						resp, err := client.Get(in.URL + "/work")
						if err != nil {
							failed.Add(1)
							continue
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						switch completed.Add(1) {
						case n10:
							t10.Store(time.Now().UnixNano())
						case n90:
							t90.Store(time.Now().UnixNano())
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if failed.Load() > 0 {
				b.Fatalf("%d requests failed", failed.Load())
			}
			rate := float64(b.N) / time.Since(begin).Seconds()
			if n10 > 0 && t90.Load() > t10.Load() {
				rate = float64(n90-n10) / (float64(t90.Load()-t10.Load()) / 1e9)
			}
			b.ReportMetric(rate, "req/s")
			b.ReportMetric(rate/tc.p.Capacity(), "of_model")
		})
	}
}
