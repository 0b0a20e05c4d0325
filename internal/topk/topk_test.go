package topk

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestExactWhileTheKeysFit(t *testing.T) {
	s := New(4)
	for i, k := range []string{"a", "b", "a", "c", "a", "b", "d"} {
		if !s.Add(k, uint8(i)) {
			t.Fatalf("Add(%q) skipped with no other goroutine", k)
		}
	}
	top, total, skipped := s.Top(0)
	want := []Entry{{Key: "a", Count: 3, Tag: 4}, {Key: "b", Count: 2, Tag: 5}, {Key: "c", Count: 1, Tag: 3}, {Key: "d", Count: 1, Tag: 6}}
	if fmt.Sprint(top) != fmt.Sprint(want) || total != 7 || skipped != 0 {
		t.Errorf("Top = %v, total %d, skipped %d; want %v, 7, 0", top, total, skipped, want)
	}
	if top, _, _ := s.Top(2); len(top) != 2 || top[0].Key != "a" || top[1].Key != "b" {
		t.Errorf("Top(2) = %v", top)
	}
}

func TestANewKeyTakesTheSmallestCounter(t *testing.T) {
	s := New(2)
	for _, k := range []string{"a", "a", "a", "b", "c"} {
		s.Add(k, 0)
	}
	top, _, _ := s.Top(0)
	want := []Entry{{Key: "a", Count: 3}, {Key: "c", Count: 2, Error: 1}}
	if fmt.Sprint(top) != fmt.Sprint(want) {
		t.Errorf("Top = %v, want %v", top, want)
	}
}

// TestGuarantees checks Space-Saving's bounds on skewed random streams
// against exact counts: every key seen more than total/k times is held, and
// each held count is at least its true count and at most Error above it.
func TestGuarantees(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		zipf := rand.NewZipf(rng, 1.2, 1, 10_000)
		const k, n = 16, 20_000
		s := New(k)
		exact := map[string]uint64{}
		for range n {
			key := fmt.Sprint("tenant-", zipf.Uint64())
			exact[key]++
			s.Add(key, 0)
		}
		top, total, _ := s.Top(0)
		if total != n || len(top) != k {
			t.Fatalf("seed %d: total %d, %d keys; want %d, %d", seed, total, len(top), n, k)
		}
		held := map[string]Entry{}
		var sum uint64
		for _, e := range top {
			held[e.Key] = e
			sum += e.Count
			if e.Count < exact[e.Key] || e.Count-e.Error > exact[e.Key] {
				t.Errorf("seed %d: %q counted %d (error %d), true %d", seed, e.Key, e.Count, e.Error, exact[e.Key])
			}
		}
		if sum != n {
			t.Errorf("seed %d: counts sum to %d, want the total %d", seed, sum, n)
		}
		for key, c := range exact {
			if _, ok := held[key]; c > n/k && !ok {
				t.Errorf("seed %d: %q seen %d times (> %d) is not held", seed, key, c, n/k)
			}
		}
	}
}

func TestDecayHalvesAndDrops(t *testing.T) {
	s := New(3)
	for range 5 {
		s.Add("a", 1)
	}
	s.Add("b", 2)
	s.Decay()
	top, total, _ := s.Top(0)
	if fmt.Sprint(top) != fmt.Sprint([]Entry{{Key: "a", Count: 2, Tag: 1}}) || total != 3 || s.Len() != 1 {
		t.Errorf("after Decay: %v total %d len %d; want a:2 alone, total 3", top, total, s.Len())
	}
	s.Add("c", 3) // the freed counter is reused
	if s.Len() != 2 {
		t.Errorf("len %d after a new key, want 2", s.Len())
	}
}

func TestAddDoesNotAllocate(t *testing.T) {
	s := New(8)
	keys := make([]string, 32)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		s.Add(keys[i%len(keys)], 0)
		i++
	}); n != 0 {
		t.Errorf("Add allocates %v times", n)
	}
}

// TestConcurrentAddsAreCountedOrSkipped: under contention every Add is either
// counted or skipped, never lost, and the summary stays consistent.
func TestConcurrentAddsAreCountedOrSkipped(t *testing.T) {
	s := New(8)
	const workers, each = 4, 5000
	var wg sync.WaitGroup
	var mu sync.Mutex
	var counted uint64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c uint64
			for i := range each {
				if s.Add(fmt.Sprint("k", (w*each+i)%20), 0) {
					c++
				}
			}
			mu.Lock()
			counted += c
			mu.Unlock()
		}()
	}
	wg.Wait()
	top, total, skipped := s.Top(0)
	var sum uint64
	for _, e := range top {
		sum += e.Count
	}
	if total != counted || total+skipped != workers*each || sum != total {
		t.Errorf("total %d, counted %d, skipped %d, counts sum %d; want total = counted = sum and total+skipped = %d",
			total, counted, skipped, sum, workers*each)
	}
}

// FuzzSummary runs random streams of adds and decays against an exact model
// of the keys' counts: the bounds of Space-Saving hold after every step.
func FuzzSummary(f *testing.F) {
	f.Add([]byte{1, 2, 3, 1, 1, 255, 4, 5, 6, 7, 1})
	f.Add([]byte{0, 0, 0, 0, 9, 9, 255, 255, 8})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const k = 4
		s := New(k)
		exact := map[string]uint64{} // true counts, decayed as the summary decays
		for _, op := range ops {
			if op == 255 {
				s.Decay()
				for key, c := range exact {
					exact[key] = c / 2
				}
				continue
			}
			key := fmt.Sprint(op % 16)
			exact[key]++
			s.Add(key, op)
			top, _, _ := s.Top(0)
			if len(top) > k {
				t.Fatalf("%d keys held, at most %d", len(top), k)
			}
			for _, e := range top {
				if e.Error > e.Count || e.Count < exact[e.Key] || e.Count-e.Error > exact[e.Key]+1 {
					// Decay rounds count and error down apart, so the
					// lower bound holds within one.
					t.Fatalf("%q counted %d (error %d), true about %d", e.Key, e.Count, e.Error, exact[e.Key])
				}
			}
		}
	})
}

func BenchmarkAdd(b *testing.B) {
	for _, k := range []int{16, 64} {
		b.Run(fmt.Sprint("k=", k), func(b *testing.B) {
			s := New(k)
			keys := make([]string, 1024)
			rng := rand.New(rand.NewPCG(1, 2))
			zipf := rand.NewZipf(rng, 1.2, 1, 1<<20)
			for i := range keys {
				keys[i] = fmt.Sprint("tenant-", zipf.Uint64())
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s.Add(keys[i&1023], 0)
				i++
			}
		})
	}
}
