package cowmap

import (
	"sync"
	"testing"
)

func TestLoadOrNewCreatesOnce(t *testing.T) {
	var m Map[string, *int]
	if _, ok := m.Load("a"); ok {
		t.Fatal("empty map has a")
	}
	created := 0
	create := func(string) *int { created++; n := created; return &n }
	a := m.LoadOrNew("a", create)
	if again := m.LoadOrNew("a", create); again != a || created != 1 {
		t.Fatalf("second LoadOrNew: %p (want %p), created %d times", again, a, created)
	}
	if v, ok := m.Load("a"); !ok || v != a {
		t.Fatalf("Load a: %v %v", v, ok)
	}
}

func TestSnapshotIsNotChangedByWrites(t *testing.T) {
	var m Map[string, int]
	m.LoadOrNew("a", func(string) int { return 1 })
	before := m.All()
	m.LoadOrNew("b", func(string) int { return 2 })
	m.Retain(func(k string, _ int) bool { return k == "b" })
	if len(before) != 1 || before["a"] != 1 {
		t.Fatalf("snapshot changed by later writes: %v", before)
	}
	if all := m.All(); len(all) != 1 || all["b"] != 2 {
		t.Fatalf("after Retain: %v, want only b", all)
	}
}

// TestConcurrentCreate: many goroutines asking for the same few keys get one
// value per key, created once (run with -race).
func TestConcurrentCreate(t *testing.T) {
	var m Map[int, *int]
	var mu sync.Mutex
	created := map[int]int{}
	var wg sync.WaitGroup
	got := make([][4]*int, 16)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 4 {
				got[g][k] = m.LoadOrNew(k, func(k int) *int {
					mu.Lock()
					created[k]++
					mu.Unlock()
					return new(int)
				})
			}
		}()
	}
	wg.Wait()
	for k := range 4 {
		if created[k] != 1 {
			t.Errorf("key %d created %d times", k, created[k])
		}
		for g := range got {
			if got[g][k] != got[0][k] {
				t.Errorf("goroutine %d got another value for key %d", g, k)
			}
		}
	}
}

func TestLockedHoldsWrites(t *testing.T) {
	var m Map[string, int]
	m.LoadOrNew("a", func(string) int { return 1 })
	done := make(chan struct{})
	m.Locked(func(all map[string]int) {
		go func() {
			m.LoadOrNew("b", func(string) int { return 2 })
			close(done)
		}()
		select {
		case <-done:
			t.Error("a write finished while Locked ran")
		default:
		}
		if len(all) != 1 {
			t.Errorf("Locked saw %v", all)
		}
	})
	<-done
}
