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

// check returns c with its defaults filled in, or every problem that keeps
// the gate from running it (spec.Config.Check, the validation sluice check
// runs too, and a resource target without a sampler), as spec.Problems for
// the caller to prefix.
func (g *Gate) check(c Config) (*Config, error) {
	c = c.WithDefaults()
	ps := c.Check()
	for i := range c.Groups {
		ps = append(ps, g.checkResources(i, &c.Groups[i])...)
	}
	if len(ps) > 0 {
		return nil, ps
	}
	return &c, nil
}

// checkResources checks that the resource targets of c, group i, have a
// sampler to see them by.
func (g *Gate) checkResources(i int, c *Group) spec.Problems {
	if g.resources != nil {
		return nil
	}
	var ps spec.Problems
	for _, t := range [...]struct {
		name string
		v    float64
	}{{"cpu", c.Targets.CPU}, {"memory", c.Targets.Memory}, {"cpu_pressure", c.Targets.CPUPressure}} {
		if t.v != 0 {
			ps = append(ps, spec.Problem{Group: i, Name: c.Name, Path: "targets." + t.name, Other: -1,
				Msg: fmt.Sprintf("%v needs a resource sampler to see it: set Params.Resources (a *probe.Sampler, or NoResources to leave the target idle)", t.v)})
		}
	}
	return ps
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
		if _, err := alg.New(r.Limits()); err != nil {
			return fmt.Errorf("rate: %w", err)
		}
	}
	return nil
}

// replaceGroup returns a copy of cfg in which the group named c.Name is c,
// its defaults filled in, once check and buildable accept it; cfg itself is
// not changed. It returns ErrNoGroup (wrapped) when cfg has no such group;
// its other errors name the group, for the caller to prefix.
func (g *Gate) replaceGroup(cfg *Config, c Group) (*Config, error) {
	i := slices.IndexFunc(cfg.Groups, func(x Group) bool { return x.Name == c.Name })
	if i < 0 {
		return nil, fmt.Errorf("%w: %q", ErrNoGroup, c.Name)
	}
	n := *cfg
	n.Groups = slices.Clone(cfg.Groups)
	n.Groups[i] = c
	checked, err := g.check(n)
	if err != nil {
		return nil, err
	}
	if err := buildable(&checked.Groups[i]); err != nil {
		return nil, fmt.Errorf("group %q: %w", c.Name, err)
	}
	return checked, nil
}
