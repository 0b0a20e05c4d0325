// Package topk keeps the keys seen most often in a stream in bounded memory,
// with the Space-Saving algorithm (Metwally, Agrawal and El Abbadi, 2005): k
// counters; a key already counted adds one to its counter; a new key takes
// a free counter, or else the smallest one, whose count it inherits plus one
// and records as its possible overestimate. Every key seen more than
// total/k times is in the summary, and each count is at most its Error
// above the key's true count.
//
// sluice keeps one Summary per group, of the keys it rejects, so that an
// operator can see who is being limited without a metric label per key.
package topk

import (
	"cmp"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
)

// Summary is a Space-Saving summary of at most k keys. Its methods are safe
// for concurrent use. Add never waits: when another goroutine holds the
// summary it skips the key (and says so), so recording on a hot path never
// queues behind the summary's lock; under contention the summary samples the
// stream instead of counting all of it. The zero Summary is not usable: make
// one with New.
type Summary struct {
	seed    maphash.Seed
	mu      sync.Mutex
	entries []Entry       // at most cap(entries) == k; unordered
	hashes  []uint64      // hashes[i] is entries[i].Key's, compared before the key
	total   uint64        // keys added (not skipped) since the last Decay, decayed as the counts are
	skipped atomic.Uint64 // keys Add skipped because the summary was busy
}

// Entry is one key of a summary.
type Entry struct {
	Key string
	// Count is the key's estimated count: at least its true count since it
	// entered the summary, at most Error above its true count overall.
	Count uint64
	// Error bounds Count's overestimate: the count the key inherited when
	// it took another key's counter (0 for a key counted from its first
	// sight).
	Error uint64
	// Tag is the tag of the key's latest Add (for sluice, the rejection
	// reason).
	Tag uint8
}

// New returns a summary of at most k keys (k ≥ 1; a smaller k is 1). It
// allocates its k entries now, so Add allocates nothing.
func New(k int) *Summary {
	k = max(k, 1)
	return &Summary{seed: maphash.MakeSeed(), entries: make([]Entry, 0, k), hashes: make([]uint64, 0, k)}
}

// Add counts key once, with tag, and reports whether it was counted: false
// when the summary was busy with another goroutine (the key is then skipped,
// not queued). It does not allocate: key is kept as given, so pass a string
// that is not later modified (Go strings are not).
func (s *Summary) Add(key string, tag uint8) bool {
	h := maphash.String(s.seed, key)
	if !s.mu.TryLock() {
		s.skipped.Add(1)
		return false
	}
	defer s.mu.Unlock()
	s.total++
	min := -1
	for i, eh := range s.hashes {
		e := &s.entries[i]
		if eh == h && e.Key == key {
			e.Count++
			e.Tag = tag
			return true
		}
		if min < 0 || e.Count < s.entries[min].Count {
			min = i
		}
	}
	if len(s.entries) < cap(s.entries) {
		s.entries = append(s.entries, Entry{Key: key, Count: 1, Tag: tag})
		s.hashes = append(s.hashes, h)
		return true
	}
	e := &s.entries[min]
	*e = Entry{Key: key, Count: e.Count + 1, Error: e.Count, Tag: tag}
	s.hashes[min] = h
	return true
}

// Top returns the n keys with the highest counts (all of them when n ≤ 0 or
// beyond their number), highest first, ties by key; total is the number of
// keys counted since the last Decay (decayed with the counts), skipped the
// number Add skipped since New. It allocates the slice it returns.
func (s *Summary) Top(n int) (top []Entry, total, skipped uint64) {
	s.mu.Lock()
	top = slices.Clone(s.entries)
	total = s.total
	s.mu.Unlock()
	skipped = s.skipped.Load()
	slices.SortFunc(top, func(a, b Entry) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if n > 0 && n < len(top) {
		top = top[:n]
	}
	return top, total, skipped
}

// Decay halves every count, error and the total, and drops the keys whose
// count falls to 0, so that the summary follows who is counted now rather
// than since the start: call it at a fixed period (sluice: every minute),
// and a key's count is about its rate over the last two periods.
func (s *Summary) Decay() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total /= 2
	n := 0
	for i, e := range s.entries {
		e.Count /= 2
		e.Error /= 2
		if e.Count > 0 {
			s.entries[n], s.hashes[n] = e, s.hashes[i]
			n++
		}
	}
	clear(s.entries[n:]) // let go of the dropped keys' strings
	s.entries, s.hashes = s.entries[:n], s.hashes[:n]
}

// Len returns how many keys the summary holds now.
func (s *Summary) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
