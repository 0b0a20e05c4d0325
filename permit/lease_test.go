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
	a := tb.fill(ia, passZero, nil, 0, 100)
	ib, _ := tb.reserve()
	b := tb.fill(ib, passZero, nil, 0, 200)
	if a == b || int(uint32(a)) != ia || int(uint32(b)) != ib {
		t.Fatalf("ids %v %v for slots %d %d", a, b, ia, ib)
	}
	if tb.liveCount() != 2 {
		t.Fatalf("live %d, want 2", tb.liveCount())
	}
	if r, _, fresh := tb.release(a, 50); r != Released || !fresh {
		t.Fatalf("release a: %v %v", r, fresh)
	}
	if r, _, fresh := tb.release(a, 60); r != AlreadyReleased || fresh {
		t.Fatalf("second release of a: %v %v", r, fresh)
	}
	// b expires at 200: a sweep at 199 keeps it, one at 200 takes it.
	if got := tb.sweep(199, nil); len(got) != 0 {
		t.Fatalf("sweep at 199 took %d", len(got))
	}
	if got := tb.sweep(200, nil); len(got) != 1 {
		t.Fatalf("sweep at 200 took %d, want b", len(got))
	}
	if r, _, fresh := tb.release(b, 300); r != Expired || fresh {
		t.Fatalf("release of b after its expiry: %v %v", r, fresh)
	}
	// The free ring is FIFO: a's slot (freed first) is reused first, and
	// then a's id names nothing any more, while b's still tells it expired.
	ic, _ := tb.reserve()
	c := tb.fill(ic, passZero, nil, 300, 400)
	if ic != ia {
		t.Fatalf("reserve gave slot %d, want %d (freed first)", ic, ia)
	}
	if r, _, _ := tb.release(a, 310); r != Unknown {
		t.Fatalf("release of a after its slot was reused: %v, want unknown", r)
	}
	if r, _, _ := tb.release(b, 310); r != Expired {
		t.Fatalf("release of b: %v, want expired", r)
	}
	if r, _, fresh := tb.release(c, 310); r != Released || !fresh {
		t.Fatalf("release of c: %v", r)
	}
	// A reserved slot given back is free again, its old id unknown.
	id, _ := tb.reserve()
	tb.unreserve(id)
	if tb.liveCount() != 0 {
		t.Fatalf("live %d", tb.liveCount())
	}
	if r, _, _ := tb.release(ID(1<<32|uint64(tb.cap)), 0); r != Unknown {
		t.Fatalf("release of a slot beyond the table: %v", r)
	}
}

func TestSweepSkipsShardsWithNothingDue(t *testing.T) {
	tb := newShardedTable(4, 2)
	for range 4 {
		i, _ := tb.reserve()
		tb.fill(i, passZero, nil, 0, 1000)
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
