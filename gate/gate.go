package gate

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/probe"
)

// Clock tells the gate the time. The zero Params use the real clock; tests
// inject one to drive rate limits and the control loop with chosen instants.
type Clock interface {
	Now() time.Time
}

// ResourceSampler reads the CPU, memory and CPU pressure of what the gate
// guards, once per control tick. *probe.Sampler satisfies it.
type ResourceSampler interface {
	Sample(now time.Time) probe.Resources
}

// NoResources is a ResourceSampler that knows no resource: a group's CPU,
// memory and CPU pressure targets stay idle, as on a platform that cannot
// measure them. Pass it as Params.Resources to run such targets on purpose
// without a sampler (tests do); New refuses them with no sampler at all.
var NoResources ResourceSampler = noResources{}

type noResources struct{}

func (noResources) Sample(now time.Time) probe.Resources {
	return unknownResources(now, "no resource sampler")
}

// Params configures a Gate. Config must have at least one group; the zero
// value of every other field means its default.
type Params struct {
	// Config is the configuration to run: the groups (the zero value of
	// each field means its default, see Group) and what they share. From a
	// TOML file, configs' Config.Gate converts one. New checks it.
	Config Config
	// ConfigSource names where Config came from (a file path) and ConfigHash
	// identifies its content, for the status read-out. An empty hash is
	// computed from Config.
	ConfigSource, ConfigHash string

	// Clock is the time source of the hot path (rate limits, latency) and the
	// control loop. Default: the real clock, read as a monotonic offset.
	Clock Clock
	// Resources samples CPU, memory and CPU pressure each tick: a
	// *probe.Sampler (probe.NewSampler), or NoResources. Required by a group
	// with a target on one of them (New and Reload refuse it otherwise);
	// without one the resource guard stays idle.
	Resources ResourceSampler

	// StateFile is where the learned limits are kept across restarts
	// (written every Config.SaveInterval and when Run returns, read by New).
	// Default "": none.
	StateFile string
	// StateMaxAge is the oldest a state file may be and still be restored
	// by New: limits learned longer ago describe a service that may have
	// changed since, so the groups start from their initial limits (and
	// RestoreInfo says why). Default spec.DefaultStateMaxAge (24h).
	StateMaxAge time.Duration

	// GlobalRate builds the rate limiter of a group whose rate has scope
	// "global", from the group (its defaults filled in): the quota of every
	// node together, in a shared store (package gate/redisrate keeps it in
	// Redis). It is called by New and by Reload for each group built (not for
	// a group a reload keeps as it is); see RateLimiter for when the gate
	// closes what it returns. A config with such a group is refused when it
	// is nil.
	GlobalRate func(g *Group) (RateLimiter, error)

	// OnChange, if set, is called by the control loop (synchronously, keep it
	// short) whenever a law changes a group's limit or rate, for logging.
	OnChange func(Change)
	// OnUnmoved, if set, is called by the control loop (synchronously) when
	// the targets a group's law ignores, because cutting the limit did not
	// move them, change: once when one is found so (worth a warning) and once
	// when it is acted on again.
	OnUnmoved func(UnmovedChange)
	// OnSave, if set, is called after every attempt to write the state file.
	OnSave func(path string, err error)
	// Observer, if set, sees every finished request and every queue wait
	// (for histograms). Nil costs nothing on the hot path.
	Observer Observer
}

// Change is one change a control law made to a group, for logs.
type Change struct {
	Group          string
	At             time.Time
	From, To       int     // concurrency limit
	RateFrom, Rate float64 // token rate, requests per second; 0 when not managed
	Reason         string
}

// UnmovedChange is a change of the resource targets a group's law ignores
// because its limit does not move them (adaptive.Unmoved), for logs.
type UnmovedChange struct {
	Group       string
	At          time.Time
	Before, Now adaptive.Unmoved
	// Reason is the law's reason when a target is newly ignored, such as
	// "cpu 98% not moved by the limit (target 80%): ignored"; "" when
	// targets are only acted on again.
	Reason string
}

// Gate admits requests to the groups of a configuration and runs their
// control loop. Build it with New; it is safe for concurrent use.
type Gate struct {
	table atomic.Pointer[table]

	clock     Clock     // nil: real time
	base      time.Time // instant of offset 0 on the hot path
	started   time.Time
	resources ResourceSampler
	global    func(g *Group) (RateLimiter, error)
	onChange  func(Change)
	onUnmoved func(UnmovedChange)
	onSave    func(string, error)
	observer  Observer // nil: none
	statePath string

	// Control-loop side, guarded by mu: Tick, Reload, Override, SaveState.
	mu       sync.Mutex
	lastTick time.Time
	lastSave time.Time
	ticks    uint64
	// retired are the groups reloads removed while requests were in flight
	// or queued in them, by name, until those are gone (Tick drops them) or
	// a reload adds a group of that name again, which takes them over.
	retired map[string]*group

	status  atomic.Pointer[gateStatus]
	saved   atomic.Pointer[saveStatus]
	restore RestoreInfo
}

// New builds a Gate running p.Config, with every group's limit restored from
// the state file when it holds one (clamped to the group's bounds). A state
// file that cannot be read or understood does not stop New: the groups start
// from their configured initial limits and RestoreInfo reports the problem.
// A config the gate cannot run is refused with the first problem, naming
// its group and field.
func New(p Params) (*Gate, error) {
	g := &Gate{
		clock:     p.Clock,
		resources: p.Resources,
		global:    p.GlobalRate,
		onChange:  p.OnChange,
		onUnmoved: p.OnUnmoved,
		onSave:    p.OnSave,
		observer:  p.Observer,
		statePath: p.StateFile,
		retired:   map[string]*group{},
	}
	cfg, err := g.check(p.Config)
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	if g.clock != nil {
		g.base = g.clock.Now()
	} else {
		g.base = time.Now()
	}
	g.started = g.base
	g.lastTick = g.base
	g.lastSave = g.base

	var st *stateFile
	if g.statePath != "" {
		if err := checkStateFolder(g.statePath); err != nil {
			return nil, err
		}
		maxAge := p.StateMaxAge
		if maxAge == 0 {
			maxAge = spec.DefaultStateMaxAge
		}
		st, g.restore = readState(g.statePath, g.base, maxAge)
	}
	t, err := g.buildTable(cfg, nil, st)
	if err != nil {
		return nil, err
	}
	t.source, t.hash = p.ConfigSource, p.ConfigHash
	if t.hash == "" {
		t.hash = configHash(cfg)
	}
	t.loaded = g.base
	g.table.Store(t)
	g.status.Store(&gateStatus{resources: unknownResources(g.base, "not sampled yet")})
	g.saved.Store(&saveStatus{})
	return g, nil
}

// Config returns the configuration the gate runs now, with its defaults
// filled in and the overrides in force. Its groups are shared: do not modify
// them (Group.Clone one to derive a change for Override).
func (g *Gate) Config() Config { return *g.table.Load().cfg }

// nanos is the hot path's clock: nanoseconds since g.base. With the real
// clock it is one monotonic read (time.Since takes its fast path for a base
// with a monotonic reading).
func (g *Gate) nanos() int64 {
	if g.clock != nil {
		return int64(g.clock.Now().Sub(g.base))
	}
	return int64(time.Since(g.base))
}

// at converts a hot-path offset to an instant for the rate limiters.
func (g *Gate) at(ns int64) time.Time { return g.base.Add(time.Duration(ns)) }

// now is the current instant on the gate's clock.
func (g *Gate) now() time.Time { return g.at(g.nanos()) }
