package probe

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// exactQuantile is the nearest-rank q-quantile of sorted: the ceil(q·n)-th
// smallest value (the first for q = 0).
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	k := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(k, 1), len(sorted))-1]
}

// TestQuantileAccuracy records samples from several distributions and
// compares every quantile the recorder reports with the exact one computed
// from the sorted samples: the relative error must stay within 1/128.
func TestQuantileAccuracy(t *testing.T) {
	const n = 100_000
	r := rand.New(rand.NewPCG(1, 2))
	dists := []struct {
		name string
		draw func() time.Duration
	}{
		{"uniform 1ms..100ms", func() time.Duration {
			return time.Millisecond + time.Duration(r.Int64N(int64(99*time.Millisecond)))
		}},
		{"lognormal median 20ms sigma 1", func() time.Duration {
			return time.Duration(20e6 * math.Exp(r.NormFloat64()))
		}},
		{"bimodal 2ms and 300ms", func() time.Duration {
			if r.Float64() < 0.9 {
				return time.Duration(2e6 * math.Exp(0.1*r.NormFloat64()))
			}
			return time.Duration(300e6 * math.Exp(0.2*r.NormFloat64()))
		}},
		{"log-uniform 1us..60s", func() time.Duration {
			return time.Duration(math.Exp(math.Log(1e3) + r.Float64()*(math.Log(60e9)-math.Log(1e3))))
		}},
	}
	qs := []float64{0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999, 1}
	for _, d := range dists {
		t.Run(d.name, func(t *testing.T) {
			rec := mustRecorder(t, RecorderParams{})
			samples := make([]time.Duration, n)
			var sum time.Duration
			for i := range samples {
				samples[i] = d.draw()
				sum += samples[i]
				rec.Record(samples[i])
			}
			slices.Sort(samples)
			s := rec.Snapshot(time.Unix(100, 0))

			if s.Successes != n || s.Count != n {
				t.Fatalf("successes %d count %d, want %d", s.Successes, s.Count, n)
			}
			if s.Min != samples[0] || s.Max != samples[n-1] {
				t.Errorf("min/max = %v/%v, want exactly %v/%v", s.Min, s.Max, samples[0], samples[n-1])
			}
			if want := sum / n; s.Mean != want {
				t.Errorf("mean = %v, want exactly %v", s.Mean, want)
			}
			check := func(name string, q float64, got time.Duration) {
				t.Helper()
				want := exactQuantile(samples, q)
				if e := math.Abs(float64(got-want)) / float64(want); e > 1.0/128 {
					t.Errorf("%s = %v, exact %v: relative error %.4f > 1/128", name, got, want, e)
				}
			}
			check("P50", 0.5, s.P50)
			check("P90", 0.9, s.P90)
			check("P95", 0.95, s.P95)
			check("P99", 0.99, s.P99)
			check("P999", 0.999, s.P999)
			for _, q := range qs {
				check("Quantile", q, rec.Quantile(q))
			}
		})
	}
}

// TestQuantileEdges covers an empty window, out-of-range q and durations
// the histogram cannot resolve.
func TestQuantileEdges(t *testing.T) {
	rec := mustRecorder(t, RecorderParams{})
	s := rec.Snapshot(time.Unix(0, 0))
	if s.Successes != 0 || s.P99 != 0 || s.Min != 0 || s.Max != 0 || s.Mean != 0 || rec.Quantile(0.5) != 0 {
		t.Fatalf("empty window: %+v, Quantile(0.5) = %v; want all zero", s, rec.Quantile(0.5))
	}

	rec.Record(-time.Second) // counts as 0
	rec.Record(2 * time.Minute)
	rec.Record(3 * time.Minute)
	s = rec.Snapshot(time.Unix(0, 0))
	if s.Min != 0 || s.Max != 3*time.Minute {
		t.Errorf("min/max = %v/%v, want 0/3m", s.Min, s.Max)
	}
	if got := rec.Quantile(1); got != 3*time.Minute {
		t.Errorf("Quantile(1) = %v, want the exact max 3m", got)
	}
	if got := rec.Quantile(0.5); got < time.Duration(MaxTracked)*127/128 || got > 3*time.Minute {
		t.Errorf("Quantile(0.5) of a value past MaxTracked = %v, want about MaxTracked (%v)", got, time.Duration(MaxTracked))
	}
	if got := rec.Quantile(-3); got != 0 {
		t.Errorf("Quantile(-3) = %v, want the min 0", got)
	}
	if got := rec.Quantile(7); got != 3*time.Minute {
		t.Errorf("Quantile(7) = %v, want the max", got)
	}
	if got := rec.Quantile(math.NaN()); got != 0 {
		t.Errorf("Quantile(NaN) = %v, want 0", got)
	}
}

func mustRecorder(t testing.TB, p RecorderParams) *Recorder {
	t.Helper()
	r, err := NewRecorder(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
