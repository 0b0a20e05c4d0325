package spec

import (
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/internal/check"
	"github.com/sluicehq/sluice/limits"
)

// The one validation of what a gate runs: gate.New, Reload and Override
// refuse what Config.Check finds, and configs (sluice check, sluice run, a
// reload, the admin API's PATCH) reports the same problems in the same
// words, at the file's lines. Key paths are spelled as the TOML file spells
// them ("rate.burst", "targets.quantile").

// Bounds of values that no deployment needs to exceed; past them a value
// is a typo (a missing unit, an extra zero) more often than a choice.
const (
	MinRate = 1e-6 // the lowest Rate.Rate, per second (MaxRate is the highest)
	// MaxLimit bounds a concurrency limit, its bounds and other counts.
	MaxLimit = 1_000_000
	maxQueue = 1_000_000
	// maxStreams bounds Streams.Max: each stream holds a connection or two.
	maxStreams = 10_000_000
	maxCost    = 1_000_000
	maxKeys    = 100_000_000
	// MaxGroups bounds the groups of one config; each request is matched
	// against them in turn, and reachability is checked between every pair.
	MaxGroups = 1000
	// maxGlobalRefill bounds burst/rate of a global quota (scope "global"):
	// that of limits/redis. (A global window's limit is the registry's,
	// limits.Algorithm.GlobalMaxLimit.)
	maxGlobalRefill = 720 * time.Hour
	maxNameLen      = 64
	// MinInterval and MaxInterval bound Config.Interval; MinInterval and
	// MaxSaveInterval bound Config.SaveInterval.
	MinInterval     = 10 * time.Millisecond
	MaxInterval     = time.Minute
	MaxSaveInterval = 24 * time.Hour
)

const (
	ms   = time.Millisecond
	sec  = time.Second
	min1 = time.Minute
	hour = time.Hour
	day  = 24 * hour
)

// Problem is one reason a gate cannot run a Config.
type Problem struct {
	// Group is the index in Config.Groups of the group the problem is in, or
	// -1 for a field of the Config itself.
	Group int
	// Name is that group's name ("" if it has none).
	Name string
	// Path is the key path of the field within the group or the Config,
	// as a TOML file spells it: "rate.burst", "interval",
	// "trusted_proxies[2]"; "" for the group (or list) as a whole.
	Path string
	// Msg says what is wrong and, where it helps, what would be right.
	Msg string
	// Other is the index of another group that Msg names at its end (the
	// first of two with one name, the earlier group that takes every
	// request this one would), or -1. A file's reader may add its line.
	Other int
	// Incomplete marks a problem with a table as a whole, a value it lacks
	// (such as a rate with neither rate nor limit): moot where part of the
	// table could not be read from a file.
	Incomplete bool

	catchAll bool // see NoCatchAll
}

// NoCatchAll reports whether p is the problem of a config in which no group
// takes every request (or that has no group at all): a file's reader that
// appends such a group itself words it otherwise.
func (p Problem) NoCatchAll() bool { return p.catchAll }

// Where names the problem's place: `group "api": rate.burst`,
// `group[2]: name` for a group without a name, `interval`.
func (p Problem) Where() string {
	var w string
	switch {
	case p.Group < 0:
		return p.Path
	case p.Name != "":
		w = fmt.Sprintf("group %q", p.Name)
	default:
		w = fmt.Sprintf("group[%d]", p.Group)
	}
	if p.Path != "" {
		w += ": " + p.Path
	}
	return w
}

func (p Problem) String() string {
	if w := p.Where(); w != "" {
		return w + ": " + p.Msg
	}
	return p.Msg
}

// Problems is every problem of a Config, as an error: gate.New and Reload
// return it (wrapped); errors.As finds it.
type Problems []Problem

// Error is the one problem, or each on a line of its own, indented.
func (ps Problems) Error() string {
	switch len(ps) {
	case 0:
		return "no problems"
	case 1:
		return ps[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(ps))
	for _, p := range ps {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// Check returns every problem that keeps a gate from running c, whose
// defaults are filled in (WithDefaults: a zero is then a value, checked
// as such): each group on its own, then what only the list can tell (a
// name used twice, a group that no request can reach, no group taking
// every request), then the Config's own fields. It does not change
// c.
func (c *Config) Check() Problems {
	var ps Problems
	if len(c.Groups) > MaxGroups {
		return Problems{{Group: -1, Path: "group", Msg: fmt.Sprintf("at most %d groups, got %d", MaxGroups, len(c.Groups)), Other: -1}}
	}
	if len(c.Groups) == 0 {
		ps = append(ps, Problem{Group: -1, Path: "group", Msg: "the config has no group: the last group takes the requests no other group does", Other: -1, catchAll: true})
	}
	first, catchAll := map[string]int{}, false
	for i := range c.Groups {
		g := &c.Groups[i]
		catchAll = catchAll || g.Match.CatchAll()
		for _, p := range g.Check() {
			ps = append(ps, Problem{Group: i, Name: g.Name, Path: p.Path, Msg: p.Msg, Other: -1, Incomplete: p.Incomplete})
		}
		at := func(path, msg string, other int) {
			ps = append(ps, Problem{Group: i, Name: g.Name, Path: path, Msg: msg, Other: other})
		}
		if j, dup := first[g.Name]; dup && g.Name != "" {
			at("name", fmt.Sprintf("duplicate group name %q, first used by %s", g.Name, describe(c.Groups, j)), j)
		} else {
			first[g.Name] = i
		}
		for j := range i {
			if c.Groups[j].Match.Covers(&g.Match) {
				at("match", "never matches: every request it would take goes first to "+describe(c.Groups, j), j)
				break
			}
		}
	}
	if n := len(c.Groups); n > 0 && !catchAll {
		ps = append(ps, Problem{Group: n - 1, Name: c.Groups[n-1].Name, Path: "match", Other: -1, Incomplete: true, catchAll: true,
			Msg: "no group accepts every request: the last group must (no match, or path_prefix = \"/\"), to take the requests no other group does"})
	}
	ck := check.NewChecker(func(p check.Problem) {
		ps = append(ps, Problem{Group: -1, Path: p.Path, Msg: p.Msg, Other: -1, Incomplete: p.Incomplete})
	})
	c.checkOwn(ck)
	return ps
}

// describe names group i for a message about another group.
func describe(gs []Group, i int) string {
	return fmt.Sprintf("group[%d] %q", i, gs[i].Name)
}

// checkOwn checks the Config's own fields: the control loop's periods and
// the trusted proxies.
func (c *Config) checkOwn(ck *check.Checker) {
	ok := ck.Duration("interval", c.Interval, MinInterval, MaxInterval)
	if ck.Duration("save_interval", c.SaveInterval, MinInterval, MaxSaveInterval) && ok && c.SaveInterval < c.Interval {
		ck.Errorf("save_interval", "must be ≥ interval (%s), got %s", check.Dur(c.Interval), check.Dur(c.SaveInterval))
	}
	trusted, unix := map[netip.Prefix]string{}, false
	for i, e := range c.TrustedProxies {
		path := check.Index("trusted_proxies", i)
		pfx, isUnix, err := ParseTrustedProxy(e)
		first, dup := trusted[pfx]
		switch {
		case err != nil:
			ck.Errorf(path, "%v", err)
		case isUnix && unix, !isUnix && dup && first == e:
			ck.Errorf(path, "%q is already listed", e)
		case !isUnix && dup:
			ck.Errorf(path, "%q is already listed, as %q", e, first)
		case isUnix:
			unix = true
		default:
			trusted[pfx] = e
		}
	}
}

// Check returns every problem of g on its own, whose defaults are filled in
// (WithDefaults), with paths relative to the group ("rate.burst"). What
// only the whole list can tell is Config.Check's.
func (g *Group) Check() []check.Problem {
	var ck check.Checker
	g.check(&ck)
	return ck.Problems
}

func (g *Group) check(ck *check.Checker) {
	g.checkName(ck)
	g.Match.check(ck, "match")
	if err := g.Key.Check(); err != nil {
		ck.Errorf("key", "%v", err)
	}
	if err := g.Priority.Check(); err != nil {
		ck.Errorf("priority", "%v", err)
	}
	if _, header := g.Priority.Header(); header {
		if g.DefaultPriority.Rank() < 0 {
			ck.Errorf("default_priority", `must be "critical", "default" or "sheddable", got %q`, g.DefaultPriority)
		}
	} else {
		ck.Unused("default_priority", g.DefaultPriority != "", `with a fixed priority (only with priority = "header:NAME")`)
	}
	check.OneOf(ck, "mode", g.Mode, ModeEnforce, ModeShadow)
	if g.Rate != nil {
		g.Rate.check(ck, "rate", g.Key)
	}
	g.Concurrency.check(ck, "concurrency")
	g.Targets.check(ck, "targets", g.Concurrency)
	g.Queue.check(ck, "queue")
	ck.IntRange("streams.max", g.Streams.Max, 1, maxStreams)
}

func (g *Group) checkName(ck *check.Checker) {
	switch {
	case g.Name == "":
		ck.Errorf("name", "required")
	case len(g.Name) > maxNameLen:
		ck.Errorf("name", "must be at most %d bytes, got %d", maxNameLen, len(g.Name))
	case strings.ContainsFunc(g.Name, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-')
	}):
		ck.Errorf("name", "may hold letters, digits, '.', '_' and '-' only, got %q", g.Name)
	}
}

func (m *Match) check(ck *check.Checker, p string) {
	if m.Path != "" && m.PathPrefix != "" {
		ck.Errorf(check.Join(p, "path_prefix"), "set path or path_prefix, not both")
	}
	for _, k := range []struct{ key, v string }{{"path", m.Path}, {"path_prefix", m.PathPrefix}} {
		switch {
		case k.v == "":
		case !strings.HasPrefix(k.v, "/"):
			ck.Errorf(check.Join(p, k.key), "must start with \"/\": request paths always do, so %q never matches", k.v)
		case strings.ContainsAny(k.v, "?#"):
			ck.Errorf(check.Join(p, k.key), "must not hold a query or fragment, which are not part of the path, got %q", k.v)
		case strings.ContainsFunc(k.v, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			ck.Errorf(check.Join(p, k.key), "must not hold spaces or control characters, got %q", k.v)
		default:
			checkNormal(ck, check.Join(p, k.key), k.v, k.key == "path_prefix")
		}
	}
	seen := map[string]bool{}
	for i, method := range m.Methods {
		path := check.Index(check.Join(p, "methods"), i)
		switch {
		case method == "" || CheckHeaderName(method) != nil:
			ck.Errorf(path, "%q is not an HTTP method", method)
		case seen[strings.ToUpper(method)]:
			ck.Errorf(path, "%q is listed twice", method)
		}
		seen[strings.ToUpper(method)] = true
	}
	if m.Methods != nil && len(m.Methods) == 0 {
		ck.Errorf(check.Join(p, "methods"), "is empty, so it would match nothing; leave it out to match every method")
	}
	if m.Host != "" {
		checkHost(ck, check.Join(p, "host"), m.Host)
	}
	canonical := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(m.Headers)) {
		path := check.Join(check.Join(p, "headers"), name)
		if err := CheckHeaderName(name); err != nil {
			ck.Errorf(path, "%v", err)
			continue
		}
		c := CanonicalHeader(name)
		if other, dup := canonical[c]; dup {
			a, b := min(name, other), max(name, other)
			ck.Errorf(path, "%q and %q are the same header (names ignore case)", a, b)
		}
		canonical[c] = name
	}
}

// checkNormal reports a path (or, with prefix, a path prefix) v that no
// request can match: requests are matched on their normalised path
// (slashes merged, "." and ".." segments resolved; a path with a backslash
// is refused) without the ";" parameters of its segments, so a configured
// path with an empty, "." or ".." segment, a backslash or a ";" never
// matches. Of a prefix only the whole segments are
// looked at: "/a/." may still match "/a/.well-known".
func checkNormal(ck *check.Checker, at, v string, prefix bool) {
	whole := v
	if prefix {
		whole = v[:strings.LastIndexByte(v, '/')+1]
	}
	switch {
	case strings.IndexByte(v, '\\') >= 0:
		ck.Errorf(at, "never matches: requests whose path holds a backslash are refused (400), got %q", v)
	case strings.IndexByte(v, ';') >= 0:
		ck.Errorf(at, `never matches: requests are matched without the ";" parameters of their path's segments, so write %q, got %q`, WithoutParams(v), v)
	case !normalSegments(whole):
		want := path.Clean(whole)
		dir := strings.HasSuffix(whole, "/") || strings.HasSuffix(whole, "/.") || strings.HasSuffix(whole, "/..")
		if dir && want != "/" { // "/a/." is "/a/", as a request path normalises
			want += "/"
		}
		want += v[len(whole):]
		ck.Errorf(at, `never matches: requests are matched on their normalised path (slashes merged, "." and ".." resolved), so write %q, got %q`, want, v)
	}
}

// normalSegments reports whether the absolute path s has no empty, "." or
// ".." segment (a trailing slash aside).
func normalSegments(s string) bool {
	for rest := s[1:]; rest != ""; {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// checkHost accepts a host name, "*." and a host name, or an IP address
// without brackets.
func checkHost(ck *check.Checker, path, host string) {
	if net.ParseIP(host) != nil {
		return
	}
	name := strings.TrimPrefix(host, "*.")
	if strings.Contains(name, ":") && !strings.HasPrefix(name, "[") {
		ck.Errorf(path, "must not have a port: the port is ignored when matching, got %q", host)
		return
	}
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		ok := l != "" && len(l) <= 63
		for i := 0; ok && i < len(l); i++ {
			c := l[i]
			ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
		}
		if !ok {
			ck.Errorf(path, `must be a host name, "*.domain" or an IP address (without brackets), got %q`, host)
			return
		}
	}
}

// check validates a rate; which knobs apply, and what a global quota
// supports, is the algorithm's to say (limits.Algorithm).
func (r *Rate) check(ck *check.Checker, p string, key KeySource) {
	at := func(k string) string { return check.Join(p, k) }
	alg, algOK := limits.LookupAlgorithm(string(r.Algorithm))
	if !algOK {
		check.OneOf(ck, at("algorithm"), string(r.Algorithm), limits.AlgorithmNames(nil)...)
	}
	scopeOK := check.OneOf(ck, at("scope"), r.Scope, ScopeLocal, ScopeGlobal)
	check.OneOf(ck, at("mode"), r.Mode, ModeEnforce, ModeShadow)
	costOK := ck.IntRange(at("cost"), r.Cost, 1, maxCost)
	amountOK := r.checkAmount(ck, p)
	if !algOK {
		return // which knobs apply depends on the algorithm
	}
	by := fmt.Sprintf("by algorithm %q", r.Algorithm)
	windowed := alg.Shape == limits.ShapeWindow
	if windowed {
		if amountOK && r.Rate != 0 && r.Rate != math.Trunc(r.Rate) {
			ck.Errorf(at("rate"), "%s counts whole requests per window and %s per second is not whole: use limit and window", r.Algorithm, check.Float(r.Rate))
			amountOK = false
		}
		if limit, _ := r.Quota(); amountOK && costOK && limit < r.Cost {
			k := "limit"
			if r.Rate != 0 {
				k = "rate"
			}
			ck.Errorf(at(k), "must be ≥ cost (%d), got %d: no request could ever pass", r.Cost, limit)
		}
	}
	switch {
	case !alg.Knobs.Has(limits.KnobBurst):
		ck.Unused(at("burst"), r.Burst != 0, by)
	case r.Burst == 0 && !amountOK:
		// not derived for want of a rate, which is reported
	case ck.IntRange(at("burst"), r.Burst, 1, MaxRate) && costOK && r.Burst < r.Cost:
		ck.Errorf(at("burst"), "must be ≥ cost (%d), got %d", r.Cost, r.Burst)
	}
	if alg.Knobs.Has(limits.KnobWarmup) {
		ck.Duration(at("warmup"), r.Warmup, 0, hour)
	} else {
		ck.Unused(at("warmup"), r.Warmup != 0, by)
	}
	if alg.Knobs.Has(limits.KnobBuckets) {
		if ck.IntRange(at("buckets"), r.Buckets, 2, 1000) && amountOK {
			if _, w := r.Quota(); w/time.Duration(r.Buckets) < time.Millisecond {
				ck.Errorf(at("buckets"), "window %s in %d buckets is under 1ms a bucket", check.Dur(w), r.Buckets)
			}
		}
	} else {
		ck.Unused(at("buckets"), r.Buckets != 0, by)
	}
	if alg.Knobs.Has(limits.KnobMaxWait) {
		ck.Duration(at("max_wait"), r.MaxWait, ms, min1)
	} else {
		ck.Unused(at("max_wait"), r.MaxWait != 0, by)
	}
	if key == KeyNone || key == "" {
		const why = `with key = "none": the group has one quota`
		ck.Unused(at("max_keys"), r.MaxKeys != 0, why)
		ck.Unused(at("key_idle_timeout"), r.KeyIdleTimeout != 0, why)
	} else {
		ck.IntRange(at("max_keys"), r.MaxKeys, 1, maxKeys)
		if ck.Duration(at("key_idle_timeout"), r.KeyIdleTimeout, sec, MaxKeyIdle) && amountOK {
			if fresh := r.FreshAfter(); r.KeyIdleTimeout < fresh {
				what := "the time to refill the bucket"
				if windowed {
					what = "the window"
				}
				ck.Errorf(at("key_idle_timeout"), "must be ≥ %s (%s), or forgetting an idle key would reset its quota early, got %s",
					what, check.Dur(fresh), check.Dur(r.KeyIdleTimeout))
			}
		}
	}
	if r.CostHeader != "" {
		switch err := CheckHeaderName(r.CostHeader); {
		case err != nil:
			ck.Errorf(at("cost_header"), "%v", err)
		case r.Warmup != 0:
			ck.Errorf(at("cost_header"), "a token bucket with a warm-up cannot take a cost known after the work: remove warmup or cost_header")
		case !alg.Adjusts:
			ck.Errorf(at("cost_header"), "algorithm %q cannot take a cost known after the work: use %s", r.Algorithm,
				check.OrList(limits.AlgorithmNames(func(a *limits.Algorithm) bool { return a.Adjusts })))
		case scopeOK && r.Scope == ScopeGlobal:
			// limits/redis's scripts refuse what does not fit, so a debt has no
			// place in Redis, and a correction would be a second round trip
			// per response.
			ck.Errorf(at("cost_header"), `not supported with scope "global": the quota's state is in Redis, which keeps no debt for a charge beyond the room; use scope "local"`)
		}
	}
	if scopeOK && r.Scope == ScopeGlobal {
		switch limit, _ := r.Quota(); {
		case alg.Global == limits.GlobalNone && alg.Paced:
			ck.Errorf(at("scope"), `"global" does not support algorithm %q: requests cannot wait in Redis`, r.Algorithm)
		case alg.Global == limits.GlobalNone:
			ck.Errorf(at("scope"), `"global" does not support algorithm %q: use %s`, r.Algorithm,
				check.OrList(limits.AlgorithmNames(func(a *limits.Algorithm) bool { return a.Global != limits.GlobalNone })))
		case alg.Shape == limits.ShapeRate:
			// limits/redis computes in float64 nanoseconds: burst/rate up to 720h.
			if amountOK && r.Burst > 0 && r.FreshAfter() > maxGlobalRefill {
				ck.Errorf(at("burst"), `with scope "global", burst/rate must be at most %s, got %s`, check.Dur(maxGlobalRefill), check.Dur(r.FreshAfter()))
			}
		case alg.GlobalMaxLimit > 0 && amountOK && int64(limit) > alg.GlobalMaxLimit:
			ck.Errorf(at("limit"), `with scope "global", must be at most %d, got %d`, alg.GlobalMaxLimit, limit)
		}
		if r.Warmup != 0 {
			ck.Errorf(at("warmup"), `not supported with scope "global"`)
		}
		r.checkSync(ck, p, alg)
	} else if scopeOK {
		const why = `with scope "local": only a global quota is shared`
		ck.Unused(at("sync"), r.Sync != "" && r.Sync != limits.SyncExact, why)
		ck.Unused(at("lease_period"), r.LeasePeriod != 0, why)
		ck.Unused(at("lease_expiry"), r.LeaseExpiry != 0, why)
	}
}

// checkSync checks how a global quota is shared (Rate.Sync) and its lease
// settings.
func (r *Rate) checkSync(ck *check.Checker, p string, alg *limits.Algorithm) {
	at := func(k string) string { return check.Join(p, k) }
	if r.Sync != "" && !check.OneOf(ck, at("sync"), r.Sync, limits.SyncExact, limits.SyncLeased) {
		return
	}
	if r.Sync != limits.SyncLeased {
		const why = `with sync = "exact"`
		ck.Unused(at("lease_period"), r.LeasePeriod != 0, why)
		ck.Unused(at("lease_expiry"), r.LeaseExpiry != 0, why)
		return
	}
	if alg.Global != limits.GlobalLeased {
		ck.Errorf(at("sync"), `"leased" cuts the quota into blocks, which algorithm %q cannot be: it stays "exact" (leased: %s)`, r.Algorithm,
			check.OrList(limits.AlgorithmNames(func(a *limits.Algorithm) bool { return a.Global == limits.GlobalLeased })))
	}
	if ck.Duration(at("lease_period"), r.LeasePeriod, 10*ms, 10*sec) &&
		ck.Duration(at("lease_expiry"), r.LeaseExpiry, ms, hour) && r.LeaseExpiry < 3*r.LeasePeriod {
		ck.Errorf(at("lease_expiry"), "must be ≥ 3 lease_periods (%s), got %s", check.Dur(3*r.LeasePeriod), check.Dur(r.LeaseExpiry))
	}
	// A renewal takes at most what the stock holds: refill beyond the
	// stock's capacity between two renewals is lost for good.
	period := r.LeasePeriod
	if alg.Shape == limits.ShapeRate {
		need := r.PerSecond() * period.Seconds()
		const lost = "the stock fills up between two renewals and the refill beyond it is lost (a leased quota admits less than its rate)"
		switch burst := float64(r.Burst); {
		case r.Burst > 0 && burst < need:
			ck.Errorf(at("burst"), "%d is below rate × lease_period (%g): %s; set burst ≥ %d, or a shorter lease_period",
				r.Burst, need, lost, int64(math.Ceil(need)))
		case r.Burst == 0 && math.Ceil(r.PerSecond()) < need: // the default burst: a second of the rate
			ck.Errorf(at("lease_period"), "%s is longer than the default burst lasts (a second of the rate): %s; set burst ≥ %d, or lease_period ≤ 1s",
				check.Dur(r.LeasePeriod), lost, int64(math.Ceil(need)))
		}
	} else if _, w := r.Quota(); w > 0 && w < period {
		ck.Errorf(at("lease_period"), "%s is longer than the window (%s): a lease's units lapse at the window's end, so a node renewing less often than that leaves windows unused; set lease_period ≤ the window",
			check.Dur(r.LeasePeriod), check.Dur(w))
	}
}

// checkAmount checks that the rate is given exactly one way.
func (r *Rate) checkAmount(ck *check.Checker, p string) bool {
	at := func(k string) string { return check.Join(p, k) }
	hasRate, hasLimit, hasWindow := r.Rate != 0, r.Limit != 0, r.Window != 0
	switch {
	case hasRate && (hasLimit || hasWindow):
		ck.Errorf(at("rate"), "set rate, or limit and window, not both")
		return false
	case hasRate:
		return ck.FloatRange(at("rate"), r.Rate, MinRate, MaxRate)
	case hasLimit && !hasWindow:
		ck.Errorf(at("window"), "required with limit")
		return false
	case hasWindow && !hasLimit:
		ck.Errorf(at("limit"), "required with window")
		return false
	case hasLimit:
		ok := ck.IntRange(at("limit"), r.Limit, 1, MaxRate)
		return ck.Duration(at("window"), r.Window, ms, day) && ok
	}
	ck.Incompletef(p, "needs rate (per second), or limit and window")
	return false
}

// check validates the concurrency limit; which knobs apply is the law's to
// say (adaptive.LawKind). A custom law is checked for its bounds only.
func (c *Concurrency) check(ck *check.Checker, p string) {
	at := func(k string) string { return check.Join(p, k) }
	kind, ok := adaptive.LookupLaw(string(c.Law))
	switch {
	case c.Custom != nil && ok && kind.FixedLimit:
		ck.Errorf(at("law"), "a custom law cannot be named %q, the law of a constant limit", c.Law)
		return
	case c.Custom != nil:
		c.checkBounds(ck, p)
		return
	case !ok:
		check.OneOf(ck, at("law"), string(c.Law), adaptive.LawNames()...)
		return
	}
	law := fmt.Sprintf("by law %q", c.Law)
	if kind.FixedLimit {
		if c.Limit == 0 {
			ck.Errorf(at("limit"), `required with law %q`, c.Law)
		} else {
			ck.IntRange(at("limit"), c.Limit, 1, MaxLimit)
		}
		ck.Unused(at("initial"), c.Initial != 0, law)
		ck.Unused(at("min"), c.Min != 0, law)
		ck.Unused(at("max"), c.Max != 0, law)
	} else {
		fixed := check.OrList(lawNames(func(k *adaptive.LawKind) bool { return k.FixedLimit }))
		ck.Unused(at("limit"), c.Limit != 0, law+` (only `+fixed+` has a constant limit; adaptive laws move between min and max)`)
		c.checkBounds(ck, p)
	}
	for _, name := range adaptive.KnobNames() {
		f := c.Knob(name)
		if f == nil {
			continue // a knob of the registry with no field here: TestKnobsHaveFields
		}
		v := *f
		if kn, ok := kind.Knob(name); ok {
			ck.FloatRange(at(name), v, kn.Min, kn.Max)
		} else {
			ck.Unused(at(name), v != 0, law)
		}
	}
}

// checkBounds checks the bounds an adaptive law moves between.
func (c *Concurrency) checkBounds(ck *check.Checker, p string) {
	at := func(k string) string { return check.Join(p, k) }
	minOK := ck.IntRange(at("min"), c.Min, 1, MaxLimit)
	maxOK := ck.IntRange(at("max"), c.Max, 1, MaxLimit)
	initOK := ck.IntRange(at("initial"), c.Initial, 1, MaxLimit)
	if minOK && maxOK && c.Min > c.Max {
		ck.Errorf(at("min"), "must be ≤ max (%d), got %d", c.Max, c.Min)
	} else if initOK && minOK && c.Initial < c.Min {
		ck.Errorf(at("initial"), "must be ≥ min (%d), got %d", c.Min, c.Initial)
	} else if initOK && maxOK && c.Initial > c.Max {
		ck.Errorf(at("initial"), "must be ≤ max (%d), got %d", c.Max, c.Initial)
	}
}

// lawNames returns the names of the registered laws keep keeps.
func lawNames(keep func(*adaptive.LawKind) bool) []string {
	var names []string
	for _, k := range adaptive.Laws() {
		if keep(k) {
			names = append(names, k.Name)
		}
	}
	return names
}

func (t *Targets) check(ck *check.Checker, p string, c Concurrency) {
	at := func(k string) string { return check.Join(p, k) }
	ck.OptionalDuration(at("latency"), t.Latency, ms, hour)
	ck.FloatRange(at("quantile"), t.Quantile, 0.5, 0.9999)
	ck.Ratio(at("cpu"), t.CPU)
	ck.Ratio(at("memory"), t.Memory)
	ck.Ratio(at("cpu_pressure"), t.CPUPressure)
	if kind, ok := adaptive.LookupLaw(string(c.Law)); ok && c.Custom == nil && kind.NeedsTarget && !t.Any() {
		ck.Incompletef(p, `law %q needs at least one of latency, cpu, memory or cpu_pressure`, c.Law)
	}
}

func (q *Queue) check(ck *check.Checker, p string) {
	at := func(k string) string { return check.Join(p, k) }
	check.OneOf(ck, at("order"), q.Order, OrderFIFO, OrderLIFO, OrderAdaptive)
	ck.IntRange(at("max"), q.Max, 0, maxQueue)
	var waitOK bool
	if q.Max > 0 {
		waitOK = ck.Duration(at("max_wait"), q.MaxWait, ms, hour)
	} else {
		waitOK = ck.Duration(at("max_wait"), q.MaxWait, 0, hour)
	}
	if !ck.Duration(at("codel_target"), q.CodelTarget, 0, min1) || q.CodelTarget == 0 {
		ck.OptionalDuration(at("codel_interval"), q.CodelInterval, ms, min1) // CoDel is off
		return
	}
	intervalOK := ck.Duration(at("codel_interval"), q.CodelInterval, ms, min1)
	if intervalOK && q.CodelTarget >= q.CodelInterval {
		ck.Errorf(at("codel_target"), "must be < codel_interval (%s), got %s", check.Dur(q.CodelInterval), check.Dur(q.CodelTarget))
	} else if waitOK && q.Max > 0 && q.CodelTarget > q.MaxWait {
		ck.Errorf(at("codel_target"), "must be ≤ max_wait (%s), got %s", check.Dur(q.MaxWait), check.Dur(q.CodelTarget))
	}
}
