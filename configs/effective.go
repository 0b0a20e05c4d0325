package configs

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/BurntSushi/toml"

	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/internal/durtext"
)

// ErrNoGroup is returned (wrapped) by ReplaceGroup for a name that no
// group has.
var ErrNoGroup = errors.New("configs: no such group")

// Effective renders c as TOML with every default filled in: what the daemon
// runs with. Parsing the result gives back an equal Config. Knobs that do
// not apply (another law's, another algorithm's) are left out.
func (c *Config) Effective() ([]byte, error) {
	var b bytes.Buffer
	// The groups' durations are time.Duration (gate/spec's types), which
	// the TOML library writes as "1m0s": the view writes them as the file
	// does, "1m".
	if err := toml.NewEncoder(&b).Encode(durtext.View(c)); err != nil {
		return nil, fmt.Errorf("configs: render: %w", err)
	}
	return b.Bytes(), nil
}

// Clone returns a deep copy of c that shares nothing with it. The copy does
// not remember the file c came from, so its problems carry no line: its
// values may no longer be the file's.
func (c *Config) Clone() *Config {
	n := *c
	n.src = nil
	n.Server.TrustedProxies = slices.Clone(c.Server.TrustedProxies)
	if c.Redis != nil {
		r := *c.Redis
		r.ClusterAddresses = slices.Clone(r.ClusterAddresses)
		r.SentinelAddresses = slices.Clone(r.SentinelAddresses)
		n.Redis = &r
	}
	if c.Permit != nil {
		p := *c.Permit
		p.Groups = slices.Clone(p.Groups)
		n.Permit = &p
	}
	if c.RLS != nil {
		r := *c.RLS
		r.Domains = slices.Clone(r.Domains)
		for i := range r.Domains {
			d := &r.Domains[i]
			d.Descriptors = slices.Clone(d.Descriptors)
			for j := range d.Descriptors {
				d.Descriptors[j].Entries = slices.Clone(d.Descriptors[j].Entries)
			}
		}
		n.RLS = &r
	}
	n.Groups = make([]spec.Group, len(c.Groups))
	for i := range c.Groups {
		n.Groups[i] = c.Groups[i].Clone()
	}
	if c.Groups == nil {
		n.Groups = nil
	}
	return &n
}

// Group returns the group called name, or nil.
func (c *Config) Group(name string) *spec.Group {
	for i := range c.Groups {
		if c.Groups[i].Name == name {
			return &c.Groups[i]
		}
	}
	return nil
}

// ReplaceGroup returns a copy of c in which the group named g.Name is
// replaced by a copy of g, with SetDefaults applied to it, after checking
// the whole result as the file is checked (Validate): the admin API's
// PATCH /v1/groups/{name} applies a change this way, so a runtime change
// obeys the same rules as the TOML. c itself is not changed. It returns
// ErrNoGroup (wrapped) if no group has that name, or the problems as an
// [Errors] with paths such as "group[1].concurrency.min" and no lines.
//
// Values that SetDefaults derived when the file was loaded (an adaptive
// law's initial limit, a token bucket's burst) are concrete numbers by
// now, and stay as they were unless the change sets them: lowering max
// below initial is refused until initial is lowered too.
func (c *Config) ReplaceGroup(g spec.Group) (*Config, error) {
	n := c.Clone()
	i := slices.IndexFunc(n.Groups, func(x spec.Group) bool { return x.Name == g.Name })
	if i < 0 {
		return nil, fmt.Errorf("%w: %q", ErrNoGroup, g.Name)
	}
	n.Groups[i] = g.Clone()
	SetGroupDefaults(&n.Groups[i])
	if err := n.Validate(); err != nil {
		return nil, err
	}
	return n, nil
}
