package backend

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParseDist(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		in   string
		want Dist
		mean time.Duration
	}{
		{"const:40ms", Dist{Kind: Const, Mean: 40 * ms}, 40 * ms},
		{"exp:40ms", Dist{Kind: Exponential, Mean: 40 * ms}, 40 * ms},
		{" lognormal:20ms:0.8", Dist{Kind: LogNormal, Mean: 20 * ms, Sigma: 0.8}, 20 * ms},
		{"bimodal:10ms:100ms:0.1", Dist{Kind: Bimodal, Mean: 10 * ms, Slow: 100 * ms, SlowFraction: 0.1}, 19 * ms},
	} {
		got, err := ParseDist(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDist(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if got.MeanTime() != tc.mean {
			t.Errorf("%q: MeanTime %v, want %v", tc.in, got.MeanTime(), tc.mean)
		}
		if back, err := ParseDist(got.String()); err != nil || back != got {
			t.Errorf("round trip of %q via %q: %+v, %v", tc.in, got.String(), back, err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "unknown distribution"},
		{"gauss:1ms", "unknown distribution"},
		{"exp", "takes 2 fields"},
		{"exp:1ms:2", "takes 2 fields"},
		{"exp:-1ms", "must be positive"},
		{"exp:0s", "must be positive"},
		{"exp:fast", "mean"},
		{"lognormal:1ms:x", "sigma"},
		{"lognormal:1ms:9", "sigma must be in"},
		{"bimodal:1ms:10ms:1.5", "slow fraction must be in"},
		{"bimodal:1ms:0s:0.5", "slow mean must be positive"},
	} {
		_, err := ParseDist(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "backend: ") {
			t.Errorf("ParseDist(%q) error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

// TestSampleMeans checks each distribution's sample mean against its model
// mean. The source is seeded, so the test is deterministic; the tolerance
// is several standard errors of the mean.
func TestSampleMeans(t *testing.T) {
	const n = 200000
	for _, s := range []string{"const:40ms", "exp:40ms", "lognormal:40ms:0.5", "lognormal:40ms:1.2", "bimodal:20ms:200ms:0.1"} {
		d, err := ParseDist(s)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		var sum, sumSq float64
		for range n {
			x := float64(d.Sample(r))
			if x < 0 {
				t.Fatalf("%s: negative sample %v", s, x)
			}
			sum += x
			sumSq += x * x
		}
		mean := sum / n
		sd := math.Sqrt(sumSq/n - mean*mean)
		tol := 5*sd/math.Sqrt(n) + 1
		if diff := math.Abs(mean - float64(d.MeanTime())); diff > tol {
			t.Errorf("%s: sample mean %v, model %v (tolerance %v)", s, time.Duration(mean), d.MeanTime(), time.Duration(tol))
		}
	}
}

func FuzzParseDist(f *testing.F) {
	for _, s := range []string{"exp:40ms", "const:1s", "lognormal:20ms:0.8", "bimodal:10ms:100ms:0.1", "bimodal:::", "exp:1e9h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDist(s)
		if err != nil {
			return
		}
		back, err := ParseDist(d.String())
		if err != nil || back != d {
			t.Fatalf("%q parsed as %+v, but its String %q reparses as %+v, %v", s, d, d.String(), back, err)
		}
		_ = d.Sample(rand.New(rand.NewPCG(1, 1)))
	})
}
