package redis

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limits"
)

// t0 is the first instant of the fixed-time sequences: not a round number,
// so window boundaries and the nanoseconds of the TAT both matter.
var t0 = time.Unix(1_700_000_000, 123_456_789)

// step is one request of a scripted sequence: at t0+at, cost n.
type step struct {
	at time.Duration
	n  int64
}

// exactCase is a quota and the local algorithm that must decide exactly as
// its Redis form does.
type exactCase struct {
	p     LimiterParams
	local func() limits.Limiter
	steps []step
}

func must[L any](l L, err error) L {
	if err != nil {
		panic(err)
	}
	return l
}

func exactCases() []exactCase {
	return []exactCase{
		{ // a third of a second per token: the TAT's nanoseconds are uneven
			p:     LimiterParams{Name: "tb3", Algorithm: TokenBucket, Rate: 3, Burst: 5},
			local: func() limits.Limiter { return must(limits.NewTokenBucket(limits.TokenBucketParams{Rate: 3, Burst: 5})) },
			steps: []step{
				{0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, // burst of 5, the 6th refused
				{333 * time.Millisecond, 1},        // not quite a token yet
				{333_333_334 * time.Nanosecond, 1}, // now it is
				{400 * time.Millisecond, 0},        // a probe
				{time.Second, 2}, {time.Second, 6}, // 6 > burst: never
				{900 * time.Millisecond, 1},                // time goes backwards
				{5 * time.Second, 5}, {5 * time.Second, 1}, // full again
			},
		},
		{
			p: LimiterParams{Name: "tb1k", Algorithm: TokenBucket, Rate: 1000, Burst: 50},
			local: func() limits.Limiter {
				return must(limits.NewTokenBucket(limits.TokenBucketParams{Rate: 1000, Burst: 50}))
			},
		},
		{
			p: LimiterParams{Name: "tbslow", Algorithm: TokenBucket, Rate: 0.7, Burst: 10},
			local: func() limits.Limiter {
				return must(limits.NewTokenBucket(limits.TokenBucketParams{Rate: 0.7, Burst: 10}))
			},
		},
		{
			p: LimiterParams{Name: "lb", Algorithm: LeakyBucket, Rate: 7, Burst: 4},
			local: func() limits.Limiter {
				return must(limits.NewLeakyBucket(limits.LeakyBucketParams{Rate: 7, Capacity: 4}))
			},
		},
		{
			p: LimiterParams{Name: "fw", Algorithm: FixedWindow, Limit: 10, Window: time.Second},
			local: func() limits.Limiter {
				return must(limits.NewFixedWindow(limits.WindowParams{Limit: 10, Window: time.Second}))
			},
			steps: []step{
				{0, 4}, {0, 4}, {0, 4}, {0, 2}, {100 * time.Millisecond, 1}, {0, 11},
				{876_543_211 * time.Nanosecond, 1}, // the next window (t0 is 0.123456789 s into one)
				{3 * time.Second, 10}, {3 * time.Second, 0},
			},
		},
		{ // a window that does not divide a second
			p: LimiterParams{Name: "fw15", Algorithm: FixedWindow, Limit: 5, Window: 1500 * time.Millisecond},
			local: func() limits.Limiter {
				return must(limits.NewFixedWindow(limits.WindowParams{Limit: 5, Window: 1500 * time.Millisecond}))
			},
		},
		{
			p: LimiterParams{Name: "sw", Algorithm: SlidingWindow, Limit: 10, Window: time.Second},
			local: func() limits.Limiter {
				return must(limits.NewSlidingWindow(limits.WindowParams{Limit: 10, Window: time.Second}))
			},
			steps: []step{
				{0, 5}, {0, 5}, {0, 1}, {900 * time.Millisecond, 3},
				{1200 * time.Millisecond, 1}, {1200 * time.Millisecond, 4}, {1300 * time.Millisecond, 0},
				{1900 * time.Millisecond, 9}, {2500 * time.Millisecond, 2}, {5 * time.Second, 10},
			},
		},
		{
			p: LimiterParams{Name: "sw7", Algorithm: SlidingWindow, Limit: 7, Window: 250 * time.Millisecond},
			local: func() limits.Limiter {
				return must(limits.NewSlidingWindow(limits.WindowParams{Limit: 7, Window: 250 * time.Millisecond}))
			},
		},
		{
			p: LimiterParams{Name: "sw100", Algorithm: SlidingWindow, Limit: 100, Window: time.Minute},
			local: func() limits.Limiter {
				return must(limits.NewSlidingWindow(limits.WindowParams{Limit: 100, Window: time.Minute}))
			},
		},
	}
}

// randomSteps is a reproducible sequence of n requests with gaps around the
// quota's pace, often at the same instant, sometimes over capacity. It spans
// under 8 windows (a sliding window's key tells windows apart modulo 9).
func randomSteps(seed uint64, p LimiterParams, count int) []step {
	rng := rand.New(rand.NewPCG(seed, 1))
	var capacity int64
	var pace time.Duration // the time one unit takes to come back
	if p.Window > 0 {
		capacity, pace = p.Limit, p.Window/time.Duration(p.Limit)
	} else {
		capacity, pace = p.Burst, time.Duration(float64(time.Second)/p.Rate)
	}
	span := 3 * pace * time.Duration(capacity) // about three refills
	if p.Window > 0 {
		span = 7 * p.Window
	}
	maxGap := 2 * span / time.Duration(count)
	steps := make([]step, count)
	at := time.Duration(0)
	for i := range steps {
		if rng.IntN(3) > 0 {
			at += time.Duration(rng.Int64N(int64(maxGap) + 1))
		}
		n := 1 + rng.Int64N(max(1, capacity/3))
		switch rng.IntN(20) {
		case 0:
			n = 0
		case 1:
			n = capacity + 1
		case 2:
			n = capacity
		}
		steps[i] = step{at, n}
	}
	return steps
}

// TestExact runs scripted and random sequences at fixed instants through
// each Redis algorithm (with the tests' caller-time clock) and the local
// algorithm of the same name, and wants the same Result at every step:
// the same decisions, remaining units, and durations to the nanosecond.
func TestExact(t *testing.T) {
	srv := startServer(t)
	s, err := openAtCallerTime(StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range exactCases() {
		sequences := map[string][]step{}
		if c.steps != nil {
			sequences["scripted"] = c.steps
		}
		for seed := range uint64(3) {
			sequences[fmt.Sprintf("random%d", seed)] = randomSteps(seed, c.p, 150)
		}
		for name, steps := range sequences {
			t.Run(c.p.Name+"/"+name, func(t *testing.T) {
				l, err := s.NewLimiter(c.p)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				local := c.local()
				key := t.Name()
				for i, st := range steps {
					now := t0.Add(st.at)
					want := local.AllowAt(now, st.n)
					got := l.AllowAt(key, now, st.n)
					if got != want {
						t.Fatalf("step %d: AllowAt(t0+%v, %d)\n redis %+v\n local %+v\n status %+v", i, st.at, st.n, got, want, l.Status())
					}
				}
				if st := l.Status(); st.FallbackDecisions != 0 || st.StoreDecisions != uint64(len(steps)) {
					t.Fatalf("want every decision from Redis, got %+v", st)
				}
			})
		}
	}
}

// TestProductionClock checks that the production scripts ignore the node's
// clock: a decision "in the year 2000" is taken at Redis's time.
func TestProductionClock(t *testing.T) {
	srv := startServer(t)
	l, err := New(Params{
		StoreParams:   StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second},
		LimiterParams: LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 1, Burst: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	past := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	before := time.Now()
	if r := l.AllowAt("tenant", past, 1); !r.Allowed || r.Remaining != 9 {
		t.Fatalf("first request: %+v", r)
	}
	after := time.Now()
	if strings.Contains(scripts[TokenBucket].src, "ARGV[#ARGV") {
		t.Fatal("the production script reads a time from its arguments")
	}
	v, err := srv.Client().Get(bg, "sluice:api:gcra:{tenant}").Int64()
	if err != nil {
		t.Fatal(err)
	}
	// The TAT is Redis's now plus one interval (1 s); Redis runs on this
	// machine, so its now lies between before and after.
	tat := time.Unix(0, v)
	if lo, hi := before.Add(time.Second-time.Millisecond), after.Add(time.Second+time.Millisecond); tat.Before(lo) || tat.After(hi) {
		t.Fatalf("TAT %v, want Redis's time + 1s, in [%v, %v]", tat, lo, hi)
	}
}
