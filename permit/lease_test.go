package permit

import (
	"testing"

	"github.com/sluicehq/sluice/gate"
)

func TestTableIsBoundedAndSpreadsSlots(t *testing.T) {
	for _, c := range []struct{ capacity, shards int }{{1, 8}, {3, 8}, {100, 8}, {16384, 8}, {7, 3}} {
		tb := newShardedTable(c.capacity, c.shards)
		seen := map[int]bool{}
		for range c.capacity {
			idx, ok := tb.reserve()
			if !ok || seen[idx] || idx < 0 || idx >= c.capacity {
				t.Fatalf("%+v: reserve gave %d, %v (seen: %v)", c, idx, ok, seen[idx])
			}
			seen[idx] = true
		}
		if _, ok := tb.reserve(); ok {
			t.Fatalf("%+v: reserve beyond the capacity succeeded", c)
		}
	}
}

func TestTableLifecycle(t *testing.T) {
	tb := newShardedTable(2, 1)
	ia, _ := tb.reserve()
	a := tb.fill(ia, passZero, gate.Class{}, 0, nil, 0, 0, 100)
	ib, _ := tb.reserve()
	b := tb.fill(ib, passZero, gate.Class{}, 0, nil, 0, 0, 200)
	if a == b || a.slot() != ia || b.slot() != ib {
		t.Fatalf("ids %v %v for slots %d %d", a, b, ia, ib)
	}
	if tb.liveCount() != 2 {
		t.Fatalf("live %d, want 2", tb.liveCount())
	}
	if r, _, fresh := tb.release(a, 0, true, 50); r != Released || !fresh {
		t.Fatalf("release a: %v %v", r, fresh)
	}
	if r, _, fresh := tb.release(a, 0, true, 60); r != AlreadyReleased || fresh {
		t.Fatalf("second release of a: %v %v", r, fresh)
	}
	// b expires at 200: a sweep at 199 keeps it, one at 200 takes it.
	if got := tb.sweep(199, nil); len(got) != 0 {
		t.Fatalf("sweep at 199 took %d", len(got))
	}
	if got := tb.sweep(200, nil); len(got) != 1 {
		t.Fatalf("sweep at 200 took %d, want b", len(got))
	}
	if r, _, fresh := tb.release(b, 0, true, 300); r != Expired || fresh {
		t.Fatalf("release of b after its expiry: %v %v", r, fresh)
	}
	// The free ring is FIFO: a's slot (freed first) is reused first, and
	// then a's id names nothing any more, while b's still tells it expired.
	ic, _ := tb.reserve()
	c := tb.fill(ic, passZero, gate.Class{}, 0, nil, 0, 300, 400)
	if ic != ia {
		t.Fatalf("reserve gave slot %d, want %d (freed first)", ic, ia)
	}
	if r, _, _ := tb.release(a, 0, true, 310); r != Unknown {
		t.Fatalf("release of a after its slot was reused: %v, want unknown", r)
	}
	if r, _, _ := tb.release(b, 0, true, 310); r != Expired {
		t.Fatalf("release of b: %v, want expired", r)
	}
	if r, _, fresh := tb.release(c, 0, true, 310); r != Released || !fresh {
		t.Fatalf("release of c: %v", r)
	}
	// A reserved slot given back is free again, its old id unknown.
	id, _ := tb.reserve()
	tb.unreserve(id)
	if tb.liveCount() != 0 {
		t.Fatalf("live %d", tb.liveCount())
	}
	if r, _, _ := tb.release(ID(1<<slotBits|uint64(tb.cap)), 0, true, 0); r != Unknown {
		t.Fatalf("release of a slot beyond the table: %v", r)
	}
}

// TestTableSessions: a permit granted in a session is Unknown to a release
// in another session or in none, then or after its release; one granted in
// no session is released in any.
func TestTableSessions(t *testing.T) {
	tb := newShardedTable(2, 1)
	i, _ := tb.reserve()
	id := tb.fill(i, passZero, gate.Class{}, 0, nil, 7, 0, 100)
	for _, sess := range []Session{0, 8} {
		if r, _, _ := tb.release(id, sess, false, 10); r != Unknown {
			t.Fatalf("release in session %d of a permit of session 7: %v, want unknown", sess, r)
		}
	}
	if r, _, fresh := tb.release(id, 7, false, 10); r != Released || !fresh {
		t.Fatalf("release in its session: %v %v", r, fresh)
	}
	if r, _, _ := tb.release(id, 8, false, 10); r != Unknown {
		t.Fatalf("second release in another session: %v, want unknown", r)
	}
	if r, _, _ := tb.release(id, 7, false, 10); r != AlreadyReleased {
		t.Fatalf("second release in its session: %v, want already released", r)
	}
	i, _ = tb.reserve()
	free := tb.fill(i, passZero, gate.Class{}, 0, nil, 0, 0, 100)
	if r, _, _ := tb.release(free, 9, false, 10); r != Released {
		t.Fatalf("release in a session of a permit of none: %v", r)
	}
}

// TestIDsAreNotPredictable: the IDs of one slot's grants differ in random
// tags, not by a count another client could follow (issue 23, item 8: the
// generation + 1 at each reuse let a client with the token release
// another's permit).
func TestIDsAreNotPredictable(t *testing.T) {
	tb := newShardedTable(1, 1)
	seen := map[uint64]bool{}
	var last ID
	for n := range 1000 {
		i, _ := tb.reserve()
		id := tb.fill(i, passZero, gate.Class{}, 0, nil, 0, 0, 100)
		tag := uint64(id >> slotBits)
		if seen[tag] || n > 0 && (tag == uint64(last>>slotBits)+1 || id == last+1) {
			t.Fatalf("grant %d of one slot: id %v after %v", n, id, last)
		}
		seen[tag] = true
		tb.release(id, 0, true, 0)
		last = id
	}
}

func TestSweepSkipsShardsWithNothingDue(t *testing.T) {
	tb := newShardedTable(4, 2)
	for range 4 {
		i, _ := tb.reserve()
		tb.fill(i, passZero, gate.Class{}, 0, nil, 0, 0, 1000)
	}
	if got := tb.sweep(999, nil); len(got) != 0 {
		t.Fatalf("sweep before the expiry took %d", len(got))
	}
	for i := range tb.shards {
		if tb.shards[i].next != 1000 {
			t.Fatalf("shard %d: next expiry %d, want 1000", i, tb.shards[i].next)
		}
	}
	if got := tb.sweep(1000, nil); len(got) != 4 {
		t.Fatalf("sweep at the expiry took %d, want 4", len(got))
	}
}

// passZero is a Pass that holds nothing: the table only stores it.
var passZero gate.Pass
