package configs

import "github.com/sluicehq/sluice/gate/spec"

// The [[group]] tables are the gate's own types (package gate/spec): their
// toml tags are the file's keys and their docs say what each key means, so
// that a group decoded from the file is the group the gate runs, with
// nothing to convert. This package adds their static defaults (NewGroup,
// NewRate), the derived ones (SetGroupDefaults) and the checks with the
// file's lines (ValidateGroup, Config.Validate).
type (
	// Group is one [[group]]: a class of requests with its own limits. A
	// request belongs to the first group whose Match accepts it. Start
	// from [NewGroup]; zero fields documented as derived are filled by
	// [SetGroupDefaults]. Use [ValidateGroup] to check one group on its
	// own.
	Group = spec.Group
	// Match is a [group.match]: it selects requests. Every field that is
	// set must accept the request; an empty Match accepts every request.
	// See [spec.Match.Matches] for the exact rules, which the gate uses and
	// the shadowed-group check relies on.
	Match = spec.Match
	// Rate is a [group.rate]: a static rate limit (start from [NewRate]).
	Rate = spec.Rate
	// Concurrency is a [group.concurrency]: how many requests of the
	// group may be in the upstream at once, and the control law that moves
	// that limit (the law, bounds and knobs are derived as the gate derives
	// them).
	Concurrency = spec.Concurrency
	// Targets is a [group.targets]: what the group's limit keeps the
	// service inside.
	Targets = spec.Targets
	// Queue is a [group.queue]: where requests wait for a concurrency slot.
	Queue = spec.Queue
	// Streams is a [group.streams]: the bound on a group's long-lived
	// streams.
	Streams = spec.Streams
)

// Mode is whether a group or a rate rule enforces its decisions:
// "enforce" or "shadow".
type Mode = spec.Mode

// Modes.
const (
	ModeEnforce = spec.ModeEnforce
	ModeShadow  = spec.ModeShadow
)

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
