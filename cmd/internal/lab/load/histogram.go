package load

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds from 1 µs to an hour.
const maxLatencyMicros = int64(time.Hour / time.Microsecond)

// histogram is an HDR histogram of latencies. Not safe for concurrent use.
type histogram struct{ h *hdrhistogram.Histogram }

// newHistogram keeps digits significant decimal digits (3: 0.1 % error).
func newHistogram(digits int) histogram {
	return histogram{hdrhistogram.New(1, maxLatencyMicros, digits)}
}

func (h histogram) record(d time.Duration) {
	us := min(max(d.Microseconds(), 1), maxLatencyMicros)
	_ = h.h.RecordValue(us) // in range by construction
}

func toMillis(us int64) float64 { return float64(us) / 1000 }

func (h histogram) quantile(q float64) float64 { return toMillis(h.h.ValueAtQuantile(q)) }

func (h histogram) summary() Quantiles {
	if h.h.TotalCount() == 0 {
		return Quantiles{}
	}
	return Quantiles{
		Count: h.h.TotalCount(),
		Mean:  h.h.Mean() / 1000,
		P50:   h.quantile(50),
		P90:   h.quantile(90),
		P99:   h.quantile(99),
		P999:  h.quantile(99.9),
		Max:   toMillis(h.h.Max()),
	}
}
