package redis

import (
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stallBound is how far past its Timeout a decision may answer in the
// failure tests, beyond the time the process itself was kept from running
// meanwhile (see lateness). It is not a speed assertion (benchmarks
// measure speed): it catches a stall, such as a decision waiting for a
// dial or socket timeout (seconds), with room for -race.
const stallBound = 500 * time.Millisecond

// lateness runs goroutines goroutines, each woken by a 1 ms ticker, until
// the returned stop is called; stop returns the most any of them ran after
// its tick was due. That is how long a goroutine that was ready to run (a
// decision whose answer or budget had come) waited for a CPU: on a busy
// machine (other processes, a collection under -race) a decision is late
// by that much without waiting for Redis at all, so the stall checks add
// it to their bound instead of failing on the machine's load. Ticks cost
// next to nothing: the watch does not load the machine it watches.
func lateness(goroutines int) (stop func() time.Duration) {
	halt := make(chan struct{})
	var wg sync.WaitGroup
	late := make([]time.Duration, goroutines)
	for g := range late {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-halt:
					return
				case due := <-tick.C:
					late[g] = max(late[g], time.Since(due))
				}
			}
		}()
	}
	return func() time.Duration {
		close(halt)
		wg.Wait()
		return slices.Max(late)
	}
}

// driveUntil makes decisions for fresh keys at the real time until cond
// holds, bounded by limit. The decisions are the events that move a
// limiter between modes (a failure, a probe), so the loop drives them
// rather than sleeping.
func driveUntil(t *testing.T, l *Limiter, limit time.Duration, what string, cond func(Status) bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for i := 0; !cond(l.Status()); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; status %+v", what, limit, l.Status())
		}
		l.Allow("drive", 1)
		if i%64 == 0 {
			runtime.Gosched()
		}
	}
}

// TestRedisKilled kills Redis under load, checks that every decision still
// answers within its budget, that the fallback holds this node's share,
// and that decisions return to Redis by themselves once it is back.
func TestRedisKilled(t *testing.T) {
	srv := startServer(t)
	const timeout = 5 * time.Millisecond // the default budget
	l, err := New(Params{
		StoreParams: StoreParams{
			Address: srv.Addr(), Timeout: timeout, Nodes: 4, Heartbeat: -1,
			BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
		},
		LimiterParams: LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 1000, Burst: 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	driveUntil(t, l, 10*time.Second, "first decision by Redis", func(s Status) bool { return s.StoreDecisions > 0 })

	// Load from 8 callers while Redis is killed. They stop once the
	// limiter has fallen back and made some decisions that way.
	stop := load(8, func(now time.Time) { l.AllowAt("load", now, 1) })
	srv.Kill()
	killed := l.Status()
	driveUntil(t, l, 10*time.Second, "fallback mode after the kill", func(s Status) bool {
		return s.Mode == ModeFallback && s.FallbackDecisions > killed.FallbackDecisions+1000
	})
	if worst, late := stop(); worst > timeout+stallBound+late {
		t.Errorf("slowest decision while Redis died took %v, want about the budget %v (the process waited %v for a CPU)", worst, timeout, late)
	}
	down := l.Status()
	if down.Errors == 0 || down.LastError == "" || down.NextProbe.IsZero() {
		t.Errorf("want the failure in the status, got %+v", down)
	}
	// Further decisions stay within the budget too (no Redis call at all
	// while backing off, one bounded probe after each pause).
	watch := lateness(2)
	var worst time.Duration
	for range 2000 {
		start := time.Now()
		l.AllowAt("after", start, 1)
		worst = max(worst, time.Since(start))
	}
	if late := watch(); worst > timeout+stallBound+late {
		t.Errorf("a decision after the kill took %v (the process waited %v for a CPU)", worst, late)
	}

	// The share: 1/4 of the burst and rate. At a fixed instant before the
	// next probe (any instant in 2001 is), a fresh key gets 100/4 = 25, and
	// 20 ms later 1000/4 per second of it: 5 more.
	at := time.Unix(1_000_000_000, 0)
	if n := admitted(l, "share", at, 100); n != 25 {
		t.Errorf("fallback admitted %d of 100 at one instant, want the share 25", n)
	}
	if n := admitted(l, "share", at.Add(20*time.Millisecond), 100); n != 5 {
		t.Errorf("fallback admitted %d 20ms later, want 5", n)
	}

	// Redis comes back (empty: no script cached, no keys); the limiter
	// returns by itself, and decides with the whole burst again.
	srv.Restart()
	before := l.Status()
	driveUntil(t, l, 10*time.Second, "back to Redis after the restart", func(s Status) bool {
		return s.Mode == ModeRedis && s.StoreDecisions > before.StoreDecisions
	})
	deadline := time.Now().Add(10 * time.Second) // a failure's bound, not a pace
	for attempt := 0; ; attempt++ {
		// A decision that times out on a busy machine is answered locally
		// (however many in a row: the budget is 5 ms); judge one made by
		// Redis: a fresh key's first request leaves 99 of the global burst
		// (the local share would leave 24).
		s0 := l.Status()
		r := l.Allow("fresh"+strconv.Itoa(attempt), 1)
		if l.Status().StoreDecisions > s0.StoreDecisions {
			if !r.Allowed || r.Remaining != 99 || r.Limit != 100 {
				t.Fatalf("back on Redis, a fresh key's first request: %+v, want 99 of 100 remaining", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no decision made by Redis in %d tries; status %+v", attempt+1, l.Status())
		}
	}
}

// load calls decide from callers goroutines, each with the instant of its
// call, until the returned stop is called; stop returns the slowest call,
// and the lateness of the process meanwhile.
func load(callers int, decide func(now time.Time)) (stop func() (worst, late time.Duration)) {
	watch := lateness(2)
	var halt atomic.Bool
	var wg sync.WaitGroup
	slowest := make([]time.Duration, callers)
	for g := range slowest {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !halt.Load(); i++ {
				start := time.Now()
				decide(start)
				slowest[g] = max(slowest[g], time.Since(start))
				if i%64 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	return func() (time.Duration, time.Duration) {
		halt.Store(true)
		wg.Wait()
		return slices.Max(slowest), watch()
	}
}

// admitted makes count decisions of cost 1 for key at now and returns how
// many were allowed.
func admitted(l *Limiter, key string, now time.Time, count int) int {
	n := 0
	for range count {
		if l.AllowAt(key, now, 1).Allowed {
			n++
		}
	}
	return n
}

// TestScriptFlush: after SCRIPT FLUSH, the next decision sends the script
// again (EVAL) and succeeds, without an error or a fallback.
func TestScriptFlush(t *testing.T) {
	srv := startServer(t)
	l, err := New(Params{
		StoreParams:   StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second},
		LimiterParams: LimiterParams{Name: "api", Algorithm: FixedWindow, Limit: 10, Window: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := srv.Client()
	for i := range 3 {
		if err := c.ScriptFlush(bg).Err(); err != nil {
			t.Fatal(err)
		}
		if r := l.Allow("k", 1); !r.Allowed {
			t.Fatalf("decision %d: %+v", i, r)
		}
		exists, err := c.ScriptExists(bg, scripts[FixedWindow].sha).Result()
		if err != nil || !exists[0] {
			t.Fatalf("script not cached again after decision %d: %v %v", i, exists, err)
		}
	}
	if st := l.Status(); st.Errors != 0 || st.FallbackDecisions != 0 || st.StoreDecisions != 3 {
		t.Fatalf("status %+v", st)
	}
}
