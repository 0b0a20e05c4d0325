package spec

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/internal/defaults"
	"github.com/sluicehq/sluice/internal/durtext"
	"github.com/sluicehq/sluice/limits"
)

// Config is what a gate runs: its groups and the settings they share.
type Config struct {
	// Groups are tried in order; the first whose Match accepts a request
	// takes it. The last group must accept every request (an empty Match,
	// or the path prefix "/"): it takes the requests no other group does.
	Groups []Group
	// TrustedProxies are the peers whose forwarding fields are believed, for
	// key "ip": CIDR prefixes ("10.0.0.0/8"), single addresses, and "unix"
	// (TrustUnix) for clients of a unix socket (see ParseTrustedProxy).
	// Default: none, which trusts nobody.
	TrustedProxies []string
	// Interval is the control loop's period. Default DefaultInterval.
	Interval time.Duration
	// SaveInterval is how often the learned limits are written to the state
	// file (gate.Params.StateFile). Default DefaultSaveInterval.
	SaveInterval time.Duration
}

// Config defaults, and the gate's default of the state file's maximum age
// (gate.Params.StateMaxAge).
const (
	DefaultInterval     = adaptive.DefaultInterval
	DefaultSaveInterval = 30 * time.Second
	DefaultStateMaxAge  = 24 * time.Hour
)

// WithDefaults returns a copy of c with the defaults filled in, those of
// each group included. It is idempotent.
func (c Config) WithDefaults() Config {
	c.Groups = slices.Clone(c.Groups)
	for i := range c.Groups {
		c.Groups[i] = c.Groups[i].WithDefaults()
	}
	c.TrustedProxies = slices.Clone(c.TrustedProxies)
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.SaveInterval == 0 {
		c.SaveInterval = DefaultSaveInterval
	}
	return c
}

// Group returns the group called name (in c.Groups), or nil.
func (c Config) Group(name string) *Group {
	for i := range c.Groups {
		if c.Groups[i].Name == name {
			return &c.Groups[i]
		}
	}
	return nil
}

// Group is a class of requests with its own limits. Within a group,
// requests are told apart by Key (for per-key rate limits and the fair
// share) and ranked by Priority (for shedding), and the group has one
// adaptive concurrency limit. It is also the config file's [[group]]
// (package configs, by the toml tags; the json tags are the admin API's),
// where a request belongs to the first group whose Match accepts it.
type Group struct {
	// Name names the group in metrics, logs and the admin API: 1 to 64
	// letters, digits, '.', '_' or '-'. Unique. Required.
	Name string `toml:"name" json:"name"`
	// Match selects the requests of this group; empty matches every request.
	Match Match `toml:"match" json:"match"`
	// Key tells clients apart for per-key rate limits and the fair share.
	// Default KeyNone ("none").
	Key KeySource `toml:"key" json:"key"`
	// Priority is a fixed Level for the whole group, or "header:NAME"
	// (PriorityHeader) to read each request's level from a header. Lower
	// levels are shed first. Default LevelDefault ("default").
	Priority Priority `toml:"priority" json:"priority"`
	// DefaultPriority is the level of a request whose priority header is
	// missing or not a level; only with a header Priority. Default
	// LevelDefault there.
	DefaultPriority Level `toml:"default_priority,omitempty" json:"default_priority,omitempty"`
	// Rate is the static rate limit, applied per key before the concurrency
	// limit; nil means none.
	Rate *Rate `toml:"rate,omitempty" json:"rate,omitempty"`
	// Concurrency is the adaptive concurrency limit of the group.
	Concurrency Concurrency `toml:"concurrency" json:"concurrency"`
	// Targets are what the limit keeps the service inside.
	Targets Targets `toml:"targets" json:"targets"`
	// Queue is where requests wait for a concurrency slot.
	Queue Queue `toml:"queue" json:"queue"`
	// Streams bounds the group's long-lived streams (see Streams): WebSocket
	// upgrades, text/event-stream responses, gRPC calls.
	Streams Streams `toml:"streams" json:"streams"`
	// Mode is ModeEnforce (the default) or ModeShadow: a shadowed group
	// runs every stage and counts what it would have refused, and why (the
	// decision "shadow_rejected" of sluice_decisions_total, the admin API,
	// the dashboard), but admits every request (see package gate, "Shadow
	// mode"); the law keeps learning, so switching to enforce (reload or
	// PATCH) starts from the limit it learned.
	Mode Mode `toml:"mode" json:"mode"`
}

// Mode is whether a group, or its rate rule, enforces its decisions.
type Mode string

// Modes.
const (
	// ModeEnforce refuses what the limits refuse.
	ModeEnforce Mode = "enforce"
	// ModeShadow admits what the limits refuse and counts it as a would-be
	// rejection: for trying a config on live traffic before enforcing it.
	ModeShadow Mode = "shadow"
)

// Shadow reports whether m is ModeShadow.
func (m Mode) Shadow() bool { return m == ModeShadow }

// Check reports an error unless m is ModeEnforce or ModeShadow.
func (m Mode) Check() error {
	if m != ModeEnforce && m != ModeShadow {
		return fmt.Errorf(`mode must be "enforce" or "shadow", got %q`, m)
	}
	return nil
}

// Clone returns a deep copy of g that shares nothing with it.
func (g *Group) Clone() Group {
	n := *g
	n.Match.Methods = slices.Clone(g.Match.Methods)
	n.Match.Headers = maps.Clone(g.Match.Headers)
	if g.Rate != nil {
		r := *g.Rate
		n.Rate = &r
	}
	return n
}

// Concurrency is how many requests of a group may be in the upstream at
// once, and the control law that moves that limit. It is also the config
// file's [group.concurrency] (package configs, by the toml tags; the json
// tags are the admin API's).
type Concurrency struct {
	// Law is the control law. Default LawTarget when the group has a
	// target (Targets: latency, cpu, memory or cpu_pressure), else
	// LawGradient, which needs none: it backs off when the latency of the
	// last intervals rises above that of the long run.
	Law Law `toml:"law" json:"law"`
	// Limit is the limit of law "fixed", from 1 to 1e6 (required there);
	// only with "fixed".
	Limit int `toml:"limit,omitzero" json:"limit,omitempty"`
	// Initial is where an adaptive law starts (unless the state file has a
	// learned limit), within [Min, Max]. Default
	// adaptive.DefaultInitialLimit (20), clamped to [Min, Max].
	Initial int `toml:"initial,omitzero" json:"initial,omitempty"`
	// Min is the lowest limit an adaptive law may set, at least 1. Default
	// adaptive.DefaultMinLimit (1).
	Min int `toml:"min,omitzero" json:"min,omitempty"`
	// Max is the highest limit an adaptive law may set, at most 1e6.
	// Default adaptive.DefaultMaxLimit (1000; or Min, or Initial, if
	// larger).
	Max int `toml:"max,omitzero" json:"max,omitempty"`
	// Backoff is the factor law "aimd" multiplies the limit by on a drop,
	// from 0.5 to 0.99. Default: the law's (0.9).
	Backoff float64 `toml:"backoff,omitzero" json:"backoff,omitempty"`
	// Tolerance is how far law "gradient" lets the short-term latency rise
	// above the long-term one before the limit shrinks, from 1 to 10.
	// Default: the law's (1.5).
	Tolerance float64 `toml:"tolerance,omitzero" json:"tolerance,omitempty"`
	// Custom, if set, builds a law of your own for the group instead of one
	// of the laws above; Law is then only its name in read-outs (default
	// LawCustom). The gate gives it the bounds, with a learned limit as
	// Initial, whenever it builds the group's law (New, Reload, Override).
	// A config file cannot set it.
	Custom LawMaker `toml:"-" json:"-"`
}

// LawMaker builds a control law of your own (Concurrency.Custom). Its value
// is compared as a setting: two equal LawMakers are the same law, so a
// reload that keeps it keeps the law running. Give it the law's settings
// as exported fields.
type LawMaker interface {
	NewLaw(b adaptive.Bounds) (adaptive.Law, error)
}

// Law names a concurrency control law.
type Law string

// Laws.
const (
	LawFixed    Law = "fixed"    // a constant limit
	LawAIMD     Law = "aimd"     // additive increase, multiplicative decrease on drops
	LawGradient Law = "gradient" // Gradient2: short vs long latency
	LawVegas    Law = "vegas"    // TCP Vegas: estimated queue vs min latency
	LawTarget   Law = "target"   // tracks the group's Targets
	LawCustom   Law = "custom"   // Concurrency.Custom's, unless named otherwise
)

// Targets are what a group's limit keeps the service inside (the config
// file's [group.targets]). Law "target" tracks all that are set and follows
// the most restrictive, and stops acting on a resource target (CPU, memory,
// CPU pressure) it finds the limit cannot move, until the resource is back
// under it; with every law, CPU and memory beyond their targets shed the
// lowest priorities first. A zero target is off, which is every target's
// default but Quantile's.
//
// CPU, Memory and CPUPressure need a resource sampler (gate.Params.Resources):
// the gate refuses them without one.
type Targets struct {
	// Latency is the highest acceptable latency at Quantile, end to end: the
	// wait in the group's queue plus the upstream's answer; 0 is off.
	Latency time.Duration `toml:"latency" json:"latency"`
	// Quantile is the latency quantile Latency applies to, from 0.5 to
	// 0.9999: 0.99 is p99. Default DefaultQuantile (p99).
	Quantile float64 `toml:"quantile" json:"quantile"`
	// CPU is the highest acceptable CPU utilisation of what the sampler
	// watches, a ratio in [0, 1]; 0 is off. A cap: the limit holds the CPU
	// under it even when the service could do more within its latency
	// target.
	CPU float64 `toml:"cpu" json:"cpu"`
	// Memory is the highest acceptable memory utilisation, a ratio in
	// [0, 1]; 0 is off.
	Memory float64 `toml:"memory" json:"memory"`
	// CPUPressure is the highest acceptable share of time in which runnable
	// work of what the sampler watches waits for a CPU (Linux PSI,
	// cpu.pressure "some", averaged over 10 s), a ratio in [0, 1]; 0 is off.
	// It has a meaning where CPU utilisation has none (no CPU limit to
	// measure against).
	CPUPressure float64 `toml:"cpu_pressure" json:"cpu_pressure"`
}

// MarshalJSON writes t with its durations as text ("250ms"), as the
// admin API does.
func (t Targets) MarshalJSON() ([]byte, error) { return durtext.MarshalJSON(&t) }

// UnmarshalJSON reads what MarshalJSON writes onto t.
func (t *Targets) UnmarshalJSON(b []byte) error { return durtext.UnmarshalJSON(b, t) }

// Any reports whether t sets a target: latency, CPU, memory or CPU
// pressure.
func (t *Targets) Any() bool {
	return t.Latency != 0 || t.NeedsResources()
}

// NeedsResources reports whether t has a target that only a resource
// sampler can see: CPU, memory or CPU pressure.
func (t *Targets) NeedsResources() bool {
	return t.CPU != 0 || t.Memory != 0 || t.CPUPressure != 0
}

// DefaultQuantile is Targets.Quantile's default.
const DefaultQuantile = 0.99

// Queue is where requests wait for a concurrency slot (the config file's
// [group.queue], whose static defaults are configs.NewGroup's: a FIFO
// queue of 100 with CoDel).
type Queue struct {
	// Order is the order in which waiting requests get a slot. Default
	// OrderFIFO.
	Order Order `toml:"order" json:"order"`
	// Max is how many requests may wait, from 0 to 1e6; 0, the default,
	// rejects at once when the group is at its limit.
	Max int `toml:"max" json:"max"`
	// MaxWait is the longest a request waits, however calm the queue (a
	// request's own deadline also applies). Positive when Max > 0. Default
	// DefaultQueueMaxWait (500ms) when Max > 0.
	MaxWait time.Duration `toml:"max_wait" json:"max_wait"`
	// CodelTarget is CoDel's target: once the queue has not been empty for
	// CodelInterval, a request waits at most this long. Below CodelInterval
	// and at most MaxWait. 0, the default, is off.
	CodelTarget time.Duration `toml:"codel_target" json:"codel_target"`
	// CodelInterval is CoDel's interval. Default DefaultCodelInterval
	// (100ms) when CodelTarget is set.
	CodelInterval time.Duration `toml:"codel_interval" json:"codel_interval"`
}

// MarshalJSON writes q with its durations as text ("250ms"), as the
// admin API does.
func (q Queue) MarshalJSON() ([]byte, error) { return durtext.MarshalJSON(&q) }

// UnmarshalJSON reads what MarshalJSON writes onto q.
func (q *Queue) UnmarshalJSON(b []byte) error { return durtext.UnmarshalJSON(b, q) }

// Streams bounds a group's long-lived streams: a WebSocket upgrade, a
// text/event-stream response, a gRPC call. Such a request is admitted as any
// other, holding a concurrency slot until its first response byte (a gRPC
// call's response headers); from then on it holds a stream slot instead,
// and the latency its group's law sees is that time to the first byte, not
// the stream's lifetime.
type Streams struct {
	// Max is how many streams the group holds open at once, from 1 to 1e7;
	// a stream beyond it is refused, reason "streams" (503), when its first
	// byte would be sent (its upstream's answer is dropped). Default
	// DefaultStreamsMax (10000).
	Max int `toml:"max" json:"max"`
}

// DefaultStreamsMax is Streams.Max's default.
const DefaultStreamsMax = 10000

// Queue defaults.
const (
	DefaultQueueMaxWait  = 500 * time.Millisecond
	DefaultCodelInterval = adaptive.DefaultCodelInterval
)

// Order is a queue discipline.
type Order string

// Orders.
const (
	OrderFIFO Order = "fifo" // oldest first
	OrderLIFO Order = "lifo" // newest first: under overload, serves those still waiting
	// OrderAdaptive is FIFO while the queue is calm and LIFO once it has not
	// been empty for CodelInterval.
	OrderAdaptive Order = "adaptive"
)

// WithDefaults returns a copy of g with its defaults filled in (see each
// field) and its spelling normalised as Match.Normal does. It is
// idempotent.
func (g Group) WithDefaults() Group {
	g = g.Clone()
	g.Match = g.Match.Normal()
	if g.Key == "" {
		g.Key = KeyNone
	}
	if name, ok := g.Key.Header(); ok {
		g.Key = KeyHeader(CanonicalHeader(name))
	}
	if g.Priority == "" {
		g.Priority = Priority(LevelDefault)
	}
	if name, ok := g.Priority.Header(); ok {
		g.Priority = PriorityHeader(CanonicalHeader(name))
		if g.DefaultPriority == "" {
			g.DefaultPriority = LevelDefault
		}
	}
	if g.Mode == "" {
		g.Mode = ModeEnforce
	}
	g.Concurrency.Law = g.Concurrency.law(&g.Targets)
	g.Concurrency = g.Concurrency.WithDefaults()
	if g.Rate != nil {
		r := g.Rate.WithDefaults(g.Key)
		g.Rate = &r
	}
	if g.Targets.Quantile == 0 {
		g.Targets.Quantile = DefaultQuantile
	}
	q := &g.Queue
	if q.Order == "" {
		q.Order = OrderFIFO
	}
	if q.MaxWait == 0 && q.Max > 0 {
		q.MaxWait = DefaultQueueMaxWait
	}
	if q.CodelInterval == 0 && q.CodelTarget > 0 {
		q.CodelInterval = DefaultCodelInterval
	}
	if g.Streams.Max == 0 {
		g.Streams.Max = DefaultStreamsMax
	}
	return g
}

// WithDefaults returns c with its law and, for an adaptive law, its bounds
// and the law's own knobs (adaptive.LawKind.Knobs) filled in.
func (c Concurrency) WithDefaults() Concurrency {
	c = c.withLaw()
	if c.FixedLimit() {
		return c // Limit is the whole story, and has no default
	}
	if k, ok := adaptive.LookupLaw(string(c.Law)); ok && c.Custom == nil {
		for _, kn := range k.Knobs {
			if v := c.Knob(kn.Name); v != nil && *v == 0 {
				*v = kn.Default
			}
		}
	}
	if c.Min == 0 {
		c.Min = adaptive.DefaultMinLimit
	}
	if c.Max == 0 {
		c.Max = max(adaptive.DefaultMaxLimit, c.Min, c.Initial)
	}
	if c.Initial == 0 {
		c.Initial = min(max(adaptive.DefaultInitialLimit, c.Min), c.Max)
	}
	return c
}

// LawSettings is what g gives its law (adaptive.LawKind.New): its bounds,
// its fixed limit, its targets and the law's own knobs; the gate adds a
// learned limit and a managed rate (gate/policy.go), the simulator a
// managed rate.
func (g *Group) LawSettings() adaptive.LawSettings {
	cc := &g.Concurrency
	ls := adaptive.LawSettings{
		Bounds:  adaptive.Bounds{Min: cc.Min, Max: cc.Max, Initial: cc.Initial},
		Limit:   cc.Limit,
		Latency: g.Targets.Latency, Quantile: adaptive.QuantileAtLeast(g.Targets.Quantile),
		CPU: g.Targets.CPU, Memory: g.Targets.Memory, CPUPressure: g.Targets.CPUPressure,
	}
	for _, name := range adaptive.KnobNames() {
		if v, dst := cc.Knob(name), ls.Knob(name); v != nil && dst != nil {
			*dst = *v
		}
	}
	return ls
}

// Knob is the field of the law's knob called name (adaptive.Knob.Name): the
// float64 field whose toml key is name; nil for a name Concurrency has no
// field for. A law's new knob is such a field, and nothing more here.
func (c *Concurrency) Knob(name string) *float64 {
	v := reflect.ValueOf(c).Elem()
	for _, f := range reflect.VisibleFields(v.Type()) {
		if key, _, _ := strings.Cut(f.Tag.Get("toml"), ","); key == name && f.Type.Kind() == reflect.Float64 {
			return v.FieldByIndex(f.Index).Addr().Interface().(*float64)
		}
	}
	return nil
}

// withLaw is c with its law named (see Concurrency.Law): alone, it cannot
// tell whether its group has a target, and names LawTarget.
func (c Concurrency) withLaw() Concurrency {
	if c.Law == "" {
		c.Law = c.law(nil)
	}
	return c
}

// law is c's law, or its default for a group with targets t (nil: unknown,
// taken as having one): LawCustom for a custom law, LawTarget for a group
// with a target, else LawGradient, which needs none.
func (c *Concurrency) law(t *Targets) Law {
	switch {
	case c.Law != "":
		return c.Law
	case c.Custom != nil:
		return LawCustom
	case t == nil || t.Any():
		return LawTarget
	}
	return LawGradient
}

// FixedLimit reports whether c's law holds Limit and reads no bounds (a
// registered law whose adaptive.LawKind says FixedLimit: "fixed"). A custom
// law moves its limit.
func (c Concurrency) FixedLimit() bool {
	if c.Custom != nil {
		return false
	}
	k, ok := adaptive.LookupLaw(string(c.Law))
	return ok && k.FixedLimit
}

// Rate is a static rate limit (the config file's [group.rate]). Give
// either Rate (per second) or Limit and Window. Which other fields apply
// depends on Algorithm; a field set for an algorithm that does not use it
// is an error.
type Rate struct {
	// Algorithm is the rate limiting algorithm. Default AlgorithmTokenBucket.
	Algorithm Algorithm `toml:"algorithm" json:"algorithm"`
	// Rate is the sustained rate in cost units per second, > 0 and at most
	// MaxRate. Not together with Limit and Window.
	Rate float64 `toml:"rate,omitzero" json:"rate,omitempty"`
	// Limit is how many cost units a key may spend per Window, with Window.
	Limit int `toml:"limit,omitzero" json:"limit,omitempty"`
	// Window is the period of Limit, from 1ms to 24h.
	Window time.Duration `toml:"window,omitzero" json:"window,omitempty"`
	// Burst is the bucket size in cost units (token_bucket and
	// leaky_bucket): how far above the sustained rate a key may go after
	// being idle. At least Cost. Default: one second of Rate, at least Cost.
	Burst int `toml:"burst,omitzero" json:"burst,omitempty"`
	// Cost is what one request spends, from 1 to 1e6. Default 1.
	Cost int `toml:"cost" json:"cost"`
	// CostHeader names an upstream response header carrying the request's
	// real cost, a whole number of units known only after the work (such
	// as "X-Cost"): once the response head came, the rate stage is charged
	// the difference from Cost (or given it back; see gate's
	// Gate.CorrectCost), so expensive requests drain a key's quota as they
	// should; a response without it, or with a value that is not a whole
	// number from 0 to 1e6, costs Cost. The header is passed on to the
	// client. An algorithm that can take the correction only
	// (limits.Algorithm.Adjusts: all but a token bucket with a warm-up; a
	// window carries what does not fit into the next windows), scope local.
	// Default "": none.
	CostHeader string `toml:"cost_header,omitempty" json:"cost_header,omitempty"`
	// Warmup ramps a cold token bucket up to Rate over this long
	// (token_bucket, local scope only), as Guava's SmoothWarmingUp does.
	// Default 0: no warm-up.
	Warmup time.Duration `toml:"warmup,omitzero" json:"warmup,omitempty"`
	// Buckets is how many sub-windows a sliding_buckets window has, from 2 to
	// 1000. Default: the algorithm's (limits.Algorithm.Defaults: 10).
	Buckets int `toml:"buckets,omitzero" json:"buckets,omitempty"`
	// MaxWait is how long a leaky_queue request may wait for its turn
	// before it is rejected. Default: the algorithm's
	// (limits.Algorithm.Defaults: 500ms).
	MaxWait time.Duration `toml:"max_wait,omitzero" json:"max_wait,omitempty"`
	// MaxKeys bounds how many keys keep state; the least recently used is
	// dropped beyond it. Only when the group's Key is not "none". Default
	// DefaultMaxKeys.
	MaxKeys int `toml:"max_keys,omitzero" json:"max_keys,omitempty"`
	// KeyIdleTimeout drops the state of a key unused this long. It must be at
	// least the time the key's state takes to return to fresh (FreshAfter:
	// the window, or burst / rate), else forgetting a key would reset its
	// quota early. Only when the group's Key is not "none". Default
	// FreshAfter, at least MinKeyIdle.
	KeyIdleTimeout time.Duration `toml:"key_idle_timeout,omitzero" json:"key_idle_timeout,omitempty"`
	// Scope is ScopeLocal ("local", this node; the default) or ScopeGlobal
	// ("global", shared by every node through the shared store,
	// gate.Params.GlobalRate, which is [redis] for the daemon: token_bucket
	// and leaky_bucket with burst/rate up to 720h, fixed_window, and
	// sliding_window up to 999999999 a window; no warm-up).
	Scope Scope `toml:"scope" json:"scope"`
	// Mode is ModeEnforce (the default) or ModeShadow: a shadowed rate rule
	// counts the requests over it as would-be rejections (reason "rate")
	// and lets them on to the concurrency limit, which still enforces
	// (unless the group is shadowed too). A shadowed group shadows its rate
	// too, whatever this says.
	Mode Mode `toml:"mode" json:"mode"`
	// Sync is how the nodes share a global quota (scope "global" only):
	//
	//   - "exact": every decision is a Redis script call (batched per round
	//     trip); the nodes together never admit more than the quota. For
	//     strict quotas (billing). The default there.
	//   - "leased": each node leases blocks of the quota from Redis and
	//     decides locally against them, at a local limiter's cost; Redis
	//     serves one renewal per node every lease_period, whatever the
	//     request rate. A renewal asks for LeaseHeadroom (1.5) lease_periods
	//     of the node's demand, so a busy node gets more of the quota than
	//     an idle one. Only for the algorithms whose quota can be cut into
	//     blocks: token_bucket, leaky_bucket and fixed_window
	//     (sliding_window stays exact, and sync = "leased" is refused for
	//     it).
	//
	// Over-admission bound of "leased": over any interval, the nodes
	// together admit at most what "exact" would, plus the units leased out
	// when the interval starts. Each node holds about 1.5 lease_periods of
	// its demand, and while the nodes want more than the quota they are
	// granted its refill, so the units leased out are about
	//
	//	bound = 1.5 × rate × lease_period (units)
	//
	// (rate: per second; for fixed_window limit / window; LeaseBound), e.g.
	// 300 units for 2000/s and the default 100ms. A fixed window's units
	// lapse at the window's end: a leased window never admits more than its
	// limit. The bound is exported as sluice_redis_lease_bound_units, the
	// units Redis counts as leased out now as
	// sluice_redis_lease_outstanding_units, and both in /v1/status.
	Sync limits.Sync `toml:"sync,omitempty" json:"sync,omitempty"`
	// LeasePeriod is how often a node renews its leases (sync = "leased"),
	// from 10ms to 10s: shorter lowers the bound above, longer lowers the
	// Redis traffic (nodes / lease_period renewals a second). Keep it under
	// burst / rate. Default DefaultLeasePeriod (100ms).
	LeasePeriod time.Duration `toml:"lease_period,omitzero" json:"lease_period,omitempty"`
	// LeaseExpiry is how long a renewal keeps a node's lease (sync =
	// "leased"): a node that dies (kill -9) or loses Redis stops counting
	// against the quota this long after its last renewal, and the other
	// nodes get its share; the node itself stops using its units before
	// then. From 3 lease_periods to 1h. Default DefaultLeaseExpiry (2s), at
	// least 3 lease_periods.
	LeaseExpiry time.Duration `toml:"lease_expiry,omitzero" json:"lease_expiry,omitempty"`
}

// MarshalJSON writes r with its durations as text ("250ms"), as the
// admin API does.
func (r Rate) MarshalJSON() ([]byte, error) { return durtext.MarshalJSON(&r) }

// UnmarshalJSON reads what MarshalJSON writes onto r.
func (r *Rate) UnmarshalJSON(b []byte) error { return durtext.UnmarshalJSON(b, r) }

// Algorithm is a static rate limiting algorithm (see package limits).
type Algorithm string

// Algorithms.
const (
	AlgorithmFixedWindow    Algorithm = "fixed_window"
	AlgorithmSlidingLog     Algorithm = "sliding_log"
	AlgorithmSlidingWindow  Algorithm = "sliding_window"
	AlgorithmSlidingBuckets Algorithm = "sliding_buckets"
	AlgorithmTokenBucket    Algorithm = "token_bucket"
	AlgorithmLeakyBucket    Algorithm = "leaky_bucket"
	AlgorithmLeakyQueue     Algorithm = "leaky_queue"
)

// Scope is where a rate quota lives.
type Scope string

// Scopes.
const (
	ScopeLocal  Scope = "local"  // this node only
	ScopeGlobal Scope = "global" // shared by all nodes (gate.Params.GlobalRate)
)

// Rate defaults.
const (
	DefaultMaxKeys     = limits.DefaultMaxKeys
	DefaultLeasePeriod = defaults.LeasePeriod
	DefaultLeaseExpiry = defaults.LeaseExpiry
	// MinKeyIdle and MaxKeyIdle bound KeyIdleTimeout's default.
	MinKeyIdle = time.Minute
	MaxKeyIdle = 365 * 24 * time.Hour
	// MaxRate is the highest rate, in cost units per second, whose burst
	// WithDefaults derives.
	MaxRate = 1e9
	// LeaseHeadroom is how many lease periods of its demand a node asks for
	// at each renewal of a leased quota.
	LeaseHeadroom = 1.5
)

// WithDefaults returns r with its defaults filled in, for a group whose key
// is key.
func (r Rate) WithDefaults(key KeySource) Rate {
	if r.CostHeader != "" && CheckHeaderName(r.CostHeader) == nil {
		r.CostHeader = CanonicalHeader(r.CostHeader)
	}
	if r.Algorithm == "" {
		r.Algorithm = AlgorithmTokenBucket
	}
	if r.Scope == "" {
		r.Scope = ScopeLocal
	}
	if r.Mode == "" {
		r.Mode = ModeEnforce
	}
	if r.Cost == 0 {
		r.Cost = 1
	}
	if r.Scope == ScopeGlobal && r.Sync == "" {
		r.Sync = limits.SyncExact
	}
	if r.Scope == ScopeGlobal && r.Sync == limits.SyncLeased {
		if r.LeasePeriod == 0 {
			r.LeasePeriod = DefaultLeasePeriod
		}
		if r.LeaseExpiry == 0 {
			r.LeaseExpiry = max(DefaultLeaseExpiry, 3*r.LeasePeriod)
		}
	}
	if a, ok := limits.LookupAlgorithm(string(r.Algorithm)); ok {
		if ps := r.PerSecond(); a.Knobs.Has(limits.KnobBurst) && r.Burst == 0 && ps > 0 && ps <= MaxRate {
			r.Burst = max(r.Cost, int(math.Ceil(ps)))
		}
		d := a.WithDefaults(limits.Spec{Buckets: r.Buckets, MaxWait: r.MaxWait})
		if a.Knobs.Has(limits.KnobBuckets) {
			r.Buckets = d.Buckets
		}
		if a.Knobs.Has(limits.KnobMaxWait) {
			r.MaxWait = d.MaxWait
		}
	}
	if key != KeyNone && key != "" {
		if r.MaxKeys == 0 {
			r.MaxKeys = DefaultMaxKeys
		}
		if r.KeyIdleTimeout == 0 {
			r.KeyIdleTimeout = max(MinKeyIdle, r.FreshAfter())
		}
	}
	return r
}

// PerSecond returns the sustained rate in cost units per second: Rate, or
// Limit / Window. It is 0 when neither is set.
func (r *Rate) PerSecond() float64 {
	if r.Rate != 0 {
		return r.Rate
	}
	if r.Limit > 0 && r.Window > 0 {
		return float64(r.Limit) / r.Window.Seconds()
	}
	return 0
}

// Quota returns the limit per window of a window algorithm: Limit and
// Window, or Rate per second when Rate is set (a whole number, for the
// window algorithms).
func (r *Rate) Quota() (limit int, window time.Duration) {
	if r.Rate != 0 {
		return int(r.Rate), time.Second
	}
	return r.Limit, r.Window
}

// Limits is what r gives its algorithm (limits.Algorithm.New, and
// limits.Retune at runtime).
func (r *Rate) Limits() limits.Spec {
	n, w := r.Quota()
	return limits.Spec{Rate: r.PerSecond(), Limit: int64(n), Window: w, Burst: int64(r.Burst),
		Warmup: r.Warmup, MaxWait: r.MaxWait, Buckets: r.Buckets}
}

// FreshAfter is how long an unused key's state takes to become the same
// as a new key's: after it, forgetting the key changes nothing. The
// algorithm says (limits.Algorithm.FreshAfter): the window (two for
// sliding_window, whose estimate reads the previous one), the time to
// refill the bucket (burst / rate, the burst at least Cost), or max_wait
// for leaky_queue. Capped at MaxKeyIdle; 0 for an unknown algorithm.
func (r *Rate) FreshAfter() time.Duration {
	a, ok := limits.LookupAlgorithm(string(r.Algorithm))
	if !ok {
		return 0
	}
	s := r.Limits()
	s.Burst = max(s.Burst, int64(r.Cost))
	secs := a.FreshAfter(s)
	if !(secs < MaxKeyIdle.Seconds()) {
		return MaxKeyIdle
	}
	return time.Duration(math.Ceil(secs*1e3) * float64(time.Millisecond))
}

// LeaseBound returns the over-admission bound of a leased global quota, in
// cost units: LeaseHeadroom × PerSecond × LeasePeriod, rounded up; 0
// unless Sync is limits.SyncLeased.
func (r *Rate) LeaseBound() int64 {
	if r.Sync != limits.SyncLeased {
		return 0
	}
	return int64(math.Ceil(LeaseHeadroom * r.PerSecond() * r.LeasePeriod.Seconds()))
}
