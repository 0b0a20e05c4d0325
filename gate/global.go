package gate

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/sluicehq/sluice/limits"
)

// A rate with scope "global" is the quota of every node together, kept in a
// shared store: Params.GlobalRate builds its RateLimiter (package
// gate/redisrate keeps it in Redis). The gate needs nothing more of it to
// decide; what such a limiter can also do, it says through the interfaces
// below, which the read-outs and the admin API use.

// GlobalReporter is a global RateLimiter whose store can fail: it tells
// where its decisions are made now, for GroupStatus.Global.
type GlobalReporter interface {
	GlobalStatus() GlobalStatus
}

// GlobalStatus is a global quota's state on this node: where decisions are
// made (in the words of the admin API), the fallback policy and how the
// nodes share the quota, and the figures (limits.StoreStatus; its
// decision counts are since the group was first built: reloads carry them
// over). Times are on the clock of the decisions.
type GlobalStatus struct {
	// Mode is where decisions are made, since Since: "redis" (the shared
	// store), or "fallback" while the store is down and Fallback decides.
	Mode string
	// Fallback is the policy for decisions the store does not make:
	// "local" (this node's share of the quota), "open" or "closed".
	Fallback limits.Fallback
	// Sync is how the nodes share the quota: "exact" or "leased".
	Sync limits.Sync
	limits.StoreStatus
}

// GlobalQuota is a group's global quota whose definition lives in the
// shared store with its state: what the admin API changes on every node at
// once. Safe for concurrent use.
type GlobalQuota interface {
	// Quota is the quota in force on this node.
	Quota() Quota
	// Define writes a definition to the store and applies it here at once.
	// Amounts the quota's algorithm cannot take are refused with an error
	// that wraps ErrInvalidQuota.
	Define(ctx context.Context, q Quota) (Quota, error)
	// Undefine removes it: each node goes back to its configured quota.
	Undefine(ctx context.Context) (Quota, error)
}

// Quota is a global quota's amounts: Rate (cost units per second) and Burst
// for the buckets, Limit per Window for the windows.
type Quota struct {
	Algorithm string
	Rate      float64
	Burst     int64
	Limit     int64
	Window    time.Duration
	// Version numbers the definitions in the store (1, 2, ...); 0 is the
	// configured quota.
	Version int64
}

// ErrInvalidQuota is wrapped by the errors of GlobalQuota.Define for
// amounts the quota cannot take.
var ErrInvalidQuota = errors.New("gate: invalid global quota")

// globalStatus is the status of the group's global quota, its decision
// counts carried over from the groups it replaced; nil when the group has
// none.
func (gr *group) globalStatus() *GlobalStatus {
	if gr.rate == nil {
		return nil
	}
	sr, ok := gr.rate.lim.(GlobalReporter)
	if !ok {
		return nil
	}
	st := sr.GlobalStatus()
	b := &gr.rate.before
	st.StoreDecisions += b.StoreDecisions
	st.FallbackDecisions += b.FallbackDecisions
	st.Errors += b.Errors
	st.Timeouts += b.Timeouts
	return &st
}

// closeRate closes the group's rate limiter when it holds resources (an
// io.Closer, such as a Redis-backed limiter with its batching goroutines).
// A request that still decides on it afterwards gets the limiter's answer
// when closed (the local fallback, for Redis). Its error, if any, is
// dropped: nothing is lost that the caller could act on.
func (gr *group) closeRate() {
	if gr.rate == nil {
		return
	}
	if c, ok := gr.rate.lim.(io.Closer); ok {
		_ = c.Close()
	}
}

// GlobalQuota returns the global quota of the group name; false when there
// is no such group or its rate limiter has no definition to change.
func (g *Gate) GlobalQuota(name string) (GlobalQuota, bool) {
	gr := g.table.Load().byName[name]
	if gr == nil || gr.rate == nil {
		return nil, false
	}
	q, ok := gr.rate.lim.(GlobalQuota)
	return q, ok
}
