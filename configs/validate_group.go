package configs

import (
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gate/spec"
)

// The groups, and the settings the file shares with the gate
// (control.interval, control.save_interval, server.trusted_proxies), are
// checked by the gate's own validation, spec.Config.Check: gate.New refuses
// what sluice check refuses, in the same words. Here its problems get the
// file's key paths and lines, and the file adds what is its own: a global
// quota needs [redis], and the name of the catch-all SetDefaults appends.

// ValidateGroup checks g on its own and returns every problem, as an [Errors]
// with paths relative to the group ("rate.burst"), or nil. It is what the
// admin API runs on a changed group before applying it. Checks that need the
// whole config (unique names, shadowed matches, scope "global" needing
// [redis]) are in [Config.Validate]; [Config.ReplaceGroup] runs both.
// Call SetGroupDefaults first on a group built in Go.
func ValidateGroup(g *spec.Group) error {
	ck := &checker{}
	for _, p := range g.Check() {
		ck.report(p.Path, p.Msg, p.Incomplete)
	}
	return ck.errs.err()
}

// checkGroups checks every group, what only the list can tell (names are
// unique, every group can be reached, the last takes what the others
// leave) and the settings shared with the gate, by spec.Config.Check; then
// that global quotas have a Redis.
func (c *Config) checkGroups(ck *checker) {
	s := c.Gate()
	catchAll := false
	for i := range c.Groups {
		catchAll = catchAll || c.Groups[i].Match.CatchAll()
	}
	for _, p := range s.Check() {
		if p.NoCatchAll() {
			continue // worded below, for a file
		}
		path := specPath(p)
		if p.Other >= 0 && p.Path == "match" && (ck.src.isIncomplete(path) || ck.src.isIncomplete(join(index("group", p.Other), "match"))) {
			continue // a match that failed to decode is not what the file says
		}
		msg := p.Msg
		if p.Other >= 0 {
			if n := ck.src.line(index("group", p.Other)); n > 0 {
				msg += " (line " + strconv.Itoa(n) + ")"
			}
		}
		ck.report(path, msg, p.Incomplete)
	}
	if len(c.Groups) > spec.MaxGroups {
		return
	}
	for i := range c.Groups {
		g := &c.Groups[i]
		if g.Rate != nil && g.Rate.Scope == spec.ScopeGlobal && c.Redis == nil {
			ck.errorf(join(join(index("group", i), "rate"), "scope"), `"global" keeps the quota in Redis: add a [redis] section`)
		}
	}
	if catchAll {
		return
	}
	for i := range c.Groups {
		if c.Groups[i].Name == CatchAllName {
			ck.errorf(join(index("group", i), "name"), "%q names the group for requests no other group matches: give this group another name, or remove its match and put it last", CatchAllName)
			return
		}
	}
	ck.incompletef("group", "no group accepts every request; SetDefaults appends one named %q", CatchAllName)
}

// sharedPaths are the file's keys of spec.Config's own fields.
var sharedPaths = [...]struct{ gate, file string }{
	{"interval", "control.interval"},
	{"save_interval", "control.save_interval"},
	{"trusted_proxies", "server.trusted_proxies"},
}

// specPath is the file's key path of a problem spec.Config.Check found.
func specPath(p spec.Problem) string {
	if p.Group >= 0 {
		return under(index("group", p.Group), p.Path)
	}
	for _, s := range sharedPaths {
		if rest, ok := strings.CutPrefix(p.Path, s.gate); ok && (rest == "" || rest[0] == '[' || rest[0] == '.') {
			return s.file + rest
		}
	}
	return p.Path
}

// under is the key path rel (already quoted) inside the table at parent.
func under(parent, rel string) string {
	switch {
	case rel == "":
		return parent
	case parent == "":
		return rel
	}
	return parent + "." + rel
}
