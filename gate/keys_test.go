package gate

import (
	"strconv"
	"testing"
)

// TestKeyTableIsBounded: a flood of distinct keys, each used once, keeps the
// table near its bound, and a key in use is never dropped.
func TestKeyTableIsBounded(t *testing.T) {
	const bound = 256
	kt := newKeyTable(bound)
	busy, active := kt.enter("busy")
	if active != 1 {
		t.Fatalf("active keys %d, want 1", active)
	}
	peak := 0
	for i := range 20000 {
		ks, n := kt.enter("k" + strconv.Itoa(i))
		if n != 2 {
			t.Fatalf("active keys %d, want 2", n)
		}
		kt.leave(ks)
		peak = max(peak, kt.len())
	}
	if peak > bound+keyShards {
		t.Errorf("the table grew to %d keys, bound %d", peak, bound)
	}
	t.Logf("peak %d keys", peak)
	again, _ := kt.enter("busy")
	if again != busy {
		t.Error("a key in use was dropped")
	}
	kt.leave(again)
	kt.leave(busy)
	if kt.active.Load() != 0 {
		t.Errorf("active keys %d after every leave, want 0", kt.active.Load())
	}
	for i := range keyShards {
		kt.sweep(i)
	}
	if kt.len() != 0 {
		t.Errorf("%d keys after a full sweep, want 0", kt.len())
	}
	// A known key does not allocate.
	kt.leave(mustEnterKey(kt, "x"))
	if n := testing.AllocsPerRun(100, func() { kt.leave(mustEnterKey(kt, "x")) }); n != 0 {
		t.Errorf("entering a known key allocates %v times", n)
	}
}

func mustEnterKey(kt *keyTable, k string) *keyState {
	ks, _ := kt.enter(k)
	return ks
}
