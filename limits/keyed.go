package limits

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// KeyedParams configures a Keyed limiter. Zero fields mean their default.
type KeyedParams struct {
	// MaxKeys bounds the number of keys held at once (default
	// DefaultMaxKeys, 100,000: the daemon's max_keys too). When
	// a new key arrives and the limiter is full, its shard drops an idle
	// key, else the least recently used of a sample (see Keyed).
	MaxKeys int
	// Shards is the number of independently locked shards, rounded up to a
	// power of two (default 256, at most MaxKeys).
	Shards int
}

// Defaults for KeyedParams.
const (
	// DefaultMaxKeys is also the default of a group's rate.max_keys
	// (spec.DefaultMaxKeys), so a zero KeyedParams and a config file that
	// leaves max_keys out bound the keys alike.
	DefaultMaxKeys = 100_000
	DefaultShards  = 256
)

// evictSample is how many entries a full shard examines to find a victim,
// as Redis's approximated LRU does (maxmemory-samples).
const evictSample = 8

// sweepStep is how many entries every new key examines, and drops if idle,
// so idle keys are swept incrementally by the traffic itself.
const sweepStep = 2

// Validate reports every problem with p.
func (p KeyedParams) Validate() error {
	var ps problems
	if p.MaxKeys < 0 {
		ps.add("keyed max keys must not be negative, got %d", p.MaxKeys)
	}
	if p.Shards < 0 || p.Shards > 1<<16 {
		ps.add("keyed shards must be between 0 and 65536, got %d", p.Shards)
	}
	return ps.err()
}

// Keyed applies one rate algorithm per key (per IP, per user, per endpoint).
//
// Memory: parameters are shared (the template's), and each key holds only
// its algorithm state (8 bytes for the buckets, 16 for FixedWindow and the
// warm-up bucket, 24 for SlidingWindow) and its last use, in a plain map
// per shard. Measured at a million keys of 8–11 bytes, index and key bytes
// included (BenchmarkKeyedIdleKeys): 100 bytes per key for TokenBucket,
// LeakyBucket and LeakyQueue, 117 for FixedWindow and the warm-up bucket,
// 133 for SlidingWindow. SlidingLog and SlidingBuckets keep a slice per key
// and are the memory-heavy exceptions: 247 bytes for a key with one logged
// instant (plus 16 per further instant), 231 with 6 sub-windows (plus 8 per
// further sub-window).
//
// Keys are spread by hash over Shards shards, each with its own mutex, so
// there is no global lock. The lookup of an existing key does not allocate;
// a new key copies its bytes once.
//
// Bound and eviction: at most MaxKeys keys are held (a count shared by the
// shards; a new key arriving in an empty shard of a full limiter is let in,
// so the count can exceed MaxKeys by at most Shards-1 until later arrivals
// evict), and no shard holds more than twice its share, MaxKeys·2/Shards.
// A key whose state is back to fresh (a full bucket, an expired window) is
// idle: dropping it changes no decision. Every new key examines a couple of
// entries of its shard and drops the idle ones (an incremental sweep, no
// stop-the-world pass); Sweep drops all idle keys, one shard at a time.
// When a new key arrives and the limiter (or its shard) is full, its shard
// drops an idle key if its sample of evictSample entries holds one, else the
// least recently used key of that sample (Redis's approximated LRU). The
// new key is always served, never refused; an evicted key that returns
// starts fresh, so under a flood of distinct keys larger than MaxKeys an
// active key can lose its history: size MaxKeys above the active set.
//
// Parameters are the template's and shared with it: a setter on the template
// (SetRate, SetLimit, ...) applies to every key, carried over per shard at
// the shard's next decision. Safe for concurrent use.
type Keyed struct {
	store    keyedStore
	template Limiter
	seed     maphash.Seed
}

// keyable is implemented by the rate algorithms of this package.
type keyable interface {
	newStore(shards, maxKeys int) keyedStore
}

// keyedStore is a Keyed limiter's storage, generic over the algorithm.
type keyedStore interface {
	allow(key string, h uint64, now, n int64) Result
	adjust(key string, h uint64, now, n int64) bool
	sweep(now int64) int
	len() int
}

// NewKeyed returns a per-key limiter applying template's algorithm and
// (shared) parameters to each key. template must be one of this package's
// rate algorithms; its own state is separate and unused by Keyed.
func NewKeyed(template Limiter, p KeyedParams) (*Keyed, error) {
	var ps problems
	if err := p.Validate(); err != nil {
		ps = append(ps, err)
	}
	kt, ok := template.(keyable)
	if !ok {
		ps.add("keyed template must be a rate limiter of package limits, got %T", template)
	}
	if len(ps) > 0 {
		return nil, ps.err()
	}
	maxKeys := p.MaxKeys
	if maxKeys == 0 {
		maxKeys = DefaultMaxKeys
	}
	shards := p.Shards
	if shards == 0 {
		shards = DefaultShards
	}
	shards = 1 << bits.Len(uint(shards-1)) // round up to a power of two
	for shards > maxKeys {
		shards /= 2
	}
	return &Keyed{
		store:    kt.newStore(shards, maxKeys),
		template: template,
		seed:     maphash.MakeSeed(),
	}, nil
}

// AllowAt decides on a request of cost n for key at now, with the template
// algorithm's semantics. A probe (n <= 0) of an unknown key reports the
// fresh state and stores nothing.
func (k *Keyed) AllowAt(key string, now time.Time, n int64) Result {
	return k.store.allow(key, maphash.String(k.seed, key), nanos(now), units(n))
}

// AdjustAt charges key n more units at now (n < 0 gives them back), with
// the template algorithm's semantics (see Adjuster); it reports false, and
// changes nothing, for an algorithm that cannot. A charge to a key not held
// holds it (its debt is state); a refund to one is nothing.
func (k *Keyed) AdjustAt(key string, now time.Time, n int64) bool {
	return k.store.adjust(key, maphash.String(k.seed, key), nanos(now), n)
}

// Allow is AllowAt(key, time.Now(), n).
func (k *Keyed) Allow(key string, n int64) Result { return k.AllowAt(key, time.Now(), n) }

// Policy is the template's policy, which every key follows.
func (k *Keyed) Policy() Policy { return k.template.Policy() }

// Len returns the number of keys held.
func (k *Keyed) Len() int { return k.store.len() }

// Sweep drops every idle key (one whose state is back to fresh at now) and
// returns how many it dropped. It locks one shard at a time, so requests to
// other shards proceed meanwhile. Calling it is optional: new keys sweep
// their shard incrementally, and the key bound holds regardless.
func (k *Keyed) Sweep(now time.Time) int { return k.store.sweep(nanos(now)) }

// String describes the limiter for logs.
func (k *Keyed) String() string {
	return fmt.Sprintf("limits.Keyed(%T, %d keys)", k.template, k.Len())
}

type entry[S any] struct {
	s    S
	last int64 // internal time of the last request
}

type shard[S, P any] struct {
	mu   sync.Mutex
	seen *P // the parameters the states are expressed in
	m    map[string]entry[S]
	// e is the entry being worked on. Model methods are called through a
	// generic dictionary, so a pointer to a local would escape to the heap;
	// a pointer into the (already heap-allocated) shard does not allocate.
	e entry[S]
	_ [32]byte // keep shards on separate cache lines
}

type store[S, P any, M model[S, P]] struct {
	cur     *atomic.Pointer[P]
	shards  []shard[S, P]
	mask    uint64
	keys    atomic.Int64 // keys held, all shards
	maxKeys int64
	// shardCap bounds one shard at twice its fair share, so that a skewed
	// hash cannot let one shard hold most keys.
	shardCap int
}

func newStore[S, P any, M model[S, P]](cur *atomic.Pointer[P], shards, maxKeys int) *store[S, P, M] {
	st := &store[S, P, M]{
		cur:      cur,
		shards:   make([]shard[S, P], shards),
		mask:     uint64(shards - 1),
		maxKeys:  int64(maxKeys),
		shardCap: max(1, 2*maxKeys/shards),
	}
	p := cur.Load()
	for i := range st.shards {
		st.shards[i].seen = p
		st.shards[i].m = make(map[string]entry[S])
	}
	return st
}

func (st *store[S, P, M]) allow(key string, h uint64, now, n int64) Result {
	sh := &st.shards[h&st.mask]
	sh.mu.Lock()
	p := st.cur.Load()
	st.carry(sh, p, now)
	var ok bool
	sh.e, ok = sh.m[key]
	r := M(p).allow(&sh.e.s, now, n)
	if !ok {
		if M(p).idle(&sh.e.s, now) { // nothing to remember (a probe, a refusal)
			sh.e = entry[S]{}
			sh.mu.Unlock()
			return r
		}
		e := sh.e
		st.makeRoom(sh, p, now)
		sh.e = e
		key = strings.Clone(key)
		st.keys.Add(1)
	}
	sh.e.last = max(sh.e.last, now)
	sh.m[key] = sh.e
	sh.e = entry[S]{} // hold no slice of a state that may be dropped
	sh.mu.Unlock()
	return r
}

// carry carries every state of sh over to the parameters p at now, if they
// changed since sh last saw them. Called with sh.mu held.
func (st *store[S, P, M]) carry(sh *shard[S, P], p *P, now int64) {
	if p == sh.seen {
		return
	}
	for k, e := range sh.m {
		sh.e = e
		M(p).adopt(&sh.e.s, sh.seen, now)
		sh.m[k] = sh.e
	}
	sh.seen = p
}

// adjuster is a model whose state takes a correction (Adjuster).
type adjuster[S any] interface {
	adjustState(s *S, now, n int64)
}

func (st *store[S, P, M]) adjust(key string, h uint64, now, n int64) bool {
	if _, ok := any(M(st.cur.Load())).(adjuster[S]); !ok {
		return false
	}
	sh := &st.shards[h&st.mask]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	p := st.cur.Load()
	st.carry(sh, p, now)
	e, held := sh.m[key]
	any(M(p)).(adjuster[S]).adjustState(&e.s, now, n)
	if !held {
		if M(p).idle(&e.s, now) {
			return true
		}
		st.makeRoom(sh, p, now)
		key = strings.Clone(key)
		st.keys.Add(1)
	}
	e.last = max(e.last, now)
	sh.m[key] = e
	sh.e = entry[S]{}
	return true
}

// makeRoom sweeps a few entries of sh and, if the limiter or sh is full,
// evicts one of sh.
func (st *store[S, P, M]) makeRoom(sh *shard[S, P], p *P, now int64) {
	full := st.keys.Load() >= st.maxKeys || len(sh.m) >= st.shardCap
	budget := sweepStep
	if full {
		budget = evictSample
	}
	var victim string
	oldest := int64(-1)
	for k, e := range sh.m { // map iteration starts at a random entry
		sh.e = e
		if M(p).idle(&sh.e.s, now) {
			delete(sh.m, k)
			st.keys.Add(-1)
			full = false
		} else if oldest < 0 || e.last < oldest {
			victim, oldest = k, e.last
		}
		if budget--; budget == 0 {
			break
		}
	}
	if full && oldest >= 0 {
		delete(sh.m, victim)
		st.keys.Add(-1)
	}
}

func (st *store[S, P, M]) sweep(now int64) int {
	dropped := 0
	for i := range st.shards {
		sh := &st.shards[i]
		sh.mu.Lock()
		p := st.cur.Load()
		for k, e := range sh.m {
			sh.e = e
			if p != sh.seen {
				M(p).adopt(&sh.e.s, sh.seen, now)
				sh.m[k] = sh.e
			}
			if M(p).idle(&sh.e.s, now) {
				delete(sh.m, k)
				st.keys.Add(-1)
				dropped++
			}
		}
		sh.e = entry[S]{}
		sh.seen = p
		sh.mu.Unlock()
	}
	return dropped
}

func (st *store[S, P, M]) len() int { return int(st.keys.Load()) }
