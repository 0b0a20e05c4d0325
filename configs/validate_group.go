package configs

import (
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/limits"
)

// Validate checks g on its own and returns every problem, as an [Errors]
// with paths relative to the group ("rate.burst"), or nil. It is what the
// admin API runs on a changed group before applying it. Checks that need the
// whole config (unique names, shadowed matches, scope "global" needing
// [redis]) are in [Config.Validate]; [Config.ReplaceGroup] runs both.
// Call SetDefaults first on a group built in Go.
func (g *Group) Validate() error {
	ck := &checker{}
	g.check(ck, "")
	return ck.errs.err()
}

// checkGroups checks every group, and what only the list can tell: names
// are unique, every group can be reached, some group takes what the others
// leave, global quotas have a Redis.
func (c *Config) checkGroups(ck *checker) {
	if len(c.Groups) > maxGroups {
		ck.errorf("group", "at most %d groups, got %d", maxGroups, len(c.Groups))
		return
	}
	first := map[string]int{}
	catchAll := false
	for i := range c.Groups {
		g, p := &c.Groups[i], index("group", i)
		g.check(ck, p)
		if j, dup := first[g.Name]; dup && g.Name != "" {
			ck.errorf(join(p, "name"), "duplicate group name %q, first used by %s", g.Name, describeGroup(ck, c.Groups, j))
		} else {
			first[g.Name] = i
		}
		for j := range i {
			if ck.src.isIncomplete(join(p, "match")) || ck.src.isIncomplete(join(index("group", j), "match")) {
				continue // a match that failed to decode is not what the file says
			}
			if c.Groups[j].Match.Covers(&g.Match) {
				ck.errorf(join(p, "match"), "never matches: %s comes first and accepts every request this group would", describeGroup(ck, c.Groups, j))
				break
			}
		}
		if g.Rate != nil && g.Rate.Scope == ScopeGlobal && c.Redis == nil {
			ck.errorf(join(join(p, "rate"), "scope"), `"global" keeps the quota in Redis: add a [redis] section`)
		}
		catchAll = catchAll || g.Match.CatchAll()
	}
	if catchAll {
		return
	}
	if i, ok := first[CatchAllName]; ok {
		ck.errorf(join(index("group", i), "name"), "%q names the group for requests no other group matches: give this group another name, or remove its match and put it last", CatchAllName)
		return
	}
	ck.incompletef("group", "no group accepts every request; SetDefaults appends one named %q", CatchAllName)
}

// check validates one group; p is its path ("group[1]", or "" on its own).
func (g *Group) check(ck *checker, p string) {
	g.checkName(ck, join(p, "name"))
	g.Match.check(ck, join(p, "match"))
	if err := g.Key.Check(); err != nil {
		ck.errorf(join(p, "key"), "%v", err)
	}
	if err := g.Priority.Check(); err != nil {
		ck.errorf(join(p, "priority"), "%v", err)
	}
	if _, header := g.Priority.Header(); header {
		if g.DefaultPriority.Rank() < 0 {
			ck.errorf(join(p, "default_priority"), `must be "critical", "default" or "sheddable", got %q`, g.DefaultPriority)
		}
	} else {
		ck.unused(join(p, "default_priority"), g.DefaultPriority != "", `with a fixed priority (only with priority = "header:NAME")`)
	}
	oneOf(ck, join(p, "mode"), g.Mode, ModeEnforce, ModeShadow)
	if g.Rate != nil {
		g.Rate.check(ck, join(p, "rate"), g.Key)
	}
	g.Concurrency.check(ck, join(p, "concurrency"))
	g.Targets.check(ck, join(p, "targets"), g.Concurrency.Law)
	g.Queue.check(ck, join(p, "queue"))
}

func (g *Group) checkName(ck *checker, path string) {
	if g.Name == "" {
		ck.errorf(path, "required")
		return
	}
	if len(g.Name) > 64 {
		ck.errorf(path, "must be at most 64 bytes, got %d", len(g.Name))
		return
	}
	for i := 0; i < len(g.Name); i++ {
		c := g.Name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			ck.errorf(path, "may hold letters, digits, '.', '_' and '-' only, got %q", g.Name)
			return
		}
	}
}

func (m *Match) check(ck *checker, p string) {
	if m.Path != "" && m.PathPrefix != "" {
		ck.errorf(join(p, "path_prefix"), "set path or path_prefix, not both")
	}
	for _, k := range []struct{ key, v string }{{"path", m.Path}, {"path_prefix", m.PathPrefix}} {
		switch {
		case k.v == "":
		case !strings.HasPrefix(k.v, "/"):
			ck.errorf(join(p, k.key), "must start with \"/\": request paths always do, so %q never matches", k.v)
		case strings.ContainsAny(k.v, "?#"):
			ck.errorf(join(p, k.key), "must not hold a query or fragment, which are not part of the path, got %q", k.v)
		case strings.ContainsFunc(k.v, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			ck.errorf(join(p, k.key), "must not hold spaces or control characters, got %q", k.v)
		}
	}
	seen := map[string]bool{}
	for i, method := range m.Methods {
		path := index(join(p, "methods"), i)
		switch {
		case method == "" || checkHeaderName(method) != nil:
			ck.errorf(path, "%q is not an HTTP method", method)
		case seen[strings.ToUpper(method)]:
			ck.errorf(path, "%q is listed twice", method)
		}
		seen[strings.ToUpper(method)] = true
	}
	if m.Methods != nil && len(m.Methods) == 0 {
		ck.errorf(join(p, "methods"), "is empty, so it would match nothing; leave it out to match every method")
	}
	if m.Host != "" {
		checkHost(ck, join(p, "host"), m.Host)
	}
	canonical := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(m.Headers)) {
		path := join(join(p, "headers"), name)
		if err := checkHeaderName(name); err != nil {
			ck.errorf(path, "%v", err)
			continue
		}
		c := canonicalHeader(name)
		if other, dup := canonical[c]; dup {
			a, b := min(name, other), max(name, other)
			ck.errorf(path, "%q and %q are the same header (names ignore case)", a, b)
		}
		canonical[c] = name
	}
}

// checkHost accepts a host name, "*." and a host name, or an IP address
// without brackets.
func checkHost(ck *checker, path, host string) {
	if net.ParseIP(host) != nil {
		return
	}
	name := strings.TrimPrefix(host, "*.")
	if strings.Contains(name, ":") && !strings.HasPrefix(name, "[") {
		ck.errorf(path, "must not have a port: the port is ignored when matching, got %q", host)
		return
	}
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	for _, l := range labels {
		ok := l != "" && len(l) <= 63
		for i := 0; ok && i < len(l); i++ {
			c := l[i]
			ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
		}
		if !ok {
			ck.errorf(path, `must be a host name, "*.domain" or an IP address (without brackets), got %q`, host)
			return
		}
	}
}

// check validates a [group.rate]; which knobs apply, and what a global
// quota supports, is the algorithm's to say (limits.Algorithm).
func (r *Rate) check(ck *checker, p string, key KeySource) {
	alg, algOK := limits.LookupAlgorithm(string(r.Algorithm))
	if !algOK {
		oneOf(ck, join(p, "algorithm"), string(r.Algorithm), limits.AlgorithmNames(nil)...)
	}
	scopeOK := oneOf(ck, join(p, "scope"), r.Scope, ScopeLocal, ScopeGlobal)
	oneOf(ck, join(p, "mode"), r.Mode, ModeEnforce, ModeShadow)
	costOK := ck.intRange(join(p, "cost"), r.Cost, 1, maxCost)
	amountOK := r.checkAmount(ck, p)
	if !algOK {
		return // which knobs apply depends on the algorithm
	}
	by := fmt.Sprintf("by algorithm %q", r.Algorithm)
	windowed := alg.Shape == limits.ShapeWindow
	if windowed {
		if amountOK && r.Rate != 0 && r.Rate != math.Trunc(r.Rate) {
			ck.errorf(join(p, "rate"), "%s counts whole requests per window and %s per second is not whole: use limit and window", r.Algorithm, formatFloat(r.Rate))
			amountOK = false
		}
		if limit, _ := r.Quota(); amountOK && costOK && limit < r.Cost {
			at := "limit"
			if r.Rate != 0 {
				at = "rate"
			}
			ck.errorf(join(p, at), "must be ≥ cost (%d), got %d: no request could ever pass", r.Cost, limit)
		}
	}
	switch {
	case !alg.Knobs.Has(limits.KnobBurst):
		ck.unused(join(p, "burst"), r.Burst != 0, by)
	case r.Burst == 0 && !amountOK:
		// not derived for want of a rate, which is reported
	case ck.intRange(join(p, "burst"), r.Burst, 1, maxRate) && costOK && r.Burst < r.Cost:
		ck.errorf(join(p, "burst"), "must be ≥ cost (%d), got %d", r.Cost, r.Burst)
	}
	if alg.Knobs.Has(limits.KnobWarmup) {
		ck.duration(join(p, "warmup"), r.Warmup, 0, hour)
	} else {
		ck.unused(join(p, "warmup"), r.Warmup != 0, by)
	}
	if alg.Knobs.Has(limits.KnobBuckets) {
		if ck.intRange(join(p, "buckets"), r.Buckets, 2, 1000) && amountOK {
			if _, w := r.Quota(); w/time.Duration(r.Buckets) < time.Millisecond {
				ck.errorf(join(p, "buckets"), "window %s in %d buckets is under 1ms a bucket", Duration(w), r.Buckets)
			}
		}
	} else {
		ck.unused(join(p, "buckets"), r.Buckets != 0, by)
	}
	if alg.Knobs.Has(limits.KnobMaxWait) {
		ck.duration(join(p, "max_wait"), r.MaxWait, ms, min1)
	} else {
		ck.unused(join(p, "max_wait"), r.MaxWait != 0, by)
	}
	if key == KeyNone || key == "" {
		const why = `with key = "none": the group has one quota`
		ck.unused(join(p, "max_keys"), r.MaxKeys != 0, why)
		ck.unused(join(p, "key_idle_timeout"), r.KeyIdleTimeout != 0, why)
	} else {
		ck.intRange(join(p, "max_keys"), r.MaxKeys, 1, maxKeys)
		if ck.duration(join(p, "key_idle_timeout"), r.KeyIdleTimeout, sec, maxKeyIdle) && amountOK {
			if fresh := r.FreshAfter(); r.KeyIdleTimeout < fresh {
				what := "the time to refill the bucket"
				if windowed {
					what = "the window"
				}
				ck.errorf(join(p, "key_idle_timeout"), "must be ≥ %s (%s), or forgetting an idle key would reset its quota early, got %s", what, fresh, r.KeyIdleTimeout)
			}
		}
	}
	if scopeOK && r.Scope == ScopeGlobal {
		switch limit, _ := r.Quota(); {
		case alg.Global == limits.GlobalNone && alg.Paced:
			ck.errorf(join(p, "scope"), `"global" does not support algorithm %q: requests cannot wait in Redis`, r.Algorithm)
		case alg.Global == limits.GlobalNone:
			ck.errorf(join(p, "scope"), `"global" does not support algorithm %q: use %s`, r.Algorithm,
				orList(limits.AlgorithmNames(func(a *limits.Algorithm) bool { return a.Global != limits.GlobalNone })))
		case alg.Shape == limits.ShapeRate:
			// limits/redis computes in float64 nanoseconds: burst/rate up to 720h.
			if amountOK && r.Burst > 0 && time.Duration(r.FreshAfter()) > maxGlobalRefill {
				ck.errorf(join(p, "burst"), `with scope "global", burst/rate must be at most %s, got %s`, Duration(maxGlobalRefill), r.FreshAfter())
			}
		case alg.GlobalMaxLimit > 0 && amountOK && int64(limit) > alg.GlobalMaxLimit:
			ck.errorf(join(p, "limit"), `with scope "global", must be at most %d, got %d`, alg.GlobalMaxLimit, limit)
		}
		if r.Warmup != 0 {
			ck.errorf(join(p, "warmup"), `not supported with scope "global"`)
		}
		r.checkSync(ck, p, alg)
	} else if scopeOK {
		const why = `with scope "local": only a global quota is shared`
		ck.unused(join(p, "sync"), r.Sync != "" && r.Sync != SyncExact, why)
		ck.unused(join(p, "lease_period"), r.LeasePeriod != 0, why)
		ck.unused(join(p, "lease_expiry"), r.LeaseExpiry != 0, why)
	}
}

// checkSync checks how a global quota is shared (Rate.Sync) and its lease
// settings.
func (r *Rate) checkSync(ck *checker, p string, alg *limits.Algorithm) {
	if r.Sync != "" && !oneOf(ck, join(p, "sync"), r.Sync, SyncExact, SyncLeased) {
		return
	}
	if r.Sync != SyncLeased {
		const why = `with sync = "exact"`
		ck.unused(join(p, "lease_period"), r.LeasePeriod != 0, why)
		ck.unused(join(p, "lease_expiry"), r.LeaseExpiry != 0, why)
		return
	}
	if alg.Global != limits.GlobalLeased {
		ck.errorf(join(p, "sync"), `"leased" cuts the quota into blocks, which algorithm %q cannot be: it stays "exact" (leased: %s)`, r.Algorithm,
			orList(limits.AlgorithmNames(func(a *limits.Algorithm) bool { return a.Global == limits.GlobalLeased })))
	}
	if ck.duration(join(p, "lease_period"), r.LeasePeriod, 10*ms, 10*sec) &&
		ck.duration(join(p, "lease_expiry"), r.LeaseExpiry, ms, hour) && r.LeaseExpiry < 3*r.LeasePeriod {
		ck.errorf(join(p, "lease_expiry"), "must be ≥ 3 lease_periods (%s), got %s", 3*r.LeasePeriod, r.LeaseExpiry)
	}
	// A renewal takes at most what the stock holds: refill beyond the
	// stock's capacity between two renewals is lost for good.
	period := time.Duration(r.LeasePeriod)
	if alg.Shape == limits.ShapeRate {
		need := r.PerSecond() * period.Seconds()
		const lost = "the stock fills up between two renewals and the refill beyond it is lost (a leased quota admits less than its rate)"
		switch burst := float64(r.Burst); {
		case r.Burst > 0 && burst < need:
			ck.errorf(join(p, "burst"), "%d is below rate × lease_period (%g): %s; set burst ≥ %d, or a shorter lease_period",
				r.Burst, need, lost, int64(math.Ceil(need)))
		case r.Burst == 0 && math.Ceil(r.PerSecond()) < need: // the default burst: a second of the rate
			ck.errorf(join(p, "lease_period"), "%s is longer than the default burst lasts (a second of the rate): %s; set burst ≥ %d, or lease_period ≤ 1s",
				r.LeasePeriod, lost, int64(math.Ceil(need)))
		}
	} else if _, w := r.Quota(); w > 0 && w < period {
		ck.errorf(join(p, "lease_period"), "%s is longer than the window (%s): a lease's units lapse at the window's end, so a node renewing less often than that leaves windows unused; set lease_period ≤ the window", r.LeasePeriod, Duration(w))
	}
}

// checkAmount checks that the rate is given exactly one way.
func (r *Rate) checkAmount(ck *checker, p string) bool {
	hasRate, hasLimit, hasWindow := r.Rate != 0, r.Limit != 0, r.Window != 0
	switch {
	case hasRate && (hasLimit || hasWindow):
		ck.errorf(join(p, "rate"), "set rate, or limit and window, not both")
		return false
	case hasRate:
		return ck.floatRange(join(p, "rate"), r.Rate, minRate, maxRate)
	case hasLimit && !hasWindow:
		ck.errorf(join(p, "window"), "required with limit")
		return false
	case hasWindow && !hasLimit:
		ck.errorf(join(p, "limit"), "required with window")
		return false
	case hasLimit:
		ok := ck.intRange(join(p, "limit"), r.Limit, 1, maxRate)
		return ck.duration(join(p, "window"), r.Window, ms, day) && ok
	}
	ck.incompletef(p, "needs rate (per second), or limit and window")
	return false
}

// check validates a [group.concurrency]; which keys apply is the law's to
// say (adaptive.LawKind).
func (c *Concurrency) check(ck *checker, p string) {
	kind, ok := adaptive.LookupLaw(string(c.Law))
	if !ok {
		oneOf(ck, join(p, "law"), string(c.Law), adaptive.LawNames()...)
		return
	}
	law := fmt.Sprintf("by law %q", c.Law)
	if kind.FixedLimit {
		if c.Limit == 0 {
			ck.errorf(join(p, "limit"), `required with law %q`, c.Law)
		} else {
			ck.intRange(join(p, "limit"), c.Limit, 1, maxLimit)
		}
		ck.unused(join(p, "initial"), c.Initial != 0, law)
		ck.unused(join(p, "min"), c.Min != 0, law)
		ck.unused(join(p, "max"), c.Max != 0, law)
	} else {
		fixed := orList(lawNames(func(k *adaptive.LawKind) bool { return k.FixedLimit }))
		ck.unused(join(p, "limit"), c.Limit != 0, law+` (only `+fixed+` has a constant limit; adaptive laws move between min and max)`)
		minOK := ck.intRange(join(p, "min"), c.Min, 1, maxLimit)
		maxOK := ck.intRange(join(p, "max"), c.Max, 1, maxLimit)
		initOK := ck.intRange(join(p, "initial"), c.Initial, 1, maxLimit)
		if minOK && maxOK && c.Min > c.Max {
			ck.errorf(join(p, "min"), "must be ≤ max (%d), got %d", c.Max, c.Min)
		} else if initOK && minOK && c.Initial < c.Min {
			ck.errorf(join(p, "initial"), "must be ≥ min (%d), got %d", c.Min, c.Initial)
		} else if initOK && maxOK && c.Initial > c.Max {
			ck.errorf(join(p, "initial"), "must be ≤ max (%d), got %d", c.Max, c.Initial)
		}
	}
	for _, k := range c.knobs() {
		if kn, ok := kind.Knob(k.name); ok {
			ck.floatRange(join(p, k.name), k.v, kn.Min, kn.Max)
		} else {
			ck.unused(join(p, k.name), k.v != 0, law)
		}
	}
}

// knobs are the laws' own keys of c (adaptive.Knob), by name.
func (c *Concurrency) knobs() []struct {
	name string
	v    float64
} {
	return []struct {
		name string
		v    float64
	}{{"backoff", c.Backoff}, {"tolerance", c.Tolerance}}
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

// orList quotes names and joins them as `"a", "b" or "c"`.
func orList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func (t *Targets) check(ck *checker, p string, law Law) {
	kind, _ := adaptive.LookupLaw(string(law))
	ck.optionalDuration(join(p, "latency"), t.Latency, ms, hour)
	ck.floatRange(join(p, "quantile"), t.Quantile, 0.5, 0.9999)
	ck.ratio(join(p, "cpu"), t.CPU)
	ck.ratio(join(p, "memory"), t.Memory)
	ck.ratio(join(p, "cpu_pressure"), t.CPUPressure)
	if kind != nil && kind.NeedsTarget && t.Latency == 0 && t.CPU == 0 && t.Memory == 0 && t.CPUPressure == 0 {
		ck.incompletef(p, `law %q needs at least one of latency, cpu, memory or cpu_pressure`, law)
	}
}

func (q *Queue) check(ck *checker, p string) {
	oneOf(ck, join(p, "order"), q.Order, OrderFIFO, OrderLIFO, OrderAdaptive)
	ck.intRange(join(p, "max"), q.Max, 0, maxQueue)
	var waitOK bool
	if q.Max > 0 {
		waitOK = ck.duration(join(p, "max_wait"), q.MaxWait, ms, hour)
	} else {
		waitOK = ck.duration(join(p, "max_wait"), q.MaxWait, 0, hour)
	}
	targetOK := ck.duration(join(p, "codel_target"), q.CodelTarget, 0, min1)
	intervalOK := ck.duration(join(p, "codel_interval"), q.CodelInterval, ms, min1)
	if q.CodelTarget == 0 || !targetOK {
		return
	}
	if intervalOK && q.CodelTarget >= q.CodelInterval {
		ck.errorf(join(p, "codel_target"), "must be < codel_interval (%s), got %s", q.CodelInterval, q.CodelTarget)
	} else if waitOK && q.Max > 0 && q.CodelTarget > q.MaxWait {
		ck.errorf(join(p, "codel_target"), "must be ≤ max_wait (%s), got %s", q.MaxWait, q.CodelTarget)
	}
}
