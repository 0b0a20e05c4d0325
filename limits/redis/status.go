package redis

import (
	"strconv"
	"time"
)

// Mode is where a store's decisions are made.
type Mode int32

// Modes.
const (
	// ModeRedis: decisions go to Redis (a decision that fails is still
	// answered by the fallback).
	ModeRedis Mode = iota
	// ModeFallback: Redis failed repeatedly; decisions are made by the
	// fallback, and one decision probes Redis after each backoff.
	ModeFallback
)

func (m Mode) String() string {
	switch m {
	case ModeRedis:
		return "redis"
	case ModeFallback:
		return "fallback"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Status is a snapshot of a limiter (or a store) for metrics and the admin
// API. Times are on the clock of the decisions' now.
type Status struct {
	// Mode is where decisions are made, since Since (the store's creation,
	// or the last change).
	Mode  Mode
	Since time.Time
	// NextProbe is, in ModeFallback, the earliest instant at which a
	// decision will try Redis again.
	NextProbe time.Time
	// LastError is the last failure of a call to Redis ("" if none), at
	// LastErrorAt.
	LastError   string
	LastErrorAt time.Time
	// Fallback is the policy for decisions Redis does not make.
	Fallback Fallback
	// Nodes is the node count the local fallback divides the quota by: the
	// larger of the configured count and ObservedNodes, the live nodes at the
	// last heartbeat (0 if not known).
	Nodes, ObservedNodes int
	// Decision counts of the limiter since it was built (zero in a
	// Store's status): made by Redis, made by the fallback (Redis down,
	// failed or too slow), Redis calls that failed (timeouts included), and
	// Redis calls that ran out of the Timeout. Decisions made against a
	// lease are counted in units, below.
	RedisDecisions, FallbackDecisions, Errors, Timeouts uint64
	// Timeout is how long a decision waits for Redis now: the store's
	// Timeout, or more while Redis answers slower (up to 100 ms; see
	// StoreParams.Timeout). LateBound is what the decisions Redis did not
	// answer in time may admit, in units per second on all nodes together
	// (Overshoot of the quota's rate, or of a window's limit per window;
	// -1: no bound, FallbackOpen); LateAdmitted the units they admitted
	// here.
	Timeout      time.Duration
	LateBound    float64
	LateAdmitted uint64

	// Sync is the limiter's mode ("" in a Store's status).
	Sync Sync
	// QuotaVersion is the version of the quota's definition in Redis in
	// force (Store.SetQuota); 0: the configured quota. QuotaError says why
	// a definition found in Redis is not applied ("" if none is refused).
	QuotaVersion int64
	QuotaError   string

	// Leased mode. Leases is the number of keys this node leases now, and
	// Held the units it holds on them. Outstanding is the over-admission
	// bound of those keys: the units leased out to all the nodes together,
	// as Redis counted them at this node's last renewal of each key (see
	// the package doc, "Accuracy": the nodes together admit at most the
	// exact quota plus this). LeasedUnits and RefusedUnits are the units
	// this node admitted and refused against its leases since the limiter
	// was built. Renewals counts the renewal calls that Redis answered,
	// RenewalErrors those that failed, and LastRenewal is when the last
	// answered one was sent.
	//
	// Bound is the over-admission bound of one key in theory, from the
	// quota in force: headroom (1.5) periods of its rate, rounded up
	// (Outstanding stays about this while the nodes want the whole quota).
	Leases                    int
	Held, Outstanding, Bound  int64
	LeasedUnits, RefusedUnits uint64
	Renewals, RenewalErrors   uint64
	LastRenewal               time.Time
	// Share is the rate, units per second summed over the leased keys,
	// that this node decides by while Redis is away: its max-min fair
	// part of the quota among the nodes, from its last renewals (the
	// units it holds count toward it). Rejoins counts the lease hashes
	// found with a new epoch (Redis restarted empty), and Rejoining the
	// keys whose grants are capped to their share until the other nodes
	// are back.
	Share     float64
	Rejoins   uint64
	Rejoining int
}
