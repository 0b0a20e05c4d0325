package gate

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/limits/redis"
)

// RedisRate returns a Params.GlobalRate that keeps each global quota in s: a
// limits/redis Limiter named after its group (so every node running the same
// group shares its keys), with the group's algorithm and amounts as the quota
// of all nodes together, rate.max_keys bounding the keys of its local
// fallback, and rate.sync choosing exact decisions or leased blocks (with
// rate.lease_period and rate.lease_expiry). The gate closes the limiter of a
// group that a reload replaces or removes; the caller closes s after the
// gate has stopped, which closes the limiters still running.
func RedisRate(s *redis.Store) func(*configs.Group) (RateLimiter, error) {
	return func(c *configs.Group) (RateLimiter, error) {
		p, err := redisParams(c)
		if err != nil {
			return nil, err
		}
		l, err := s.NewLimiter(p)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

// redisParams maps a group's global rate onto a limits/redis quota, as
// newAlgorithm maps a local one onto package limits.
func redisParams(c *configs.Group) (redis.LimiterParams, error) {
	r := c.Rate
	p := redis.LimiterParams{Name: c.Name, MaxKeys: r.MaxKeys}
	switch r.Algorithm {
	case configs.AlgorithmTokenBucket:
		p.Algorithm, p.Rate, p.Burst = redis.TokenBucket, r.PerSecond(), int64(r.Burst)
	case configs.AlgorithmLeakyBucket:
		p.Algorithm, p.Rate, p.Burst = redis.LeakyBucket, r.PerSecond(), int64(r.Burst)
	case configs.AlgorithmFixedWindow, configs.AlgorithmSlidingWindow:
		p.Algorithm = redis.FixedWindow
		if r.Algorithm == configs.AlgorithmSlidingWindow {
			p.Algorithm = redis.SlidingWindow
		}
		n, w := r.Quota()
		p.Limit, p.Window = int64(n), w
	default:
		return p, fmt.Errorf("algorithm %q cannot keep its state in Redis", r.Algorithm)
	}
	if r.Sync == configs.SyncLeased {
		p.Sync = redis.SyncLeased
		p.Lease = redis.LeaseParams{Period: time.Duration(r.LeasePeriod), TTL: time.Duration(r.LeaseExpiry)}
	}
	return p, nil
}

// statusReporter is a RateLimiter whose quota lives in a store that can fail
// (*redis.Limiter): it tells where its decisions are made now.
type statusReporter interface {
	Status() redis.Status
}

// globalStatus is the status of the group's global quota, its decision
// counts carried over from the groups it replaced; nil when the group has
// none.
func (gr *group) globalStatus() *redis.Status {
	if gr.rate == nil {
		return nil
	}
	sr, ok := gr.rate.lim.(statusReporter)
	if !ok {
		return nil
	}
	st := sr.Status()
	b := &gr.rate.before
	st.RedisDecisions += b.RedisDecisions
	st.FallbackDecisions += b.FallbackDecisions
	st.Errors += b.Errors
	st.Timeouts += b.Timeouts
	return &st
}

// closeRate closes the group's rate limiter when it holds resources (an
// io.Closer, such as a limits/redis Limiter with its batching goroutines).
// A request that still decides on it afterwards gets the limiter's answer
// when closed (the local fallback, for limits/redis). Its error, if any, is
// dropped: nothing is lost that the caller could act on.
func (gr *group) closeRate() {
	if gr.rate == nil {
		return
	}
	if c, ok := gr.rate.lim.(io.Closer); ok {
		_ = c.Close()
	}
}

// GlobalQuota is a group's global quota whose definition lives in Redis with
// its state (*redis.Limiter): what the admin API changes on every node at
// once. Safe for concurrent use.
type GlobalQuota interface {
	// Quota is the quota in force on this node.
	Quota() redis.Quota
	// Define writes a definition to Redis and applies it here at once.
	Define(ctx context.Context, q redis.Quota) (redis.Quota, error)
	// Undefine removes it: each node goes back to its configured quota.
	Undefine(ctx context.Context) (redis.Quota, error)
}

// GlobalQuota returns the global quota of the group name; false when there
// is no such group or its rate is not kept in Redis.
func (g *Gate) GlobalQuota(name string) (GlobalQuota, bool) {
	gr := g.table.Load().byName[name]
	if gr == nil || gr.rate == nil {
		return nil, false
	}
	q, ok := gr.rate.lim.(GlobalQuota)
	return q, ok
}
