package configs

import "github.com/sluicehq/sluice/gate/spec"

// Group is one [[group]]: a class of requests with its own limits. A request
// belongs to the first group whose Match accepts it. Within a group, requests
// are told apart by Key (for per-key rate limits) and ranked by Priority
// (for shedding), and the group has one adaptive concurrency limit.
//
// Start from [NewGroup]; zero fields documented as "derived" are filled by
// [Group.SetDefaults]. Use [Group.Validate] to check one group on its own.
type Group struct {
	// Name names the group in metrics, logs and the admin API: 1 to 64
	// letters, digits, '.', '_' or '-'. Unique. Required.
	Name string `toml:"name" json:"name"`
	// Match selects the requests of this group; empty matches every request.
	Match Match `toml:"match" json:"match"`
	// Key tells clients apart for per-key rate limits. Default "none".
	Key KeySource `toml:"key" json:"key"`
	// Priority is a fixed level for the whole group, or "header:NAME" to
	// read the level from a request header. Lower levels are shed first.
	// Default "default".
	Priority Priority `toml:"priority" json:"priority"`
	// DefaultPriority is the level of a request whose priority header is
	// missing or not a level; only with a "header:" Priority. Derived:
	// "default".
	DefaultPriority Level `toml:"default_priority,omitempty" json:"default_priority,omitempty"`
	// Rate is the static rate limit, applied per key before the
	// concurrency limit; nil means none.
	Rate *Rate `toml:"rate,omitempty" json:"rate,omitempty"`
	// Concurrency is the adaptive concurrency limit of the group.
	Concurrency Concurrency `toml:"concurrency" json:"concurrency"`
	// Targets are what the limit keeps the service inside.
	Targets Targets `toml:"targets" json:"targets"`
	// Queue is where requests wait for a concurrency slot.
	Queue Queue `toml:"queue" json:"queue"`
	// Streams bounds the group's long-lived streams: WebSocket upgrades,
	// text/event-stream responses, gRPC calls. Each is admitted as a request
	// and, from its first response byte on (a gRPC call's response headers),
	// holds a stream slot instead of a concurrency slot; its group's law
	// sees that time to the first byte as its latency, not its lifetime.
	Streams Streams `toml:"streams" json:"streams"`
	// Mode is "enforce" (refuse what the limits refuse) or "shadow": every
	// stage still decides, and what it would have refused is counted (the
	// decision "shadow_rejected" of sluice_decisions_total, the admin API,
	// the dashboard), but every request is admitted; the law keeps
	// learning, so switching to "enforce" (reload or PATCH) starts from the
	// limit it learned. Default "enforce".
	Mode Mode `toml:"mode" json:"mode"`
}

// Mode is whether a group or a rate rule enforces its decisions:
// "enforce" or "shadow".
type Mode = spec.Mode

// Modes.
const (
	ModeEnforce = spec.ModeEnforce
	ModeShadow  = spec.ModeShadow
)

// Match is a [group.match]: it selects requests (spec.Match, whose fields
// and their toml tags are the table's keys). Every field that is set must
// accept the request; an empty Match accepts every request. See
// [spec.Match.Matches] for the exact rules, which the gate uses and the
// shadowed-group check relies on.
type Match = spec.Match

// Rate is a [group.rate]: a static rate limit. Give either Rate (per second)
// or Limit and Window. Which other fields apply depends on Algorithm; a field
// set for an algorithm that does not use it is an error.
type Rate struct {
	// Algorithm is the rate limiting algorithm. Default "token_bucket".
	Algorithm Algorithm `toml:"algorithm" json:"algorithm"`
	// Rate is the sustained rate in cost units per second, > 0 and at
	// most 1e9. Not together with Limit and Window.
	Rate float64 `toml:"rate,omitzero" json:"rate,omitempty"`
	// Limit is how many cost units a key may spend per Window, with Window.
	Limit int `toml:"limit,omitzero" json:"limit,omitempty"`
	// Window is the period of Limit, from 1ms to 24h.
	Window Duration `toml:"window,omitzero" json:"window,omitempty"`
	// Burst is the bucket size in cost units (token_bucket and
	// leaky_bucket): how far above the sustained rate a key may go after
	// being idle. At least Cost. Derived: one second of rate, at least Cost.
	Burst int `toml:"burst,omitzero" json:"burst,omitempty"`
	// Cost is what one request spends, from 1 to 1e6. Default 1.
	Cost int `toml:"cost" json:"cost"`
	// CostHeader names an upstream response header carrying the request's
	// real cost, a whole number of units known only after the work (such
	// as "X-Cost"): once the response head came, the rate stage is charged
	// the difference from Cost (or given it back), so expensive requests
	// drain a key's quota as they should; a response without it, or with a
	// value that is not a whole number from 0 to 1e6, costs Cost. The header
	// is passed on to the client. Algorithms token_bucket (without warmup),
	// leaky_bucket and leaky_queue; scope "local". Default: none.
	CostHeader string `toml:"cost_header,omitempty" json:"cost_header,omitempty"`
	// Warmup ramps a cold token bucket up to Rate over this long
	// (token_bucket, local scope only), as Guava's SmoothWarmingUp does.
	// Default 0: no warm-up.
	Warmup Duration `toml:"warmup,omitzero" json:"warmup,omitempty"`
	// Buckets is how many sub-windows a sliding_buckets window has, from 2 to
	// 1000. Derived: 10.
	Buckets int `toml:"buckets,omitzero" json:"buckets,omitempty"`
	// MaxWait is how long a leaky_queue request may wait for its turn
	// before it is rejected. Derived: 500ms.
	MaxWait Duration `toml:"max_wait,omitzero" json:"max_wait,omitempty"`
	// MaxKeys bounds how many keys keep state; the least recently used is
	// dropped beyond it. Only when the group's Key is not "none". Derived:
	// 100000.
	MaxKeys int `toml:"max_keys,omitzero" json:"max_keys,omitempty"`
	// KeyIdleTimeout drops the state of a key unused this long. It must be at
	// least the time the key's state takes to return to fresh (the window,
	// or burst / rate), else forgetting a key would reset its quota early.
	// Only when the group's Key is not "none". Derived: that time, at least
	// 1m.
	KeyIdleTimeout Duration `toml:"key_idle_timeout,omitzero" json:"key_idle_timeout,omitempty"`
	// Scope is "local" (this node) or "global" (shared by every node through
	// [redis]: token_bucket and leaky_bucket with burst/rate up to 720h,
	// fixed_window, and sliding_window up to 999999999 a window; no
	// warm-up). Default "local".
	Scope Scope `toml:"scope" json:"scope"`
	// Mode is "enforce" or "shadow": a shadowed rate rule counts the
	// requests over it as would-be rejections (reason "rate") and lets them
	// on to the concurrency limit, which still enforces (unless the group
	// is shadowed too). Default "enforce".
	Mode Mode `toml:"mode" json:"mode"`
	// Sync is how the nodes share a global quota (scope "global" only):
	//
	//   - "exact": every decision is a Redis script call (batched per round
	//     trip); the nodes together never admit more than the quota. For
	//     strict quotas (billing).
	//   - "leased": each node leases blocks of the quota from Redis and
	//     decides locally against them, at a local limiter's cost; Redis
	//     serves one renewal per node every lease_period, whatever the
	//     request rate. A renewal asks for 1.5 lease_periods of the node's
	//     demand, so a busy node gets more of the quota than an idle one.
	//     Only for the algorithms whose quota can be cut into blocks:
	//     token_bucket, leaky_bucket and fixed_window (sliding_window stays
	//     exact, and sync = "leased" is refused for it).
	//
	// Over-admission bound of "leased": over any interval, the nodes
	// together admit at most what "exact" would, plus the units leased out
	// when the interval starts. Each node holds about 1.5 lease_periods of
	// its demand, and while the nodes want more than the quota they are
	// granted its refill, so the units leased out are about
	//
	//	bound = 1.5 × rate × lease_period (units)
	//
	// (rate: per second; for fixed_window limit / window), e.g. 300 units
	// for 2000/s and the default 100ms. A fixed window's units lapse at the
	// window's end: a leased window never admits more than its limit. The
	// bound is exported as sluice_redis_lease_bound_units, the units Redis
	// counts as leased out now as sluice_redis_lease_outstanding_units, and
	// both in /v1/status. Default "exact".
	Sync Sync `toml:"sync,omitempty" json:"sync,omitempty"`
	// LeasePeriod is how often a node renews its leases (sync = "leased"),
	// from 10ms to 10s: shorter lowers the bound above, longer lowers the
	// Redis traffic (nodes / lease_period renewals a second). Keep it under
	// burst / rate. Derived: 100ms.
	LeasePeriod Duration `toml:"lease_period,omitzero" json:"lease_period,omitempty"`
	// LeaseExpiry is how long a renewal keeps a node's lease (sync =
	// "leased"): a node that dies (kill -9) or loses Redis stops counting
	// against the quota this long after its last renewal, and the other
	// nodes get its share; the node itself stops using its units before
	// then. From 3 lease_periods to 1h. Derived: 2s, at least 3
	// lease_periods.
	LeaseExpiry Duration `toml:"lease_expiry,omitzero" json:"lease_expiry,omitempty"`
}

// Algorithm is a static rate limiting algorithm: the gate's (spec.Algorithm).
type Algorithm = spec.Algorithm

// Algorithms.
const (
	// AlgorithmFixedWindow counts per aligned window; cheap, lets up to
	// twice the limit through around a window edge.
	AlgorithmFixedWindow = spec.AlgorithmFixedWindow
	// AlgorithmSlidingLog keeps a timestamp per request; exact, memory grows
	// with Limit.
	AlgorithmSlidingLog = spec.AlgorithmSlidingLog
	// AlgorithmSlidingWindow weights the previous window's count by its
	// overlap with the sliding window; approximate, two counters.
	AlgorithmSlidingWindow = spec.AlgorithmSlidingWindow
	// AlgorithmSlidingBuckets splits the window into Buckets counters.
	AlgorithmSlidingBuckets = spec.AlgorithmSlidingBuckets
	// AlgorithmTokenBucket refills Rate tokens per second up to Burst.
	AlgorithmTokenBucket = spec.AlgorithmTokenBucket
	// AlgorithmLeakyBucket is the leaky bucket as a meter (GCRA): admits a
	// request if the bucket, draining at Rate, has room for it in Burst.
	AlgorithmLeakyBucket = spec.AlgorithmLeakyBucket
	// AlgorithmLeakyQueue is the leaky bucket as a queue: requests wait and
	// leave at exactly Rate, and are rejected after MaxWait.
	AlgorithmLeakyQueue = spec.AlgorithmLeakyQueue
)

// Scope is where a rate quota lives: "local" (this node only) or "global"
// (shared by all nodes in Redis).
type Scope = spec.Scope

// Scopes.
const (
	ScopeLocal  = spec.ScopeLocal
	ScopeGlobal = spec.ScopeGlobal
)

// Sync is how the nodes share a global quota: "exact" (every decision in
// Redis) or "leased" (decided locally against blocks leased from Redis).
type Sync = spec.Sync

// Syncs.
const (
	SyncExact  = spec.SyncExact
	SyncLeased = spec.SyncLeased
)

// Concurrency is a [group.concurrency]: how many requests of the group may
// be in the upstream at once, and the control law that moves that limit
// (spec.Concurrency, whose fields and their toml tags are the table's keys;
// the law, bounds and knobs are derived as the gate derives them).
type Concurrency = spec.Concurrency

// Law is a concurrency control law: the gate's (spec.Law).
type Law = spec.Law

// Laws.
const (
	LawFixed    = spec.LawFixed    // a constant limit
	LawAIMD     = spec.LawAIMD     // additive increase, multiplicative decrease on drops
	LawGradient = spec.LawGradient // Gradient2: short vs long latency
	LawVegas    = spec.LawVegas    // TCP Vegas: estimated queue vs min latency
	LawTarget   = spec.LawTarget   // tracks the group's Targets
)

// Targets is a [group.targets]: what the group's limit keeps the service
// inside. Law "target" tracks all that are set and follows the most
// restrictive, and stops acting on a resource target (CPU, memory, CPU
// pressure) it finds the limit cannot move, until the resource is back
// under it; with every law, CPU and memory beyond their targets shed the
// lowest priorities first. A zero target is off.
type Targets struct {
	// Latency is the highest acceptable latency at Quantile, end to end: the
	// wait in the group's queue plus the upstream's answer; 0 is off.
	// Default 0.
	Latency Duration `toml:"latency" json:"latency"`
	// Quantile is the latency quantile Latency applies to, from 0.5 to
	// 0.9999: 0.99 is p99. Default 0.99.
	Quantile float64 `toml:"quantile" json:"quantile"`
	// CPU is the highest acceptable CPU utilisation of what the probe
	// watches, a ratio in [0, 1]; 0 is off. A cap: the limit holds the CPU
	// under it even when the service could do more within its latency
	// target. Default 0.
	CPU float64 `toml:"cpu" json:"cpu"`
	// Memory is the highest acceptable memory utilisation, a ratio in
	// [0, 1]; 0 is off. Default 0.
	Memory float64 `toml:"memory" json:"memory"`
	// CPUPressure is the highest acceptable share of time in which runnable
	// work of what the probe watches waits for a CPU (Linux PSI, cpu.pressure
	// "some", averaged over 10 s), a ratio in [0, 1]; 0 is off. It has a
	// meaning where CPU utilisation has none (no CPU limit to measure
	// against). Default 0.
	CPUPressure float64 `toml:"cpu_pressure" json:"cpu_pressure"`
}

// Queue is a [group.queue]: where requests wait for a concurrency slot.
type Queue struct {
	// Order is the order in which waiting requests get a slot. Default
	// "fifo".
	Order Order `toml:"order" json:"order"`
	// Max is how many requests may wait, from 0 to 1e6; 0 rejects at once
	// when the group is at its limit. Default 100.
	Max int `toml:"max" json:"max"`
	// MaxWait is the longest a request waits, however calm the queue
	// (a request's own deadline also applies). Positive when Max > 0.
	// Default 500ms.
	MaxWait Duration `toml:"max_wait" json:"max_wait"`
	// CodelTarget is CoDel's target: once the queue has not been empty for
	// CodelInterval, a request waits at most this long. 0 turns CoDel off.
	// Below CodelInterval and at most MaxWait. Default 5ms.
	CodelTarget Duration `toml:"codel_target" json:"codel_target"`
	// CodelInterval is CoDel's interval. Default 100ms.
	CodelInterval Duration `toml:"codel_interval" json:"codel_interval"`
}

// Streams is a [group.streams]: the bound on a group's long-lived streams
// (spec.Streams).
type Streams = spec.Streams

// Order is a queue discipline: the gate's (spec.Order).
type Order = spec.Order

// Orders.
const (
	OrderFIFO = spec.OrderFIFO // oldest first
	OrderLIFO = spec.OrderLIFO // newest first: under overload, serves those still waiting
	// OrderAdaptive is FIFO while the queue is calm and LIFO once it has not
	// been empty for CodelInterval.
	OrderAdaptive = spec.OrderAdaptive
)
