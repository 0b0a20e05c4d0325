package permit

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/internal/cowmap"
	"github.com/sluicehq/sluice/internal/defaults"
)

// Lease bounds.
const (
	// DefaultLease is the lease of a group without one of its own.
	DefaultLease = defaults.PermitLease
	// MaxLease is the longest lease accepted.
	MaxLease = 24 * time.Hour
)

// Leases sets how long a permit may be held before it is counted as
// expired and its slot freed.
type Leases struct {
	// Default is the lease of every group not in Groups. Zero: DefaultLease.
	Default time.Duration
	// Groups holds the leases of groups by name.
	Groups map[string]time.Duration
}

// LeasesOf returns the leases of a config's [permit] section: its lease
// for every group, and [[permit.group]]'s for theirs.
func LeasesOf(c *configs.Permit) Leases {
	l := Leases{Default: time.Duration(c.Lease)}
	if len(c.Groups) > 0 {
		l.Groups = make(map[string]time.Duration, len(c.Groups))
		for _, g := range c.Groups {
			l.Groups[g.Name] = time.Duration(g.Lease)
		}
	}
	return l
}

// Validate reports every lease out of (0, MaxLease], the default's zero
// aside.
func (l Leases) Validate() error {
	var errs []error
	if l.Default != 0 && (l.Default < time.Millisecond || l.Default > MaxLease) {
		errs = append(errs, fmt.Errorf("permit: default lease %v: want between 1ms and %v", l.Default, MaxLease))
	}
	names := make([]string, 0, len(l.Groups))
	for name := range l.Groups {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if d := l.Groups[name]; d < time.Millisecond || d > MaxLease {
			errs = append(errs, fmt.Errorf("permit: lease of group %q %v: want between 1ms and %v", name, d, MaxLease))
		}
	}
	return errors.Join(errs...)
}

// of returns the lease of group name.
func (l Leases) of(name string) time.Duration {
	if d, ok := l.Groups[name]; ok {
		return d
	}
	if l.Default > 0 {
		return l.Default
	}
	return DefaultLease
}

// groupEntry is the service's state of one gate group: its lease and its
// counters. Entries are made on a group's first permit request and kept.
type groupEntry struct {
	name  string
	lease atomic.Int64 // ns

	granted  atomic.Uint64
	refused  [adaptive.NumRejections]atomic.Uint64
	canceled atomic.Uint64    // the caller went away while it waited
	released [3]atomic.Uint64 // by gate.Outcome
	expired  atomic.Uint64    // leases that expired unreleased (ignored by the law)
	late     atomic.Uint64    // releases that came after their lease expired
}

// groups is the group entries, in a copy-on-write map: a lookup is one
// atomic load and a map read; a new group copies the map.
type groups struct {
	m cowmap.Map[string, *groupEntry]
	// leases is stored under m's write lock (setLeases), so that a group
	// entered meanwhile takes the new leases.
	leases atomic.Pointer[Leases]
}

func newGroups(l Leases) *groups {
	g := &groups{}
	g.leases.Store(&l)
	return g
}

func (g *groups) get(name string) *groupEntry {
	return g.m.LoadOrNew(name, g.newEntry)
}

func (g *groups) newEntry(name string) *groupEntry {
	e := &groupEntry{name: name}
	e.lease.Store(int64(g.leases.Load().of(name)))
	return e
}

// setLeases applies l to every group, known and to come.
func (g *groups) setLeases(l Leases) {
	g.m.Locked(func(all map[string]*groupEntry) {
		g.leases.Store(&l)
		for name, e := range all {
			e.lease.Store(int64(l.of(name)))
		}
	})
}

// leaseOf returns the lease a permit of group name gets now.
func (g *groups) leaseOf(name string) time.Duration {
	if e, ok := g.m.Load(name); ok {
		return time.Duration(e.lease.Load())
	}
	return g.leases.Load().of(name)
}

func (g *groups) all() []*groupEntry {
	m := g.m.All()
	out := make([]*groupEntry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
