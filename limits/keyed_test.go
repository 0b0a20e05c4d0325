package limits

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

func newKeyedTB(t *testing.T, rate float64, burst int64, p KeyedParams) (*Keyed, *TokenBucket) {
	t.Helper()
	tb := must(NewTokenBucket(TokenBucketParams{Rate: rate, Burst: burst}))
	return must(NewKeyed(tb, p)), tb
}

func TestKeyedKeysAreIndependent(t *testing.T) {
	k, _ := newKeyedTB(t, 1, 2, KeyedParams{})
	for range 2 {
		k.AllowAt("10.0.0.1", t0, 1)
	}
	if k.AllowAt("10.0.0.1", t0, 1).Allowed {
		t.Fatal("exhausted key allowed")
	}
	if r := k.AllowAt("10.0.0.2", t0, 1); !r.Allowed || r.Remaining != 1 {
		t.Fatalf("another key: %+v", r)
	}
	if k.Len() != 2 {
		t.Fatalf("Len %d, want 2", k.Len())
	}
}

func TestKeyedProbeOfUnknownKeyStoresNothing(t *testing.T) {
	k, _ := newKeyedTB(t, 1, 2, KeyedParams{})
	if r := k.AllowAt("nobody", t0, 0); !r.Allowed || r.Remaining != 2 {
		t.Fatalf("probe: %+v", r)
	}
	if r := k.AllowAt("huge", t0, 3); r.Allowed {
		t.Fatalf("n > burst allowed: %+v", r)
	}
	if k.Len() != 0 {
		t.Fatalf("probes and refusals stored %d keys", k.Len())
	}
}

// The key bound holds under a flood of distinct, active keys.
func TestKeyedBoundHoldsUnderAFlood(t *testing.T) {
	k, _ := newKeyedTB(t, 1, 5, KeyedParams{MaxKeys: 64, Shards: 4})
	for i := range 10000 {
		if r := k.AllowAt("flood-"+strconv.Itoa(i), t0.Add(time.Duration(i)), 1); !r.Allowed {
			t.Fatalf("a new key was refused: %+v", r)
		}
		if n := k.Len(); n > 64 {
			t.Fatalf("after %d keys, Len %d > MaxKeys 64", i+1, n)
		}
	}
}

// A full shard evicts the least recently used key of its sample; with one
// shard of 8 keys the sample is the whole shard.
func TestKeyedEvictsLeastRecentlyUsed(t *testing.T) {
	k, _ := newKeyedTB(t, 1, 5, KeyedParams{MaxKeys: 8, Shards: 1})
	for i := range 8 {
		k.AllowAt(fmt.Sprint("k", i), t0.Add(time.Duration(i)*ms), 1)
	}
	for i := 1; i < 8; i++ { // all but k0 used again
		k.AllowAt(fmt.Sprint("k", i), t0.Add(time.Duration(10+i)*ms), 1)
	}
	k.AllowAt("new", t0.Add(20*ms), 1)
	if k.Len() != 8 {
		t.Fatalf("Len %d, want 8", k.Len())
	}
	// k1 kept its history (5-2-1 = 2); k0 was forgotten: it starts fresh
	// (5 tokens, 4 after this request).
	if r := k.AllowAt("k1", t0.Add(21*ms), 1); r.Remaining != 2 {
		t.Fatalf("k1: %+v, want its history kept", r)
	}
	if r := k.AllowAt("k0", t0.Add(22*ms), 1); r.Remaining != 4 {
		t.Fatalf("k0 after eviction: %+v, want a fresh bucket", r)
	}
}

// Idle keys (full buckets) are dropped by the traffic of new keys and by
// Sweep; active ones are kept.
func TestKeyedSweepsIdleKeys(t *testing.T) {
	k, _ := newKeyedTB(t, 10, 5, KeyedParams{MaxKeys: 1000, Shards: 2})
	for i := range 100 {
		k.AllowAt(fmt.Sprint("old", i), t0, 1) // full again 100 ms later
	}
	k.AllowAt("active", t0.Add(time.Second), 5) // empty until +1.5 s
	held := k.Len()                             // the new key may have swept a couple
	if held < 95 {
		t.Fatalf("Len %d before Sweep: one new key swept too many", held)
	}
	if got := k.Sweep(t0.Add(time.Second)); got != held-1 {
		t.Fatalf("Sweep dropped %d of %d, want all but the active key", got, held)
	}
	if k.Len() != 1 {
		t.Fatalf("Len %d after Sweep, want 1 (the active key)", k.Len())
	}
	// New keys sweep incrementally: idle keys vanish without Sweep.
	for i := range 100 {
		k.AllowAt(fmt.Sprint("old", i), t0.Add(2*time.Second), 1)
	}
	for i := range 200 {
		k.AllowAt(fmt.Sprint("new", i), t0.Add(3*time.Second), 1)
	}
	if n := k.Len(); n >= 300 {
		t.Fatalf("Len %d: new keys swept no idle key", n)
	}
}

// A setter on the template applies to every key, keeping each key's tokens.
func TestKeyedFollowsTemplateSetters(t *testing.T) {
	k, tb := newKeyedTB(t, 10, 10, KeyedParams{})
	k.AllowAt("a", t0, 8)
	k.AllowAt("b", t0, 1)
	must(0, tb.SetRate(1))
	if r := k.AllowAt("a", t0, 0); r.Remaining != 2 || r.ResetAfter != 8*time.Second {
		t.Fatalf("a after SetRate: %+v, want 2 tokens, full in 8s", r)
	}
	if r := k.AllowAt("b", t0, 0); r.Remaining != 9 || r.ResetAfter != time.Second {
		t.Fatalf("b after SetRate: %+v", r)
	}
	if k.Policy() != tb.Policy() {
		t.Fatal("policy differs from the template's")
	}
}

func TestKeyedRejectsForeignTemplates(t *testing.T) {
	_, err := NewKeyed(keyedView{}, KeyedParams{MaxKeys: -1})
	want := "limits: keyed max keys must not be negative, got -1\n" +
		"limits: keyed template must be a rate limiter of package limits, got limits.keyedView"
	if err == nil || err.Error() != want {
		t.Fatalf("NewKeyed = %v\nwant %v", err, want)
	}
}

func TestKeyedExistingKeyDoesNotAllocate(t *testing.T) {
	for _, c := range algoCases() {
		k := must(NewKeyed(c.new(t), KeyedParams{}))
		key := string([]byte("203.0.113.7"))
		now := t0
		k.AllowAt(key, now, 1)
		allocs := testing.AllocsPerRun(1000, func() {
			now = now.Add(time.Millisecond)
			k.AllowAt(key, now, 1)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per request for an existing key", c.name, allocs)
		}
	}
}

func TestKeyedConcurrentKeys(t *testing.T) {
	k, _ := newKeyedTB(t, 100, 10, KeyedParams{MaxKeys: 5000, Shards: 8})
	var wg sync.WaitGroup
	admitted := make([]int, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				if k.AllowAt("shared", t0, 1).Allowed {
					admitted[g]++
				}
				k.AllowAt(fmt.Sprint(g, "-", i%300), t0, 1)
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, a := range admitted {
		total += a
	}
	if total != 10 {
		t.Fatalf("the shared key admitted %d at one instant, want its burst 10", total)
	}
	if n := k.Len(); n > 2401 {
		t.Fatalf("Len %d > MaxKeys", n)
	}
}
