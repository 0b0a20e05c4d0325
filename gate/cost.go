package gate

import (
	"time"

	"github.com/sluicehq/sluice/limits"
)

// Costs known after the work: a request is charged its cost at admission
// (EnterClassCost's, else the group's rate.cost), and once its work is done
// its real cost may correct the charge (rate.cost_header names the upstream
// response header that carries it, for the proxy; the permit service's
// release takes one). The rate stage is then charged the difference, or
// given it back, whatever the room left: a key that spent more than it had
// owes it, and waits while the refill pays it back, so over any stretch of
// time a key spends its rate (and its burst) give or take the cost of the
// one request in flight when the stretch ends.

// RateAdjuster is a RateLimiter that takes a correction of what it charged
// a key (limits.Adjuster, per key): *limits.Keyed is one. A global limiter
// that is not one makes Gate.CorrectCost report false.
type RateAdjuster interface {
	// AdjustAt charges key n more units at now (n < 0 gives them back);
	// false if the limiter cannot.
	AdjustAt(key string, now time.Time, n int64) bool
}

// AdjustAt corrects the group's one limiter, where its algorithm can.
func (s single) AdjustAt(_ string, now time.Time, n int64) bool {
	a, ok := s.l.(limits.Adjuster)
	return ok && a.AdjustAt(now, n)
}

// CostHeader returns the canonical name of the upstream response header
// that carries the real cost of a request of c's group (rate.cost_header),
// "" when the group has none.
func (c Class) CostHeader() string {
	if c.g == nil || c.g.rate == nil {
		return ""
	}
	return c.g.rate.costHeader
}

// CorrectCost corrects the rate stage of c's group once a request's real
// cost is known, after its work: charged is what the request was charged at
// admission (EnterClassCost's cost; 0: the group's rate.cost), actual its
// real cost; the difference is charged to c's key, or given back when
// actual is lower, whatever the room left (see limits.Adjuster). It reports
// whether the limiter took the correction: false for a group without a
// rate, a negative cost, or a limiter that cannot (a global quota, a token
// bucket with a warm-up: gate/spec's check refuses cost_header there). It
// reads the clock once and takes the key's shard of the rate limiter, as
// EnterClass does. Safe for concurrent use.
func (g *Gate) CorrectCost(c Class, charged, actual int64) bool {
	gr := c.g
	if gr == nil || gr.rate == nil || charged < 0 || actual < 0 {
		return false
	}
	rl := gr.rate
	if charged == 0 {
		charged = rl.cost
	}
	d := actual - charged
	if d == 0 {
		return true
	}
	a, ok := rl.lim.(RateAdjuster)
	return ok && a.AdjustAt(c.Key, g.now(), d)
}
