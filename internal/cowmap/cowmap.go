// Package cowmap is a map read on every request and written rarely (a new
// group, a reload): a read is one atomic load and a map lookup, with no
// lock; a write copies the map under a mutex and swaps the copy in.
//
// It imports nothing of sluice, so that it sits below every package.
package cowmap

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Map is a copy-on-write map from K to V. The zero Map is empty and ready
// to use; a Map must not be copied after first use. Safe for concurrent
// use: reads never wait, writes are serialised.
type Map[K comparable, V any] struct {
	p  atomic.Pointer[map[K]V]
	mu sync.Mutex // serialises writes
}

// Load returns k's value and whether k is in the map, without a lock.
func (m *Map[K, V]) Load(k K) (V, bool) {
	v, ok := m.All()[k]
	return v, ok
}

// LoadOrNew returns k's value; the first time, it stores and returns
// create(k). create runs under the write lock: once per stored key, never
// beside another write, and it must not call the Map.
func (m *Map[K, V]) LoadOrNew(k K, create func(K) V) V {
	if v, ok := m.Load(k); ok {
		return v
	}
	return m.store(k, create)
}

func (m *Map[K, V]) store(k K, create func(K) V) V {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.All()
	if v, ok := old[k]; ok {
		return v
	}
	v := create(k)
	next := maps.Clone(old)
	if next == nil {
		next = make(map[K]V, 1)
	}
	next[k] = v
	m.p.Store(&next)
	return v
}

// Retain keeps the entries for which keep returns true and drops the
// others. keep runs under the write lock, once per entry, and it must not
// call the Map.
func (m *Map[K, V]) Retain(keep func(K, V) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.All()
	next := make(map[K]V, len(old))
	for k, v := range old {
		if keep(k, v) {
			next[k] = v
		}
	}
	m.p.Store(&next)
}

// Locked runs f with the entries under the write lock: no entry is stored
// or dropped while it runs. f must not modify all nor call the Map.
func (m *Map[K, V]) Locked(f func(all map[K]V)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m.All())
}

// All returns the entries as they are now, without a lock; the caller
// must not modify the map returned. A later write does not change it.
func (m *Map[K, V]) All() map[K]V {
	if p := m.p.Load(); p != nil {
		return *p
	}
	return nil
}
