package probe

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/hist"
)

// TestRecorderAgreesWithHistogram checks that a Recorder and the plain
// hist.Histogram adaptive/sim models it with report the same figures for the
// same interval of samples: one layout, one quantile rule.
func TestRecorderAgreesWithHistogram(t *testing.T) {
	rec, err := NewRecorder(RecorderParams{Window: time.Second, SubWindows: 1, Start: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	var h hist.Histogram
	r := rand.New(rand.NewPCG(5, 5))
	for range 10_000 {
		d := time.Duration(r.ExpFloat64() * float64(20*time.Millisecond))
		rec.Record(d)
		h.Add(d)
	}
	s := rec.Snapshot(time.Unix(0, 0).Add(time.Second / 2))
	var q [len(fixedQuantiles)]time.Duration
	h.Quantiles(fixedQuantiles[:], q[:])
	got := [...]time.Duration{s.P50, s.P90, s.P95, s.P99, s.P999}
	if got != q {
		t.Errorf("recorder quantiles %v, histogram %v", got, q)
	}
	if s.Min != h.Min() || s.Max != h.Max() || s.Mean != h.Mean() || s.Successes != h.Count() {
		t.Errorf("recorder min %v max %v mean %v n %d; histogram %v %v %v %d",
			s.Min, s.Max, s.Mean, s.Successes, h.Min(), h.Max(), h.Mean(), h.Count())
	}
}
