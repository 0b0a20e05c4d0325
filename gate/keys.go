package gate

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
)

// keyShards is the number of independently locked shards of a keyTable.
const keyShards = 64

// keyState is one key's share of its group: the slots it holds and its use
// (slots held plus requests queued or being decided). A Pass holds a pointer
// to it, so Done finds it without a lookup.
type keyState struct {
	held atomic.Int32
	use  atomic.Int32
}

type keyShard struct {
	mu sync.Mutex
	m  map[string]*keyState
	_  [64 - 16]byte // keep neighbouring shards' mutexes off one cache line
}

// keyTable counts, per key, the slots held and in use, for the fair share of
// a group's limit (adaptive.FairShare). Keys are spread over shards by hash,
// each with its own mutex: no global lock. Looking up a known key does not
// allocate; a new key allocates its state and a copy of its bytes once.
//
// Memory is bounded: a key whose use is zero is idle and may be dropped at
// any time (its counters are zero, so dropping it changes nothing). New keys
// drop a few idle keys of their shard once the table holds max keys, and the
// control loop sweeps one shard per tick. Keys in use are never dropped; there
// are at most as many as requests in flight or waiting.
type keyTable struct {
	seed   maphash.Seed
	max    atomic.Int64 // keys held before new keys drop idle ones
	n      atomic.Int64 // keys held
	active atomic.Int64 // keys in use
	shards [keyShards]keyShard
}

func newKeyTable(max int) *keyTable {
	t := &keyTable{seed: maphash.MakeSeed()}
	t.max.Store(int64(max))
	for i := range t.shards {
		t.shards[i].m = make(map[string]*keyState)
	}
	return t
}

// enter counts one more use of key and returns its state and the number of
// keys in use, this one included.
func (t *keyTable) enter(key string) (*keyState, int) {
	sh := &t.shards[maphash.String(t.seed, key)&(keyShards-1)]
	sh.mu.Lock()
	ks := sh.m[key]
	if ks == nil {
		if t.n.Load() >= t.max.Load() {
			t.n.Add(-int64(sh.dropIdle(evictBatch)))
		}
		ks = new(keyState)
		sh.m[strings.Clone(key)] = ks
		t.n.Add(1)
	}
	if ks.use.Add(1) == 1 {
		t.active.Add(1)
	}
	sh.mu.Unlock()
	return ks, int(t.active.Load())
}

// leave undoes one use of ks. It takes no lock: a key is dropped only under
// its shard's lock while its use is zero, and its use rises only under that
// lock, so a key with a use to leave is never dropped.
func (t *keyTable) leave(ks *keyState) {
	if ks.use.Add(-1) == 0 {
		t.active.Add(-1)
	}
}

// evictBatch bounds the idle keys a new key drops from a full table.
const evictBatch = 8

// dropIdle deletes up to n idle keys of the shard (all of them for n < 0) and
// returns how many it deleted. Call with sh.mu held.
func (sh *keyShard) dropIdle(n int) int {
	dropped, seen := 0, 0
	for k, ks := range sh.m {
		if ks.use.Load() == 0 {
			delete(sh.m, k)
			dropped++
			if dropped == n {
				break
			}
		}
		if seen++; n > 0 && seen >= 4*n {
			break
		}
	}
	return dropped
}

// setMax changes the bound on the keys held: a reload's rate.max_keys. A
// lower bound is reached by dropping idle keys as new ones come and by the
// sweeps.
func (t *keyTable) setMax(max int) { t.max.Store(int64(max)) }

// sweep drops every idle key of shard i.
func (t *keyTable) sweep(i int) {
	sh := &t.shards[i%keyShards]
	sh.mu.Lock()
	t.n.Add(-int64(sh.dropIdle(-1)))
	sh.mu.Unlock()
}

// len is the number of keys held.
func (t *keyTable) len() int { return int(t.n.Load()) }
