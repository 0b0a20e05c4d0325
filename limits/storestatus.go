package limits

import "time"

// Fallback is what a quota kept in a shared store does with a decision that
// the store cannot make in time (an error, a timeout, or the store being
// skipped while it is down). The values are those of the configuration's
// [redis] fallback; limits/redis implements them.
type Fallback string

// Fallback policies.
const (
	// FallbackLocal decides locally with this node's share of the global
	// quota: the rate (or limit) and the burst divided by the node count.
	FallbackLocal Fallback = "local"
	// FallbackOpen admits every request.
	FallbackOpen Fallback = "open"
	// FallbackClosed rejects every request.
	FallbackClosed Fallback = "closed"
)

// Sync is how the nodes share a quota kept in a shared store. The values
// are those of the configuration's [group.rate] sync; limits/redis
// implements them.
type Sync string

// Sync modes (see limits/redis's package doc).
const (
	// SyncExact: the store makes every decision. The default; for strict
	// quotas (billing).
	SyncExact Sync = "exact"
	// SyncLeased: each node leases blocks of the quota from the store and
	// decides locally against them, renewing them in the background.
	// Only for algorithms whose quota is a stock of units that can be cut
	// into blocks (Algorithm.Global is GlobalLeased).
	SyncLeased Sync = "leased"
)

// StoreStatus is the state of a quota kept in a shared store (such as
// limits/redis's) on this node, in plain figures: what limits/redis's
// Status reports and gate.GlobalStatus shows, both embedding it, each with
// its own words for where decisions are made, beside the Fallback policy
// and the Sync mode. Times are on the clock of the decisions' now.
type StoreStatus struct {
	// Since is when decisions began to be made where they are made now
	// (the store's creation, or the last change of mode). NextProbe is,
	// while the fallback decides, the earliest instant at which a decision
	// will try the store again.
	Since, NextProbe time.Time
	// LastError is the last failure of a call to the store ("" if none),
	// at LastErrorAt.
	LastError   string
	LastErrorAt time.Time
	// Nodes is the node count the local fallback divides the quota by: the
	// larger of the configured count and ObservedNodes, the live nodes at
	// the last heartbeat (0 if not known).
	Nodes, ObservedNodes int
	// Decision counts of the limiter (zero in a store's status): made by
	// the store, made by the fallback (store down, failed or too slow),
	// calls to the store that failed (timeouts included), and calls that
	// ran out of the timeout. Decisions made against a lease are counted
	// in units, below. Since the limiter was built; gate.GlobalStatus's
	// since the group was first built (reloads carry them over).
	StoreDecisions, FallbackDecisions, Errors, Timeouts uint64
	// Timeout is how long a decision waits for the store now: the
	// configured timeout, or more while the store answers slower (for
	// limits/redis, up to 100 ms: StoreParams.Timeout). LateBound is what
	// the decisions the store did not answer in time may admit, in units
	// per second on all nodes together (Overshoot of the quota's rate, or
	// of a window's limit per window; -1: no bound, fallback open);
	// LateAdmitted the units they admitted here.
	Timeout      time.Duration
	LateBound    float64
	LateAdmitted uint64

	// QuotaVersion is the version of the quota's definition in the store
	// in force (limits/redis's Store.SetQuota, gate.GlobalQuota.Define); 0:
	// the configured quota. QuotaError says why a definition found in the
	// store is not applied ("" if none is refused).
	QuotaVersion int64
	QuotaError   string

	// Leased mode. Leases is the number of keys this node leases now, and
	// Held the units it holds on them. Outstanding is the over-admission
	// bound of those keys: the units leased out to all the nodes together,
	// as the store counted them at this node's last renewal of each key
	// (see limits/redis's package doc, "Accuracy": the nodes together admit
	// at most the exact quota plus this). LeasedUnits and RefusedUnits are
	// the units this node admitted and refused against its leases since the
	// limiter was built. Renewals counts the renewal calls that the store
	// answered, RenewalErrors those that failed, and LastRenewal is when the
	// last answered one was sent.
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
	// that this node decides by while the store is away: its max-min fair
	// part of the quota among the nodes, from its last renewals (the units
	// it holds count toward it). Rejoins counts the lease hashes found with
	// a new epoch (the store restarted empty), and Rejoining the keys whose
	// grants are capped to their share until the other nodes are back.
	Share     float64
	Rejoins   uint64
	Rejoining int
}
