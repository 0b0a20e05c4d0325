package redis

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// TestBatches: 64 callers hammer the same keys at once, so their decisions
// share script calls and a key appears several times in one call (each
// script reads such a key once and writes it once, after the batch). Each
// key must admit exactly its quota of 100 (the buckets' refill, one unit per
// 1000 s, is nil; the windows are 720 h long), with every remaining count
// from 99 down to 0 reported once, for every algorithm.
func TestBatches(t *testing.T) {
	srv := startServer(t)
	for _, p := range []LimiterParams{
		{Name: "tb", Algorithm: TokenBucket, Rate: 0.001, Burst: 100},
		{Name: "lb", Algorithm: LeakyBucket, Rate: 0.001, Burst: 100},
		{Name: "fw", Algorithm: FixedWindow, Limit: 100, Window: 720 * time.Hour},
		{Name: "sw", Algorithm: SlidingWindow, Limit: 100, Window: 720 * time.Hour},
	} {
		t.Run(string(p.Algorithm), func(t *testing.T) {
			l, err := New(Params{StoreParams: StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second}, LimiterParams: p})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			keys := []string{"a", "b", "c"}
			var mu sync.Mutex
			remaining := map[string][]int64{}
			var wg sync.WaitGroup
			for g := range 64 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 10 {
						key := keys[(g+i)%len(keys)]
						if r := l.Allow(key, 1); r.Allowed {
							mu.Lock()
							remaining[key] = append(remaining[key], r.Remaining)
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			st := l.Status()
			if st.StoreDecisions != 640 {
				t.Fatalf("want all 640 decisions made by Redis, got %+v", st)
			}
			for _, k := range keys {
				got := remaining[k]
				slices.Sort(got)
				if !slices.Equal(got, zeroTo99) {
					t.Errorf("key %s: %d admitted, remaining %v; want 100 with 0..99 once each", k, len(got), got)
				}
			}
			calls := l.b.calls.Load()
			t.Logf("640 decisions in %d script calls", calls)
			if calls >= 640 {
				t.Errorf("%d script calls for 640 decisions of 64 callers: no batch had more than one", calls)
			}
		})
	}
}

var zeroTo99 = func() []int64 {
	s := make([]int64, 100)
	for i := range s {
		s[i] = int64(i)
	}
	return s
}()
