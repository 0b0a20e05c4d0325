// Package api holds the JSON answers of sluice's admin API as Go types:
// package admin encodes them, `sluice status` (and any Go program) decodes
// them, and the OpenAPI document at GET /v1/openapi.json is built from them.
// It declares types, and Docs, their doc comments as data (docs.go, made
// by its test); it imports nothing of sluice's but configs (a group's
// settings, in the shape PATCH /v1/groups/{name} takes).
//
// Conventions: durations are seconds (float), ratios 0–1, instants RFC 3339;
// a figure that is not known (no sample yet, a target that is off) is null
// rather than 0. Every error answer (4xx, 5xx) is an Error.
package api

import (
	"time"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
)

// Error is the body of every error answer.
type Error struct {
	// Message says what is wrong; with one problem, it names the field.
	Message string `json:"error"`
	// Field is the key path of the one field at fault ("targets.latency"),
	// empty when the error is not about one field.
	Field string `json:"field,omitempty"`
	// Problems lists every problem found, when there are any to list.
	Problems []Problem `json:"problems,omitempty"`
}

// Problem is one field's problem.
type Problem struct {
	Field string `json:"field,omitempty"`
	Error string `json:"error"`
}

// Health is the body of GET /livez and GET /readyz: status "ok", "ready" or
// "not ready" (with the error, and status 503).
type Health struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Groups is GET /v1/groups.
type Groups struct {
	Groups []Group `json:"groups"`
}

// Group is one group: GET /v1/groups/{name}, an element of GET /v1/groups,
// and the answer of PATCH /v1/groups/{name}.
type Group struct {
	Name string   `json:"name"`
	Law  spec.Law `json:"law"`
	// Limit is the concurrency limit now, within [Min, Max].
	Limit    int `json:"limit"`
	Min      int `json:"min"`
	Max      int `json:"max"`
	InFlight int `json:"in_flight"`
	// Mode is "enforce" or "shadow" (every request admitted, what would
	// have been refused counted in Shadow).
	Mode   spec.Mode `json:"mode"`
	Shadow Shadow    `json:"shadow"`

	Queue   Queue   `json:"queue"`
	Streams Streams `json:"streams"`
	Rate    *Rate   `json:"rate"` // null: no rate limit
	Targets Targets `json:"targets"`
	// Latency is the upstream latency over the last control interval.
	Latency Latency `json:"latency"`
	// Throughput is completions (successes and drops) per second over the
	// last control interval.
	Throughput float64  `json:"throughput"`
	Requests   Requests `json:"requests"`
	// Floor is the lowest priority admitted now, null when all are.
	Floor *Floor `json:"floor"`
	Keys  int    `json:"keys"`
	// RejectedKeys are the group's most rejected keys over about the last
	// two minutes, most first (at most 10; empty without a key): who is
	// being limited, which the metrics do not say (they carry no key).
	RejectedKeys []RejectedKey `json:"rejected_keys"`

	// Decision is the law's answer at the last tick, and why.
	Decision   Decision  `json:"decision"`
	LastChange *Change   `json:"last_change"`
	Override   *Override `json:"override"`
	// Config is the group's settings in force, overrides included, in the
	// shape PATCH takes.
	Config *spec.Group `json:"config,omitempty"`
	// Notes say what a PATCH adjusted on its own (only in its answer).
	Notes []string `json:"notes,omitempty"`
}

// Shadow is what a group's shadow mode saw: the requests it admitted that
// enforcement would have refused (each counted once, by the first stage
// that would have refused it), or made wait.
type Shadow struct {
	// RateMode is the rate rule's mode, "" without a rate limit.
	RateMode spec.Mode `json:"rate_mode,omitempty"`
	// WouldReject is the would-be rejections since the group was built,
	// ByReason the same by reason (the reasons of rejected_by_reason).
	WouldReject uint64            `json:"would_reject"`
	ByReason    map[string]uint64 `json:"would_reject_by_reason"`
	// WouldQueue counts the requests enforcement would have made wait in
	// the queue (whether they would then have got a slot cannot be known).
	WouldQueue uint64 `json:"would_queue"`
	// Beyond is the requests in flight now beyond the concurrency limit,
	// holding no slot.
	Beyond int `json:"beyond_limit"`
	// RejectedKeys are the keys enforcement would have refused most, as
	// Group.RejectedKeys lists those refused for real (apart from them).
	RejectedKeys []RejectedKey `json:"would_reject_keys"`
	// Line says it in words, for the dashboard's why line and `sluice
	// status`: "shadow mode: admitting every request; would have refused
	// 120 concurrency" ("" for a group that enforces and never counted).
	Line string `json:"line,omitempty"`
}

// RejectedKey is one of a group's most rejected keys.
type RejectedKey struct {
	Key string `json:"key"`
	// Count estimates its rejections over about the last two minutes (the
	// counts halve every minute); at most Error above the true count.
	Count uint64 `json:"count"`
	Error uint64 `json:"error"`
	// Reason is why it was last rejected, as sluice_decisions_total names
	// it (rate, fair_share, ...).
	Reason string `json:"reason"`
}

// Queue is a group's queue.
type Queue struct {
	Length int `json:"length"`
	Max    int `json:"max"`
	// Order is the order in force: "fifo" or "lifo" (an adaptive queue
	// switches).
	Order string `json:"order"`
	// WaitBound is the longest a request below critical may wait now (the
	// CoDel bound), WaitBoundCritical a critical one's.
	WaitBound         float64 `json:"wait_bound_seconds"`
	WaitBoundCritical float64 `json:"wait_bound_critical_seconds"`
	// Wait is the waits of requests that left the queue in the last interval.
	Wait Latency `json:"wait"`
}

// Streams is a group's long-lived streams: WebSockets, gRPC calls and event
// streams past their first response byte, which hold a stream slot instead
// of a concurrency slot.
type Streams struct {
	// Open is the streams open now, Max the group's bound on them
	// ([group.streams] max); Opened counts those opened since the group was
	// built; the refused are in requests.by_reason["streams"].
	Open   int    `json:"open"`
	Max    int    `json:"max"`
	Opened uint64 `json:"opened"`
}

// Rate is a group's rate limit.
type Rate struct {
	// PerSecond is the token rate in cost units per second.
	PerSecond float64 `json:"per_second"`
	// Managed reports whether the law moves it.
	Managed bool `json:"managed"`
	Keys    int  `json:"keys"`
	// Global is the quota's state in Redis, for scope "global" only.
	Global *Global `json:"global,omitempty"`
}

// Targets are a group's targets; null when off.
type Targets struct {
	Latency  *float64 `json:"latency_seconds"`
	Quantile float64  `json:"quantile"`
	CPU      *float64 `json:"cpu"`
	Memory   *float64 `json:"memory"`
	// CPUPressure is the cpu_pressure target, a share of time 0–1.
	CPUPressure *float64 `json:"cpu_pressure"`
}

// Latency is a distribution of durations in seconds over one interval;
// the figures are null without samples.
type Latency struct {
	Samples uint64   `json:"samples"`
	P50     *float64 `json:"p50"`
	P90     *float64 `json:"p90"`
	P95     *float64 `json:"p95"`
	P99     *float64 `json:"p99"`
	P999    *float64 `json:"p999"`
	Mean    *float64 `json:"mean"`
	Max     *float64 `json:"max"`
	MinRTT  *float64 `json:"min_rtt,omitempty"`
}

// Requests counts a group's requests since it was built.
type Requests struct {
	Arrived  uint64            `json:"arrived"`
	Success  uint64            `json:"success"`
	Dropped  uint64            `json:"dropped"`
	Ignored  uint64            `json:"ignored"`
	Canceled uint64            `json:"canceled"`
	Rejected uint64            `json:"rejected"`
	ByReason map[string]uint64 `json:"rejected_by_reason"`
}

// Floor is the lowest priority a group admits now, and why.
type Floor struct {
	Priority string `json:"priority"`
	Reason   string `json:"reason"`
}

// Decision is a law's answer at one tick.
type Decision struct {
	At      *time.Time `json:"at"`
	Limit   int        `json:"limit"`
	Rate    float64    `json:"rate,omitempty"`
	Changed bool       `json:"changed"`
	Reason  string     `json:"reason"`
	// CPU, Memory and CPUPressure are the figures the law was given at
	// that tick (null when not known): those its reason quotes, which the
	// dashboard's cards show.
	CPU         *float64 `json:"cpu"`
	Memory      *float64 `json:"memory"`
	CPUPressure *float64 `json:"cpu_pressure"`
}

// Change is the last change of a group's limit (and rate), and why.
type Change struct {
	At       time.Time `json:"at"`
	From     int       `json:"from"`
	To       int       `json:"to"`
	RateFrom float64   `json:"rate_from,omitempty"`
	Rate     float64   `json:"rate,omitempty"`
	Reason   string    `json:"reason"`
}

// Override is a group's runtime override (PATCH /v1/groups/{name}).
type Override struct {
	At           time.Time     `json:"at"`
	KeepOnReload bool          `json:"keep_on_reload"`
	Changes      []FieldChange `json:"changes"`
}

// FieldChange is one field an override changed, its values as in the file.
type FieldChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Global is a group's global quota: where it decides now and its decision
// counts since the group was first built.
type Global struct {
	// Mode is "redis", or "fallback" while Redis is down and the fallback
	// policy decides.
	Mode string `json:"mode"`
	// Fallback is the policy for decisions Redis does not make: "local"
	// (this node's share of the quota), "open" or "closed".
	Fallback  string    `json:"fallback"`
	Decisions Decisions `json:"decisions"`
	// Errors counts the calls to Redis that failed, Timeouts those of them
	// that ran out of redis.timeout.
	Errors   uint64 `json:"errors"`
	Timeouts uint64 `json:"timeouts"`
	// Sync is how the nodes share the quota: "exact" or "leased".
	Sync string `json:"sync"`
	// QuotaVersion is the version of the quota's definition in Redis in
	// force (PATCH /v1/groups/{name}/global); 0: this node's configured
	// quota. QuotaError says why a definition found in Redis is not applied.
	QuotaVersion int64  `json:"quota_version"`
	QuotaError   string `json:"quota_error,omitempty"`
	// Lease is the leased mode's state; null with sync "exact".
	Lease *Lease `json:"lease"`
}

// Lease is a leased global quota on this node.
type Lease struct {
	// Bound is the over-admission bound of one key in cost units, from the
	// quota in force: 1.5 × rate × lease_period. Outstanding is what Redis
	// counted as leased out to all nodes together at this node's last
	// renewals (its keys summed), Held what this node holds now, on Keys
	// keys.
	Bound       int64 `json:"bound"`
	Outstanding int64 `json:"outstanding"`
	Held        int64 `json:"held"`
	Keys        int   `json:"keys"`
	// Admitted and Refused are the units this node decided against its
	// leases, locally.
	Admitted uint64 `json:"admitted"`
	Refused  uint64 `json:"refused"`
	// Renewals counts the renewal calls Redis answered, RenewalErrors
	// those that failed; LastRenewal is when the last answered one was
	// sent (null before the first).
	Renewals      uint64     `json:"renewals"`
	RenewalErrors uint64     `json:"renewal_errors"`
	LastRenewal   *time.Time `json:"last_renewal"`
	// FallbackShare is the rate, cost units per second, this node decides
	// by while Redis is away (its max-min fair part of the quota; the
	// units it holds count toward it). Rejoins counts the Redis restarts
	// found (an empty Redis: a new epoch), Rejoining the keys still capped
	// to their share until the other nodes are back.
	FallbackShare float64 `json:"fallback_share"`
	Rejoins       uint64  `json:"rejoins"`
	Rejoining     int     `json:"rejoining"`
}

// Decisions splits decisions by who made them.
type Decisions struct {
	Redis    uint64 `json:"redis"`
	Fallback uint64 `json:"fallback"`
}

// Quota is a global quota's definition in force on this node: GET, PATCH
// and DELETE /v1/groups/{name}/global.
type Quota struct {
	Group     string `json:"group"`
	Algorithm string `json:"algorithm"`
	// Rate and Burst (the buckets) or Limit and Window (the windows).
	Rate   float64          `json:"rate,omitempty"`
	Burst  int64            `json:"burst,omitempty"`
	Limit  int64            `json:"limit,omitempty"`
	Window configs.Duration `json:"window,omitempty"`
	// Version is the definition's in Redis (1, 2, ...), 0 for this node's
	// configured quota; Source says which: "redis" or "config".
	Version int64  `json:"version"`
	Source  string `json:"source"`
}

// Reload is the answer to POST /v1/reload: the groups by what the reload
// did to them, and the overrides by what became of them.
type Reload struct {
	Source           string   `json:"source"`
	Hash             string   `json:"hash"`
	Unchanged        []string `json:"unchanged"`
	Changed          []string `json:"changed"`
	Added            []string `json:"added"`
	Removed          []string `json:"removed"`
	KeptOverrides    []string `json:"kept_overrides"`
	ClearedOverrides []string `json:"cleared_overrides"`
	DroppedOverrides []string `json:"dropped_overrides"`
}
