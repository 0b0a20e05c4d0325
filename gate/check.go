package gate

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/limits"
)

// ErrNoGroup is returned (wrapped) by Override for a group the running
// config does not have.
var ErrNoGroup = errors.New("gate: no such group")

// check returns c with its defaults filled in, or the first problem that
// keeps the gate from running it. The values themselves (bounds, rates,
// waits) are checked by the laws and limiters built from them.
func (g *Gate) check(c Config) (*Config, error) {
	c = c.WithDefaults()
	if len(c.Groups) == 0 {
		return nil, errors.New("gate: the config has no group")
	}
	seen := make(map[string]bool, len(c.Groups))
	for i := range c.Groups {
		gc := &c.Groups[i]
		if err := g.checkGroup(gc); err != nil {
			return nil, err
		}
		if seen[gc.Name] {
			return nil, fmt.Errorf("gate: two groups are called %q", gc.Name)
		}
		seen[gc.Name] = true
	}
	if last := &c.Groups[len(c.Groups)-1]; !last.Match.CatchAll() {
		return nil, fmt.Errorf("gate: the last group, %q, must accept every request (an empty Match, or the path prefix \"/\"): "+
			"it takes the requests no other group does", last.Name)
	}
	return &c, nil
}

// checkGroup checks what the gate reads of c itself: its name, key,
// priority, modes, and that its resource targets have a sampler to see them by.
func (g *Gate) checkGroup(c *Group) error {
	if c.Name == "" {
		return errors.New("gate: a group has no name")
	}
	if err := c.Key.Check(); err != nil {
		return fmt.Errorf("gate: group %q: key: %w", c.Name, err)
	}
	if err := c.Priority.Check(); err != nil {
		return fmt.Errorf("gate: group %q: priority: %w", c.Name, err)
	}
	if _, ok := c.Priority.Header(); ok && c.DefaultPriority.Rank() < 0 {
		return fmt.Errorf(`gate: group %q: default priority must be "critical", "default" or "sheddable", got %q`, c.Name, c.DefaultPriority)
	}
	if err := c.Mode.Check(); err != nil {
		return fmt.Errorf("gate: group %q: %w", c.Name, err)
	}
	if r := c.Rate; r != nil {
		if err := r.Mode.Check(); err != nil {
			return fmt.Errorf("gate: group %q: rate: %w", c.Name, err)
		}
	}
	switch c.Queue.Order {
	case spec.OrderFIFO, spec.OrderLIFO, spec.OrderAdaptive:
	default:
		return fmt.Errorf(`gate: group %q: queue order must be "fifo", "lifo" or "adaptive", got %q`, c.Name, c.Queue.Order)
	}
	if c.Concurrency.Custom != nil && c.Concurrency.Law == spec.LawFixed {
		return fmt.Errorf(`gate: group %q: a custom law cannot be named "fixed"`, c.Name)
	}
	if c.Concurrency.FixedLimit() && c.Concurrency.Limit < 1 {
		return fmt.Errorf(`gate: group %q: law %q needs a limit of at least 1, got %d`, c.Name, c.Concurrency.Law, c.Concurrency.Limit)
	}
	if g.resources == nil {
		for _, t := range [...]struct {
			name string
			v    float64
		}{{"cpu", c.Targets.CPU}, {"memory", c.Targets.Memory}, {"cpu_pressure", c.Targets.CPUPressure}} {
			if t.v != 0 {
				return fmt.Errorf("gate: group %q: targets.%s %v needs a resource sampler to see it: "+
					"set Params.Resources (a *probe.Sampler, or NoResources to leave the target idle)", c.Name, t.name, t.v)
			}
		}
	}
	return nil
}

// buildable reports why c's law, policy, queue or local rate limit cannot
// be built, nil when they can: a group that check accepts may still have
// values its law or limiter refuses.
func buildable(c *Group) error {
	pol, err := newPolicy(c, seed{}, manageable(c))
	if err != nil {
		return err
	}
	if err := (limits.ConcurrencyParams{Limit: min(pol.law.Limit(), limits.MaxConcurrency), MaxQueue: c.Queue.Max,
		MaxWait: c.Queue.MaxWait, Order: limits.FIFO}).Validate(); err != nil {
		return err
	}
	if r := c.Rate; r != nil && r.Scope != spec.ScopeGlobal {
		alg, ok := limits.LookupAlgorithm(string(r.Algorithm))
		if !ok {
			return fmt.Errorf("rate: unknown algorithm %q", r.Algorithm)
		}
		if _, err := alg.New(rateSpec(r)); err != nil {
			return fmt.Errorf("rate: %w", err)
		}
	}
	return nil
}

// replaceGroup returns a copy of cfg in which the group named c.Name is c,
// its defaults filled in, once check and buildable accept it; cfg itself is
// not changed. It returns ErrNoGroup (wrapped) when cfg has no such group.
func (g *Gate) replaceGroup(cfg *Config, c Group) (*Config, error) {
	i := slices.IndexFunc(cfg.Groups, func(x Group) bool { return x.Name == c.Name })
	if i < 0 {
		return nil, fmt.Errorf("%w: %q", ErrNoGroup, c.Name)
	}
	c = c.WithDefaults()
	if err := g.checkGroup(&c); err != nil {
		return nil, err
	}
	if err := buildable(&c); err != nil {
		return nil, fmt.Errorf("gate: group %q: %w", c.Name, err)
	}
	n := *cfg
	n.Groups = slices.Clone(cfg.Groups)
	n.Groups[i] = c
	return &n, nil
}
