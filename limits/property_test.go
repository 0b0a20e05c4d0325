package limits

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Property tests: random arrival sequences (random gaps, random costs, with
// bursts), checked against each algorithm's invariant over every interval.

type admission struct {
	at time.Duration
	n  int64
}

// arrivals runs a random sequence against l and returns the admissions.
func arrivals(l Limiter, seed uint64, count int, meanGap time.Duration, maxN int) []admission {
	rng := rand.New(rand.NewPCG(seed, 99))
	var got []admission
	at := time.Duration(0)
	for range count {
		if rng.IntN(4) > 0 { // a quarter of arrivals come at the same instant
			at += time.Duration(rng.Int64N(int64(2 * meanGap)))
		}
		n := int64(1 + rng.IntN(maxN))
		if l.AllowAt(t0.Add(at), n).Allowed {
			got = append(got, admission{at, n})
		}
	}
	return got
}

// forEachInterval calls f with the admitted total of every interval
// [adm[i].at, adm[j].at].
func forEachInterval(adm []admission, f func(i, j int, sum int64)) {
	for i := range adm {
		sum := int64(0)
		for j := i; j < len(adm); j++ {
			sum += adm[j].n
			f(i, j, sum)
		}
	}
}

// A token bucket (and the leaky bucket meter, and the bucket with warm-up)
// never admits more than burst + rate·t in any interval of length t.
func TestPropertyBucketsNeverExceedBurstPlusRate(t *testing.T) {
	const rate, burst = 50.0, 8
	news := map[string]func() Limiter{
		"TokenBucket": func() Limiter { return must(NewTokenBucket(TokenBucketParams{Rate: rate, Burst: burst})) },
		"Warmup": func() Limiter {
			return must(NewTokenBucket(TokenBucketParams{Rate: rate, Burst: burst, Warmup: 500 * ms}))
		},
		"LeakyBucket": func() Limiter { return must(NewLeakyBucket(LeakyBucketParams{Rate: rate, Capacity: burst})) },
	}
	for name, newL := range news {
		for seed := range uint64(30) {
			adm := arrivals(newL(), seed, 600, 15*ms, 3)
			if len(adm) < 50 {
				t.Fatalf("%s seed %d: only %d admissions, the test is too weak", name, seed, len(adm))
			}
			forEachInterval(adm, func(i, j int, sum int64) {
				span := (adm[j].at - adm[i].at).Seconds()
				if bound := burst + rate*span + 1e-6; float64(sum) > bound {
					t.Fatalf("%s seed %d: %d admitted in %v, bound burst+rate·t = %.3f", name, seed, sum, adm[j].at-adm[i].at, bound)
				}
			})
		}
	}
}

// The sliding log never holds more than Limit in any window (t-W, t]; the
// fixed window never more than Limit per aligned window and 2·Limit per any
// window-long span; sliding buckets never more than Limit in any span of
// W - W/Buckets.
func TestPropertyWindows(t *testing.T) {
	const limit, window = 10, time.Second
	type check struct {
		newL func() Limiter
		span time.Duration // intervals strictly shorter than this...
		max  int64         // ...hold at most this
	}
	checks := map[string]check{
		"SlidingLog":  {func() Limiter { return must(NewSlidingLog(WindowParams{limit, window})) }, window, limit},
		"FixedWindow": {func() Limiter { return must(NewFixedWindow(WindowParams{limit, window})) }, window, 2 * limit},
		"SlidingBuckets": {func() Limiter {
			return must(NewSlidingBuckets(SlidingBucketsParams{Limit: limit, Window: window, Buckets: 5}))
		}, window - window/5 + 1, limit},
		"SlidingWindow": {func() Limiter { return must(NewSlidingWindow(WindowParams{limit, window})) }, window, 2 * limit},
	}
	for name, c := range checks {
		for seed := range uint64(30) {
			adm := arrivals(c.newL(), seed, 800, 40*ms, 3)
			if len(adm) < 50 {
				t.Fatalf("%s seed %d: only %d admissions", name, seed, len(adm))
			}
			forEachInterval(adm, func(i, j int, sum int64) {
				if adm[j].at-adm[i].at < c.span && sum > c.max {
					t.Fatalf("%s seed %d: %d admitted within %v (from +%v), want at most %d",
						name, seed, sum, adm[j].at-adm[i].at, adm[i].at, c.max)
				}
			})
			if name != "FixedWindow" {
				continue
			}
			perWindow := map[int64]int64{}
			for _, a := range adm {
				k := t0.Add(a.at).UnixNano() / int64(window)
				if perWindow[k] += a.n; perWindow[k] > limit {
					t.Fatalf("FixedWindow seed %d: %d admitted in one aligned window", seed, perWindow[k])
				}
			}
		}
	}
}
