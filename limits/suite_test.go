package limits

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// The shared suite (in the manner of uber-go/ratelimit): every rate
// algorithm, alone and behind Keyed, must pass the same contract tests. Each
// case is configured for 10 units per second.

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

type algoCase struct {
	name string
	new  func(t testing.TB) Limiter
	// cold: starts below its nominal capacity (warm-up).
	cold bool
	// paced: admits every request within its wait bound (LeakyQueue).
	paced bool
	// underLimit: settles at about Limit-1 per window under saturation
	// (the weighted estimate; see SlidingWindow).
	underLimit bool
}

// must unwraps a constructor's result in tests whose parameters are valid
// by construction.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func algoCases() []algoCase {
	w := WindowParams{Limit: 10, Window: time.Second}
	cs := []algoCase{
		{name: "FixedWindow", new: func(t testing.TB) Limiter { return must(NewFixedWindow(w)) }},
		{name: "SlidingLog", new: func(t testing.TB) Limiter { return must(NewSlidingLog(w)) }},
		{name: "SlidingWindow", underLimit: true, new: func(t testing.TB) Limiter { return must(NewSlidingWindow(w)) }},
		{name: "SlidingBuckets", new: func(t testing.TB) Limiter {
			return must(NewSlidingBuckets(SlidingBucketsParams{Limit: 10, Window: time.Second, Buckets: 10}))
		}},
		{name: "TokenBucket", new: func(t testing.TB) Limiter {
			return must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 10}))
		}},
		{name: "TokenBucketWarmup", cold: true, new: func(t testing.TB) Limiter {
			return must(NewTokenBucket(TokenBucketParams{Rate: 10, Burst: 10, Warmup: 2 * time.Second}))
		}},
		{name: "LeakyBucket", new: func(t testing.TB) Limiter {
			return must(NewLeakyBucket(LeakyBucketParams{Rate: 10, Capacity: 10}))
		}},
		{name: "LeakyQueue", paced: true, new: func(t testing.TB) Limiter {
			return must(NewLeakyQueue(LeakyQueueParams{Rate: 10, MaxWait: 900 * time.Millisecond}))
		}},
	}
	// And every algorithm of the registry, built from a Spec of 10 a second
	// as a config builds it, so a new algorithm is checked without a case.
	s := Spec{Rate: 10, Limit: 10, Window: time.Second, Burst: 10, MaxWait: 900 * time.Millisecond, Buckets: 10}
	for _, a := range Algorithms() {
		cs = append(cs, algoCase{name: "registry/" + a.Name, paced: a.Paced,
			underLimit: must(a.New(s)).Policy().Shortfall > 0,
			new:        func(t testing.TB) Limiter { return must(a.New(s)) }})
	}
	return cs
}

// keyedView runs a Keyed limiter for one key through the Limiter interface.
type keyedView struct {
	k   *Keyed
	key string
}

func (v keyedView) AllowAt(now time.Time, n int64) Result { return v.k.AllowAt(v.key, now, n) }
func (v keyedView) Allow(n int64) Result                  { return v.k.Allow(v.key, n) }
func (v keyedView) Policy() Policy                        { return v.k.Policy() }

// suiteCases is every algorithm, plain and keyed.
func suiteCases() []algoCase {
	var cs []algoCase
	for _, c := range algoCases() {
		cs = append(cs, c)
		keyed := c
		keyed.name = c.name + "/Keyed"
		keyed.new = func(t testing.TB) Limiter {
			k := must(NewKeyed(c.new(t), KeyedParams{MaxKeys: 64, Shards: 4}))
			return keyedView{k, "client-1"}
		}
		cs = append(cs, keyed)
	}
	return cs
}

// checkResult asserts the invariants every Result satisfies.
func checkResult(t *testing.T, step string, r Result) {
	t.Helper()
	switch {
	case r.Remaining < 0 || r.Remaining > r.Limit:
		t.Fatalf("%s: Remaining %d outside [0, Limit %d]: %+v", step, r.Remaining, r.Limit, r)
	case r.Allowed && r.RetryAfter != 0:
		t.Fatalf("%s: allowed with RetryAfter %v", step, r.RetryAfter)
	case !r.Allowed && r.RetryAfter <= 0:
		t.Fatalf("%s: refused without a positive RetryAfter: %+v", step, r)
	case r.ResetAfter < 0 || r.Delay < 0:
		t.Fatalf("%s: negative duration: %+v", step, r)
	case r.ResetAfter == 0 && r.Remaining != r.Limit:
		t.Fatalf("%s: ResetAfter 0 but Remaining %d != Limit %d", step, r.Remaining, r.Limit)
	}
}

func TestSuite(t *testing.T) {
	for _, c := range suiteCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Run("FreshBurst", func(t *testing.T) { suiteFreshBurst(t, c) })
			t.Run("Probe", func(t *testing.T) { suiteProbe(t, c) })
			t.Run("Oversized", func(t *testing.T) { suiteOversized(t, c) })
			t.Run("RetryAfterIsExact", func(t *testing.T) { suiteRetryAfter(t, c) })
			t.Run("ResetAfterIsFresh", func(t *testing.T) { suiteResetAfter(t, c) })
			t.Run("TimeBackwards", func(t *testing.T) { suiteTimeBackwards(t, c) })
			t.Run("Sustained", func(t *testing.T) { suiteSustained(t, c) })
			t.Run("Concurrent", func(t *testing.T) { suiteConcurrent(t, c) })
			t.Run("Policy", func(t *testing.T) { suitePolicy(t, c) })
		})
	}
}

// A fresh limiter admits its Limit in one instant (a cold one fewer, but at
// least one), and then refuses.
func suiteFreshBurst(t *testing.T, c algoCase) {
	l := c.new(t)
	admitted := int64(0)
	var last Result
	for i := range 30 {
		r := l.AllowAt(t0, 1)
		checkResult(t, fmt.Sprintf("request %d", i), r)
		if r.Allowed {
			admitted++
		}
		last = r
	}
	if c.cold {
		if admitted < 1 || admitted >= last.Limit {
			t.Fatalf("cold start admitted %d of 30 at one instant, want 1..%d", admitted, last.Limit-1)
		}
	} else if admitted != last.Limit {
		t.Fatalf("admitted %d at one instant, want Limit %d", admitted, last.Limit)
	}
	if last.Allowed || last.Remaining != 0 {
		t.Fatalf("after the burst: %+v, want refused with Remaining 0", last)
	}
}

// n = 0 (and negative n) is allowed, consumes nothing and reports the state.
func suiteProbe(t *testing.T, c algoCase) {
	l := c.new(t)
	l.AllowAt(t0, 3)
	at := t0.Add(10 * time.Millisecond)
	p1, p2, pneg := l.AllowAt(at, 0), l.AllowAt(at, 0), l.AllowAt(at, -5)
	if !p1.Allowed || p1 != p2 || p1 != pneg {
		t.Fatalf("probes differ or refused: %+v %+v %+v", p1, p2, pneg)
	}
	checkResult(t, "probe", p1)
	if c.cold {
		return
	}
	if got := l.AllowAt(at, 1); got.Remaining != p1.Remaining-1 {
		t.Fatalf("after probes, a request leaves Remaining %d, want %d", got.Remaining, p1.Remaining-1)
	}
}

// A request larger than Limit is never allowed and says so.
func suiteOversized(t *testing.T, c algoCase) {
	l := c.new(t)
	r := l.AllowAt(t0, 11)
	if c.paced {
		if !r.Allowed || r.Delay != 0 {
			t.Fatalf("paced limiter refused or delayed a large first request: %+v", r)
		}
		return
	}
	if r.Allowed || r.RetryAfter != InfDuration {
		t.Fatalf("n > Limit: %+v, want refused with RetryAfter InfDuration", r)
	}
	if r.Remaining != r.Limit {
		t.Fatalf("an oversized request consumed capacity: %+v", r)
	}
}

// After a refusal, the same request is allowed exactly RetryAfter later, and
// not noticeably before.
func suiteRetryAfter(t *testing.T, c algoCase) {
	for _, n := range []int64{1, 4} {
		l := c.new(t)
		now := t0
		var r Result
		for i := 0; i < 100; i++ { // exhaust, then keep asking a bit later
			r = l.AllowAt(now, n)
			if !r.Allowed {
				break
			}
			now = now.Add(7 * time.Millisecond)
		}
		if r.Allowed {
			t.Fatalf("n=%d: never refused", n)
		}
		if r.RetryAfter > time.Microsecond {
			if early := l.AllowAt(now.Add(r.RetryAfter-time.Microsecond), n); early.Allowed {
				t.Fatalf("n=%d: allowed 1µs before RetryAfter %v", n, r.RetryAfter)
			}
		}
		if later := l.AllowAt(now.Add(r.RetryAfter), n); !later.Allowed {
			t.Fatalf("n=%d: refused at RetryAfter %v: %+v", n, r.RetryAfter, later)
		}
	}
}

// ResetAfter later, the limiter is back to its fresh state.
func suiteResetAfter(t *testing.T, c algoCase) {
	l := c.new(t)
	var r Result
	for i := range 7 {
		r = l.AllowAt(t0.Add(time.Duration(i)*30*time.Millisecond), 2)
	}
	if r.ResetAfter <= 0 {
		t.Fatalf("busy limiter reports ResetAfter %v", r.ResetAfter)
	}
	at := t0.Add(6 * 30 * time.Millisecond).Add(r.ResetAfter)
	if p := l.AllowAt(at, 0); p.Remaining != p.Limit || p.ResetAfter != 0 {
		t.Fatalf("at ResetAfter: %+v, want Remaining == Limit and ResetAfter 0", p)
	}
}

// An instant earlier than one already seen never panics and never admits
// what the later instant refuses.
func suiteTimeBackwards(t *testing.T, c algoCase) {
	l := c.new(t)
	now := t0.Add(990 * time.Millisecond)
	for l.AllowAt(now, 1).Allowed {
	}
	for _, back := range []time.Duration{time.Nanosecond, 10 * time.Millisecond, 500 * time.Millisecond, time.Hour, 100 * 365 * 24 * time.Hour} {
		r := l.AllowAt(now.Add(-back), 1)
		checkResult(t, fmt.Sprintf("back %v", back), r)
		if r.Allowed {
			t.Fatalf("%v back in time: allowed what %v refused", back, now)
		}
	}
	if r := l.AllowAt(time.Time{}, 1); r.Allowed {
		t.Fatalf("zero time: allowed what %v refused", now)
	}
}

// Over many windows the admitted total matches the nominal rate.
func suiteSustained(t *testing.T, c algoCase) {
	l := c.new(t)
	admitted := int64(0)
	const windows = 20
	for i := range windows * 100 { // an arrival every 10 ms: 10× the rate
		if r := l.AllowAt(t0.Add(time.Duration(i)*10*time.Millisecond), 1); r.Allowed {
			admitted++
		}
	}
	lo, hi := int64(windows*10-10), int64(windows*10+10)
	switch {
	case c.cold:
		lo = windows*10 - 30
	case c.underLimit:
		lo = windows*9 - 10
	}
	if admitted < lo || admitted > hi {
		t.Fatalf("admitted %d over %d s at 100/s offered, want %d..%d", admitted, windows, lo, hi)
	}
}

// Concurrent callers at one instant share the capacity exactly.
func suiteConcurrent(t *testing.T, c algoCase) {
	l := c.new(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := int64(0)
	limit := int64(0)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				r := l.AllowAt(t0, 1)
				mu.Lock()
				limit = r.Limit
				if r.Allowed {
					admitted++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if admitted > limit || (!c.cold && admitted != limit) {
		t.Fatalf("160 concurrent requests at one instant: admitted %d, Limit %d", admitted, limit)
	}
}

// The policy agrees with the results.
func suitePolicy(t *testing.T, c algoCase) {
	l := c.new(t)
	p := l.Policy()
	r := l.AllowAt(t0, 0)
	if p.Quota != r.Limit || p.Window <= 0 {
		t.Fatalf("policy %+v vs Limit %d", p, r.Limit)
	}
	if rate := float64(p.Quota) / p.Window.Seconds(); rate < 9.9 || rate > 11.2 {
		t.Fatalf("policy %+v implies %.2f/s, configured 10/s", p, rate)
	}
}
