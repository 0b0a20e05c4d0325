package gate

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/limits"
)

// ReloadOptions qualify a Reload.
type ReloadOptions struct {
	// Source and Hash identify the new config for the status read-out, as
	// Params.ConfigSource and ConfigHash do.
	Source, Hash string
	// KeepOverride chooses, by group name, the runtime overrides in force
	// that the reload re-applies onto the new config (the fields they
	// changed, over the file's values); the others are cleared, in the same
	// swap of the running config, so no request sees some cleared and
	// others not yet. Nil clears them all: the file is the truth again.
	// KeepAllOverrides keeps every one.
	KeepOverride func(group string) bool
}

// KeepAllOverrides is a ReloadOptions.KeepOverride that keeps every override.
func KeepAllOverrides(string) bool { return true }

// ReloadResult says what a Reload did, by group name.
type ReloadResult struct {
	// Unchanged groups kept running as they were (learned limit, law state,
	// counters, per-key state); Changed groups were rebuilt, their laws
	// starting from the limit they had, their requests in flight and queued
	// kept; Added and Removed groups came and went.
	Unchanged, Changed, Added, Removed []string
	// KeptOverrides were re-applied; DroppedOverrides could not be (the new
	// config refuses them), with why.
	KeptOverrides    []string
	DroppedOverrides []error
}

// Reload swaps in a new configuration, its defaults filled in. It is checked
// first, as by New; a bad one is refused whole and the running one stays.
//
// A reload never lets a group exceed its new concurrency limit: the requests
// admitted or queued before it keep counting against their group until they
// are done.
//
//   - A group whose settings are the same (but for its match) runs on as it
//     is.
//   - A changed group is rebuilt from the new settings (a new law starting
//     from the limit in force, clamped to the new bounds; a new rate limiter)
//     on the old group's live state: its concurrency slots with the requests
//     holding them and waiting for them, the per-key use the fair share
//     counts, its latency recorders and counters. A limit lowered below the
//     requests in flight admits nothing until enough of them are done, as
//     when a law lowers it; waiters keep their place and are served once each
//     (a queue.max lowered below their number refuses newcomers, a new
//     max_wait applies to later waits). Per-key rate state starts afresh.
//   - A removed group's requests finish in it, outside the limits of the new
//     config. While any are left, a later reload that adds a group of the
//     same name again hands them to it as to a changed group (its law starts
//     afresh; its counters go on).
func (g *Gate) Reload(next Config, o ReloadOptions) (ReloadResult, error) {
	var res ReloadResult
	cfg, err := g.check(next)
	if err != nil {
		return res, fmt.Errorf("gate: reload: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.table.Load()

	file := cfg
	kept := map[string]*Override{}
	if o.KeepOverride != nil {
		for _, r := range old.routes {
			ov := r.g.override.Load()
			fc := cfg.Group(r.g.name)
			if ov == nil || fc == nil || !o.KeepOverride(r.g.name) {
				continue
			}
			c := fc.Clone()
			for _, ch := range ov.Changes {
				fieldByPath(ch.Path).set(&c, &ov.group)
			}
			next, err := g.replaceGroup(cfg, c)
			if err != nil {
				res.DroppedOverrides = append(res.DroppedOverrides,
					fmt.Errorf("gate: override dropped: %w", err)) // err names the group
				continue
			}
			cfg = next
			kept[r.g.name] = &Override{At: ov.At, Changes: diffFields(fc, cfg.Group(r.g.name)), group: *cfg.Group(r.g.name)}
			res.KeptOverrides = append(res.KeptOverrides, r.g.name)
		}
	}

	t, err := g.buildTable(cfg, old, nil)
	if err != nil {
		return ReloadResult{}, fmt.Errorf("gate: reload: %w", err)
	}
	for i := range cfg.Groups {
		c := &cfg.Groups[i]
		gr := t.byName[c.Name]
		prev := old.byName[c.Name]
		switch {
		case prev == nil:
			res.Added = append(res.Added, c.Name)
			if r := g.retired[c.Name]; r != nil { // buildTable built gr on it
				gr.resume(r)
				delete(g.retired, c.Name)
			}
		case prev == gr:
			res.Unchanged = append(res.Unchanged, c.Name)
			gr.cfg.Store(ptr(c.Clone())) // its match or mode may differ
			gr.setMode(c)
		default:
			res.Changed = append(res.Changed, c.Name)
			gr.inherit(prev)
		}
		gr.file = ptr(file.Group(c.Name).Clone())
		gr.override.Store(kept[c.Name])
	}
	for _, r := range old.routes {
		if t.byName[r.g.name] == nil {
			res.Removed = append(res.Removed, r.g.name)
			g.retired[r.g.name] = r.g
		}
	}
	g.dropRetired()
	t.source, t.hash, t.loaded = o.Source, o.Hash, g.now()
	if t.hash == "" {
		t.hash = configHash(file)
	}
	g.table.Store(t)
	// The groups replaced or removed take no more requests (but those that
	// loaded the old table a moment ago): their rate limiters are released.
	for _, r := range old.routes {
		if t.byName[r.g.name] != r.g {
			r.g.closeRate()
		}
	}
	return res, nil
}

// dropRetired forgets the removed groups with nothing left in flight or
// queued. Call with g.mu held.
func (g *Gate) dropRetired() {
	for name, r := range g.retired {
		if r.conc.InFlight()+r.conc.Queued() == 0 {
			delete(g.retired, name)
		}
	}
}

// adopt applies gr's settings to the live parts it shares with the group it
// takes over (see newGroup). Call with Gate.mu held once the reload is sure.
func (gr *group) adopt() {
	c := gr.cfg.Load()
	gr.setSlots(c, true)
	if gr.keys != nil {
		gr.keys.setMax(maxKeys(c))
	}
}

// resume makes gr, added by a reload, the owner of the live parts of r, a
// group of the same name that an earlier reload removed with requests left in
// it. Nobody has ticked r since: what its recorders hold is counted (as
// completions) but kept out of gr's first sample, as are its counters'
// changes, and the requests in r count as already in the gate when gr's
// arrivals are derived.
func (gr *group) resume(r *group) {
	gr.adopt()
	gr.recTicks = r.recTicks + 1
	lat := gr.lat.Snapshot(gr.tickTime(gr.recTicks))
	gr.addDone(&lat)
	gr.qwait.Snapshot(gr.tickTime(gr.recTicks))
	gr.prev = gr.counts()
	gr.lastInGate = gr.conc.InFlight() + gr.conc.Queued()
}

// inherit makes gr the continuation of the group o it replaces: it applies
// gr's settings to the live parts they share (slots, keys, recorders,
// counters: see newGroup) and carries over the control loop's view of the
// counters and recorders and the last change, so the read-outs go on and
// gr's first tick covers the interval since o's last one.
func (gr *group) inherit(o *group) {
	gr.adopt()
	gr.prev, gr.lastInGate, gr.lastInflight, gr.recTicks = o.prev, o.lastInGate, o.lastInflight, o.recTicks
	gr.drained.Store(o.drained.Load())
	gr.change.Store(o.change.Load())
	if st := o.globalStatus(); st != nil && gr.rate != nil {
		gr.rate.before = GlobalStatus{StoreStatus: limits.StoreStatus{StoreDecisions: st.StoreDecisions,
			FallbackDecisions: st.FallbackDecisions, Errors: st.Errors, Timeouts: st.Timeouts}}
	}
}

// Override is a runtime change of a group (admin PATCH) in force.
type Override struct {
	// At is when it was made.
	At time.Time
	// Changes are the fields it changed, against the loaded config.
	Changes []FieldChange
	group   spec.Group // the group as overridden
}

// FieldChange is one field an override changed.
type FieldChange struct {
	// Path is the field's key path, as in the TOML: "targets.latency".
	Path string
	// From is the loaded config's value, To the override's.
	From, To string
}

// Override changes a group at runtime: its mode and its rate rule's, its
// targets, concurrency bounds (min,
// max, initial, limit, backoff, tolerance), rate figures (rate, limit, window,
// burst, max_wait) and queue (max, max_wait, order, CoDel). The caller gives the
// whole group as it should be: a Clone of Config().Group(name), changed
// (the admin API decodes a JSON body onto it). The result is checked as New
// checks a config; changing anything else (the match, key, priority, law,
// algorithm or scope) needs a Reload and is refused.
//
// An override of the modes alone changes nothing else: the law runs on with
// its state (the limit it learned in shadow is the one it enforces).
// Otherwise the group is changed in place: the law is rebuilt from the new settings,
// starting from the limit (and rate) in force, clamped to the new bounds;
// per-key rate state is kept; the requests in flight and queued keep counting
// against the new limits (a limit lowered below the requests in flight
// admits nothing until enough of them are done; waiters keep their place). The
// override shows in the group's read-out until a Reload clears it (unless
// ReloadOptions.KeepOverride chooses it) or an Override restores the loaded values.
func (g *Gate) Override(c Group) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.table.Load()
	gr := t.byName[c.Name]
	if gr == nil {
		return fmt.Errorf("gate: override: %w: %q", ErrNoGroup, c.Name)
	}
	next, err := g.replaceGroup(t.cfg, c)
	if err != nil {
		return fmt.Errorf("gate: override: %w", err) // err names the group
	}
	cur, nc := gr.cfg.Load(), next.Group(c.Name)
	if fixed := structural(cur, nc); len(fixed) > 0 {
		return fmt.Errorf("gate: override of group %q: %s cannot change at runtime; reload the config",
			c.Name, strings.Join(fixed, ", "))
	}

	if sameLimits(cur, nc) { // only the modes (or nothing): the law runs on as it is
		gr.setMode(nc)
		gr.cfg.Store(ptr(nc.Clone()))
		g.storeOverride(t, gr, next, nc)
		return nil
	}
	rateChanged := !reflect.DeepEqual(cur.Rate, nc.Rate)
	s := seed{limit: gr.conc.Limit(), rate: lawRate(gr.pol.law)}
	managedMax := manageable(nc)
	if rateChanged {
		s.rate = managedMax // a new rate takes effect as given
	}
	pol, err := newPolicy(nc, s, managedMax)
	if err != nil {
		return fmt.Errorf("gate: override of group %q: %w", c.Name, err)
	}
	if rateChanged && gr.rate != nil {
		if err := gr.rate.apply(nc.Rate); err != nil {
			return fmt.Errorf("gate: override of group %q: %w", c.Name, err)
		}
	}
	gr.pol, gr.managedMax = pol, managedMax
	if r := lawRate(pol.law); r > 0 {
		_ = gr.rate.setRate(r)
	}
	gr.setSlots(nc, pol.qw == nil || nc.Queue.Order != cur.Queue.Order)
	gr.setMode(nc)
	gr.cfg.Store(ptr(nc.Clone()))
	g.storeOverride(t, gr, next, nc)
	return nil
}

// storeOverride records the override that made gr's config nc and swaps in
// the table of next. Call with g.mu held.
func (g *Gate) storeOverride(t *table, gr *group, next *Config, nc *spec.Group) {
	var ov *Override
	if ch := diffFields(gr.file, nc); len(ch) > 0 {
		ov = &Override{At: g.now(), Changes: ch, group: nc.Clone()}
	}
	gr.override.Store(ov)

	nt := *t
	nt.cfg = next
	nt.routes = slices.Clone(t.routes)
	for i := range nt.routes {
		nt.routes[i].match = &next.Groups[i].Match
	}
	g.table.Store(&nt)
}

// field is one field an override may change.
type field struct {
	path string
	get  func(*spec.Group) any // nil when absent (no rate)
	set  func(dst, src *spec.Group)
}

func rateField(path string, get func(*spec.Rate) any, set func(dst, src *spec.Rate)) field {
	return field{path,
		func(g *spec.Group) any {
			if g.Rate == nil {
				return nil
			}
			return get(g.Rate)
		},
		func(d, s *spec.Group) {
			if d.Rate != nil && s.Rate != nil {
				set(d.Rate, s.Rate)
			}
		}}
}

// knobFields are the fields of the laws' knobs (adaptive.KnobNames), in
// the order of the registry of laws.
func knobFields() []field {
	var fs []field
	for _, name := range adaptive.KnobNames() {
		fs = append(fs, field{"concurrency." + name,
			func(g *spec.Group) any {
				if v := g.Concurrency.Knob(name); v != nil {
					return *v
				}
				return nil
			},
			func(d, s *spec.Group) {
				if dv, sv := d.Concurrency.Knob(name), s.Concurrency.Knob(name); dv != nil && sv != nil {
					*dv = *sv
				}
			}})
	}
	return fs
}

// overridable are the fields Override may change.
var overridable = slices.Concat([]field{
	{"mode", func(g *spec.Group) any { return g.Mode }, func(d, s *spec.Group) { d.Mode = s.Mode }},
	rateField("rate.mode", func(r *spec.Rate) any { return r.Mode }, func(d, s *spec.Rate) { d.Mode = s.Mode }),
	{"targets.latency", func(g *spec.Group) any { return g.Targets.Latency }, func(d, s *spec.Group) { d.Targets.Latency = s.Targets.Latency }},
	{"targets.quantile", func(g *spec.Group) any { return g.Targets.Quantile }, func(d, s *spec.Group) { d.Targets.Quantile = s.Targets.Quantile }},
	{"targets.cpu", func(g *spec.Group) any { return g.Targets.CPU }, func(d, s *spec.Group) { d.Targets.CPU = s.Targets.CPU }},
	{"targets.memory", func(g *spec.Group) any { return g.Targets.Memory }, func(d, s *spec.Group) { d.Targets.Memory = s.Targets.Memory }},
	{"concurrency.limit", func(g *spec.Group) any { return g.Concurrency.Limit }, func(d, s *spec.Group) { d.Concurrency.Limit = s.Concurrency.Limit }},
	{"concurrency.initial", func(g *spec.Group) any { return g.Concurrency.Initial }, func(d, s *spec.Group) { d.Concurrency.Initial = s.Concurrency.Initial }},
	{"concurrency.min", func(g *spec.Group) any { return g.Concurrency.Min }, func(d, s *spec.Group) { d.Concurrency.Min = s.Concurrency.Min }},
	{"concurrency.max", func(g *spec.Group) any { return g.Concurrency.Max }, func(d, s *spec.Group) { d.Concurrency.Max = s.Concurrency.Max }},
}, knobFields(), []field{
	rateField("rate.rate", func(r *spec.Rate) any { return r.Rate }, func(d, s *spec.Rate) { d.Rate = s.Rate }),
	rateField("rate.limit", func(r *spec.Rate) any { return r.Limit }, func(d, s *spec.Rate) { d.Limit = s.Limit }),
	rateField("rate.window", func(r *spec.Rate) any { return r.Window }, func(d, s *spec.Rate) { d.Window = s.Window }),
	rateField("rate.burst", func(r *spec.Rate) any { return r.Burst }, func(d, s *spec.Rate) { d.Burst = s.Burst }),
	rateField("rate.max_wait", func(r *spec.Rate) any { return r.MaxWait }, func(d, s *spec.Rate) { d.MaxWait = s.MaxWait }),
	{"queue.order", func(g *spec.Group) any { return g.Queue.Order }, func(d, s *spec.Group) { d.Queue.Order = s.Queue.Order }},
	{"queue.max", func(g *spec.Group) any { return g.Queue.Max }, func(d, s *spec.Group) { d.Queue.Max = s.Queue.Max }},
	{"queue.max_wait", func(g *spec.Group) any { return g.Queue.MaxWait }, func(d, s *spec.Group) { d.Queue.MaxWait = s.Queue.MaxWait }},
	{"queue.codel_target", func(g *spec.Group) any { return g.Queue.CodelTarget }, func(d, s *spec.Group) { d.Queue.CodelTarget = s.Queue.CodelTarget }},
	{"queue.codel_interval", func(g *spec.Group) any { return g.Queue.CodelInterval }, func(d, s *spec.Group) { d.Queue.CodelInterval = s.Queue.CodelInterval }},
})

func fieldByPath(path string) field {
	for _, f := range overridable {
		if f.path == path {
			return f
		}
	}
	return field{path: path, get: func(*spec.Group) any { return nil }, set: func(_, _ *spec.Group) {}}
}

// diffFields lists the overridable fields in which b differs from a.
func diffFields(a, b *spec.Group) []FieldChange {
	var out []FieldChange
	for _, f := range overridable {
		x, y := f.get(a), f.get(b)
		if !reflect.DeepEqual(x, y) {
			out = append(out, FieldChange{Path: f.path, From: fmt.Sprint(x), To: fmt.Sprint(y)})
		}
	}
	return out
}

// structural names the parts of the group in which b differs from a beyond
// the overridable fields.
func structural(a, b *spec.Group) []string {
	x := a.Clone()
	for _, f := range overridable {
		f.set(&x, b)
	}
	if reflect.DeepEqual(&x, b) {
		return nil
	}
	var out []string
	check := func(name string, same bool) {
		if !same {
			out = append(out, name)
		}
	}
	check("match", reflect.DeepEqual(x.Match, b.Match))
	check("key", x.Key == b.Key)
	check("priority", x.Priority == b.Priority && x.DefaultPriority == b.DefaultPriority)
	check("concurrency.law", x.Concurrency.Law == b.Concurrency.Law)
	check("rate", reflect.DeepEqual(x.Rate, b.Rate))
	if len(out) == 0 {
		out = append(out, "a setting")
	}
	return out
}
