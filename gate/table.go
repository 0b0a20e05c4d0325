package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/sluicehq/sluice/gate/spec"
)

// table is one configuration at run time: its groups in match order. It is
// immutable once published; Reload and Override publish a new one.
type table struct {
	cfg    *spec.Config
	routes []route
	byName map[string]*group
	source string
	hash   string
	loaded time.Time

	trusted *TrustedProxies // cfg's TrustedProxies
}

// route pairs a group with the match that selects it.
type route struct {
	match *spec.Match
	g     *group
}

// buildTable builds the run-time groups of cfg. A group of old with the same
// name whose settings differ only in its match is carried over as it is
// (learned limit, law state, counters, per-key state); a changed group is
// rebuilt with its law starting from the old group's current limit and rate,
// on the old group's live parts (see newGroup), as is a group that an
// earlier reload removed while requests were left in it (g.retired).
// Without an old table, st (the state file, may be nil) seeds the laws.
// When a group cannot be built, the rate limiters of the groups built so far
// are closed; nothing else is changed. Call with g.mu held (or from New).
func (g *Gate) buildTable(cfg *spec.Config, old *table, st *stateFile) (_ *table, err error) {
	t := &table{cfg: cfg, byName: make(map[string]*group, len(cfg.Groups))}
	if t.trusted, err = ParseTrustedProxies(cfg.TrustedProxies); err != nil {
		return nil, fmt.Errorf("gate: trusted proxies: %w", err)
	}
	var built []*group
	defer func() {
		if err != nil {
			for _, gr := range built {
				gr.closeRate()
			}
		}
	}()
	for i := range cfg.Groups {
		c := &cfg.Groups[i]
		var s seed
		var gr, from *group
		switch {
		case old != nil:
			if o := old.byName[c.Name]; o != nil {
				if sameLimits(o.cfg.Load(), c) {
					gr = o
				} else {
					s = seed{limit: o.conc.Limit(), rate: lawRate(o.pol.law)}
					from = o
				}
			} else {
				from = g.retired[c.Name] // nil when none
			}
		case st != nil:
			if sv, ok := st.Groups[c.Name]; ok {
				s = seed{limit: sv.Limit, rate: sv.Rate}
			}
		}
		if gr == nil {
			if gr, err = g.newGroup(c, s, len(cfg.Groups), from); err != nil {
				return nil, err
			}
			built = append(built, gr)
		}
		t.routes = append(t.routes, route{match: &c.Match, g: gr})
		t.byName[c.Name] = gr
	}
	return t, nil
}

// sameLimits reports whether a and b differ at most in their match and
// modes: then the group keeps running as it is (Reload publishes the new
// mode), its law's state with it.
func sameLimits(a, b *spec.Group) bool {
	x, y := a.Clone(), b.Clone()
	x.Match, y.Match = spec.Match{}, spec.Match{}
	withoutModes(&x)
	withoutModes(&y)
	return reflect.DeepEqual(x, y)
}

// withoutModes clears the modes of g (a clone), for comparing the rest.
func withoutModes(g *spec.Group) {
	g.Mode = ""
	if g.Rate != nil {
		g.Rate.Mode = ""
	}
}

// configHash identifies a config by its content (defaults filled in).
func configHash(c *Config) string {
	b, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
