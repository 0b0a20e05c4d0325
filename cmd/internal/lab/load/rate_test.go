package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkGeneratorRate drives a null backend (answers 200 at once) at a
// few rates for 3 s each and reports what the generator really sent, how
// late it sent it and how many arrivals found no free slot:
//
//	go test -run=^$ -bench=GeneratorRate -benchtime=1x -count=3 ./cmd/internal/lab/load
//
// The generator keeps up with a rate while sent/s ≈ the rate, lag_p99_ms
// stays around a millisecond and overflow is 0.
func BenchmarkGeneratorRate(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	}))
	defer srv.Close()
	for _, rate := range []float64{1000, 2000, 4000, 8000} {
		b.Run(fmt.Sprintf("rate=%g", rate), func(b *testing.B) {
			for range b.N {
				g, err := New(Params{Target: srv.URL, Schedule: Schedule{{For: 3 * time.Second, From: rate, To: rate}}, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				res, err := g.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				tot := res.Totals
				b.ReportMetric(float64(tot.OK)/res.Duration.Seconds(), "ok/s")
				b.ReportMetric(res.DispatchLag.P99, "lag_p99_ms")
				b.ReportMetric(res.Totals.Latency.P99, "lat_p99_ms")
				b.ReportMetric(float64(tot.Errors), "errors")
			}
		})
	}
}
