package limits

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestTokenBucketSteps(t *testing.T) {
	l := must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 3})) // a token per 100 ms
	runSteps(t, l, []step{
		{at: 0, n: 3, allowed: true, remaining: 0, retry: 0, reset: 300 * ms},
		{at: 0, n: 1, allowed: false, remaining: 0, retry: 100 * ms, reset: 300 * ms},
		{at: 50 * ms, n: 1, allowed: false, remaining: 0, retry: 50 * ms, reset: 250 * ms},
		{at: 100 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: 300 * ms},
		{at: 150 * ms, n: 2, allowed: false, remaining: 0, retry: 150 * ms, reset: 250 * ms},
		{at: 1000 * ms, n: 2, allowed: true, remaining: 1, retry: 0, reset: 200 * ms},
		{at: 1000 * ms, n: 4, allowed: false, remaining: 1, retry: InfDuration, reset: 200 * ms},
		{at: 1150 * ms, n: 0, allowed: true, remaining: 2, retry: 0, reset: 50 * ms},
		// Time going backwards: judged at the earlier instant, never refilled.
		{at: 1050 * ms, n: 0, allowed: true, remaining: 1, retry: 0, reset: 150 * ms},
	})
}

// A rate whose interval is not a whole number of nanoseconds still admits a
// full burst of single requests (costs round down).
func TestTokenBucketFractionalInterval(t *testing.T) {
	for _, r := range []float64{1.5, 3, 7, 1e9 / 3} {
		l := must(NewTokenBucket(TokenBucketParams{Rate: r, Burst: 3}))
		for i := range 3 {
			if !l.AllowAt(t0, 1).Allowed {
				t.Fatalf("rate %v: request %d of a burst of 3 refused", r, i)
			}
		}
		if l.AllowAt(t0, 1).Allowed {
			t.Fatalf("rate %v: a fourth request at the same instant allowed", r)
		}
	}
}

// Decisions agree with golang.org/x/time/rate on random arrivals.
func TestTokenBucketAgreesWithXRate(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		r := []float64{10, 1000, 3.7, 250}[seed%4]
		burst := 1 + rng.IntN(20)
		ours := must(NewTokenBucket(TokenBucketParams{Rate: r, Burst: int64(burst)}))
		theirs := rate.NewLimiter(rate.Limit(r), burst)
		now := t0
		for i := range 2000 {
			now = now.Add(time.Duration(rng.Int64N(int64(3 * time.Second / time.Duration(r)))))
			n := 1 + rng.IntN(burst)
			if got, want := ours.AllowAt(now, int64(n)).Allowed, theirs.AllowN(now, n); got != want {
				t.Fatalf("seed %d, request %d (n=%d at +%v): sluice %v, x/time/rate %v", seed, i, n, now.Sub(t0), got, want)
			}
		}
	}
}

func TestTokenBucketSetters(t *testing.T) {
	l := must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 10}))
	l.AllowAt(t0, 8) // 2 tokens left
	must(0, l.SetRate(1))
	// The 2 tokens are kept; refill is now 1 per second.
	runSteps(t, l, []step{
		{at: 0, n: 0, allowed: true, remaining: 2, retry: 0, reset: 8 * time.Second},
		{at: 0, n: 3, allowed: false, remaining: 2, retry: time.Second, reset: 8 * time.Second},
	})
	must(0, l.SetBurst(1)) // clamped to the new capacity
	runSteps(t, l, []step{
		{at: 0, n: 1, allowed: true, remaining: 0, retry: 0, reset: time.Second},
		{at: 0, n: 2, allowed: false, remaining: 0, retry: InfDuration, reset: time.Second},
	})
	err := l.SetBurst(0)
	if err == nil || err.Error() != "limits: token bucket burst must be positive, got 0" {
		t.Fatalf("SetBurst(0) = %v", err)
	}
	if err := l.SetRate(-1); err == nil {
		t.Fatal("SetRate(-1) accepted")
	}
	if p := l.Params(); p.Rate != 1 || p.Burst != 1 {
		t.Fatalf("refused setters changed the params: %+v", p)
	}
	if p := l.Policy(); p != (Policy{Quota: 1, Window: time.Second}) {
		t.Fatalf("policy %+v", p)
	}
}

func TestTokenBucketValidateReportsEveryProblem(t *testing.T) {
	err := TokenBucketParams{Rate: 0, Burst: 0, Warmup: -1, ColdFactor: 0.5}.Validate()
	want := "limits: token bucket rate must be positive, got 0\n" +
		"limits: token bucket burst must be positive, got 0\n" +
		"limits: token bucket warmup must be between 0 and 87600h0m0s, got -1ns\n" +
		"limits: token bucket cold factor must be between 1 and 1e6 (or 0 for 3), got 0.5"
	if err == nil || err.Error() != want {
		t.Fatalf("Validate() = %v\nwant %v", err, want)
	}
	if _, err := NewTokenBucket(TokenBucketParams{Rate: 2e9, Burst: 1}); err == nil {
		t.Fatal("rate 2e9 accepted")
	}
}

// Guava's SmoothWarmingUp at rate 10/s, warm-up 2 s, cold factor 3: stable
// 100 ms, cold 300 ms, threshold 10 permits, max 20, slope 20 ms per permit.
// Starting cold, the permits above the threshold cost 290, 270, ..., 110 ms
// (the trapezoid, 2 s in all), then the stable 100 ms.
func TestTokenBucketWarmupFollowsGuava(t *testing.T) {
	l := must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 1, Warmup: 2 * time.Second}))
	want := []time.Duration{0}
	for _, gap := range []time.Duration{290, 270, 250, 230, 210, 190, 170, 150, 130, 110, 100, 100, 100} {
		want = append(want, want[len(want)-1]+gap*ms)
	}
	var got []time.Duration
	for at := time.Duration(0); at <= want[len(want)-1]; at += ms { // saturating demand
		if l.AllowAt(t0.Add(at), 1).Allowed {
			got = append(got, at)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("admitted at %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("admission %d at %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
	// Idle for the warm-up period: cold again (first permit costs 290 ms).
	idle := want[len(want)-1] + 100*ms + 2*time.Second
	runSteps(t, l, []step{
		{at: idle, n: 1, allowed: true, remaining: 0, retry: 0, reset: 290 * ms},
		{at: idle + 289*ms, n: 1, allowed: false, remaining: 0, retry: ms, reset: ms},
	})
}

// Warm-up's slower start, against the same bucket without it, and its
// bursts of Burst/ColdFactor while cold.
func TestTokenBucketWarmupSlowerStart(t *testing.T) {
	count := func(l *TokenBucket, d time.Duration) int {
		n := 0
		for at := time.Duration(0); at < d; at += ms {
			if l.AllowAt(t0.Add(at), 1).Allowed {
				n++
			}
		}
		return n
	}
	cold := must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 1, Warmup: 2 * time.Second}))
	warm := must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 1}))
	if c, w := count(cold, time.Second), count(warm, time.Second); c != 4 || w != 10 {
		t.Fatalf("first second: %d admitted cold, %d warm; want 4 and 10", c, w)
	}
	burst := must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 10, Warmup: 2 * time.Second}))
	n := 0
	for burst.AllowAt(t0, 1).Allowed {
		n++
	}
	if n != 3 {
		t.Fatalf("cold burst of %d, want 3 (costs 290+270+250 ms fit in 1 s)", n)
	}
}

// A full cold bucket admits a request of up to Burst even though its cost
// exceeds the capacity, so large requests never starve while cold.
func TestTokenBucketWarmupLargeRequestDoesNotStarve(t *testing.T) {
	l := must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 10, Warmup: 2 * time.Second}))
	r := l.AllowAt(t0, 10)
	if !r.Allowed {
		t.Fatalf("a full cold bucket refused n=Burst: %+v", r)
	}
	// It paid 10 cold permits (290+...+110 = 2 s): the next wait is past the
	// capacity, and the bucket is full again after 2 s.
	if r.ResetAfter != 2*time.Second {
		t.Fatalf("ResetAfter %v, want 2s", r.ResetAfter)
	}
	if r2 := l.AllowAt(t0.Add(2*time.Second), 10); !r2.Allowed {
		t.Fatalf("refused at ResetAfter: %+v", r2)
	}
}

func TestTokenBucketWarmupSetters(t *testing.T) {
	plain := must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 1}))
	if err := plain.SetWarmup(time.Second); err != ErrWarmupSwitch {
		t.Fatalf("switching warm-up on: %v", err)
	}
	l := must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 1, Warmup: 2 * time.Second}))
	if err := l.SetWarmup(0); err != ErrWarmupSwitch {
		t.Fatalf("switching warm-up off: %v", err)
	}
	if err := l.SetWarmup(-time.Second); err == nil {
		t.Fatal("SetWarmup(-1s) accepted")
	}
	// Cold: maxPermits 20. Doubling the period doubles maxPermits (40) and
	// scales the stored permits with it: still fully cold, and the cold
	// interval is unchanged (300 ms), so the first permit costs
	// (300+290)/2 = 295 ms (threshold 20, slope 10 ms per permit).
	must(0, l.SetWarmup(4*time.Second))
	runSteps(t, l, []step{
		{at: 0, n: 1, allowed: true, remaining: 0, retry: 0, reset: 295 * ms},
		{at: 294 * ms, n: 1, allowed: false, remaining: 0, retry: ms, reset: ms},
	})
	must(0, l.SetRate(20)) // stable 50 ms, cold 150 ms
	if p := l.Params(); p.Rate != 20 || p.Warmup != 4*time.Second || p.ColdFactor != DefaultColdFactor {
		t.Fatalf("params %+v", p)
	}
}

// Setters racing with decisions never create tokens: at one
// instant (no refill), however the rate flips, at most Burst is admitted.
func TestTokenBucketSettersRaceDecisions(t *testing.T) {
	for round := range 20 {
		l := must(NewTokenBucket(TokenBucketParams{Rate: 1000, Burst: 10}))
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					if l.AllowAt(t0, 1).Allowed {
						admitted.Add(1)
					}
				}
			}()
		}
		for i := range 200 {
			must(0, l.SetRate([]float64{10, 1000, 1e6}[i%3]))
		}
		wg.Wait()
		if n := admitted.Load(); n > 10 {
			t.Fatalf("round %d: %d admitted at one instant with burst 10", round, n)
		}
	}
}

// Two changes with no decision between them carry the state over once, at
// the next decision, from the parameters it was built under.
func TestTokenBucketSettersBackToBack(t *testing.T) {
	l := must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 10}))
	l.AllowAt(t0, 8) // 2 tokens left
	must(0, l.SetRate(1))
	must(0, l.SetBurst(5))
	must(0, l.SetRate(2))
	// 2 tokens kept; 3 more to fill 5 at 2 per second.
	runSteps(t, l, []step{
		{at: 0, n: 0, allowed: true, remaining: 2, retry: 0, reset: 1500 * ms},
		{at: 0, n: 3, allowed: false, remaining: 2, retry: 500 * ms, reset: 1500 * ms},
		{at: 500 * ms, n: 3, allowed: true, remaining: 0, retry: 0, reset: 2500 * ms},
	})
}

// Decisions racing with setters that change the burst, as time advances:
// no decision is lost or applied twice (the CAS loop), and once the
// setters stop, the bucket behaves exactly as a fresh one of the last
// parameters after a long idle.
func TestTokenBucketSettersRaceAdvancingDecisions(t *testing.T) {
	l := must(NewTokenBucket(TokenBucketParams{Rate: 1000, Burst: 10}))
	var wg sync.WaitGroup
	var over atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				r := l.AllowAt(t0.Add(time.Duration(i*4+g)*100*time.Microsecond), 1)
				if r.Remaining > r.Limit || r.Remaining < 0 {
					over.Add(1)
				}
			}
		}()
	}
	for i := range 300 {
		must(0, l.SetBurst([]int64{5, 10, 50}[i%3]))
	}
	wg.Wait()
	if n := over.Load(); n != 0 {
		t.Fatalf("%d results with Remaining outside [0, Limit]", n)
	}
	idle := t0.Add(time.Hour)
	if n := admittedAt(l, idle, 100); n != 50 {
		t.Fatalf("after the race and an hour idle, %d admitted at one instant, want the last burst 50", n)
	}
}

func admittedAt(l Limiter, at time.Time, count int) int {
	n := 0
	for range count {
		if l.AllowAt(at, 1).Allowed {
			n++
		}
	}
	return n
}
