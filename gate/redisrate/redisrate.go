// Package redisrate keeps the global quotas of a gate (rate scope "global")
// in Redis: it builds each group's limiter on a limits/redis Store and
// adapts it to what the gate asks of a global limiter (gate.RateLimiter,
// gate.GlobalReporter, gate.GlobalQuota). It is the only tie between the
// gate and Redis: a program that has no global quota need not link it.
package redisrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/limits"
	"github.com/sluicehq/sluice/limits/redis"
)

// New returns a gate.Params.GlobalRate that keeps each global quota in s: a
// limits/redis Limiter named after its group (so every node running the same
// group shares its keys), with the group's algorithm and amounts as the quota
// of all nodes together, Rate.MaxKeys bounding the keys of its local
// fallback, and Rate.Sync choosing exact decisions or leased blocks (with
// Rate.LeasePeriod and Rate.LeaseExpiry). The gate closes the limiter of a
// group that a reload replaces or removes; the caller closes s after the
// gate has stopped, which closes the limiters still running.
func New(s *redis.Store) func(*gate.Group) (gate.RateLimiter, error) {
	return func(g *gate.Group) (gate.RateLimiter, error) {
		p, err := Params(g)
		if err != nil {
			return nil, err
		}
		l, err := s.NewLimiter(p)
		if err != nil {
			return nil, err
		}
		return Limiter{l}, nil
	}
}

// Params maps a group's global rate onto a limits/redis quota, as the gate
// maps a local one onto package limits.
func Params(g *gate.Group) (redis.LimiterParams, error) {
	r := g.Rate
	if r == nil {
		return redis.LimiterParams{}, fmt.Errorf("group %q has no rate", g.Name)
	}
	a, ok := limits.LookupAlgorithm(string(r.Algorithm))
	if !ok || a.Global == limits.GlobalNone {
		return redis.LimiterParams{}, fmt.Errorf("algorithm %q cannot keep its state in Redis", r.Algorithm)
	}
	// limits/redis implements a global algorithm under its registry name
	// (limits.Algorithm.Global), from the amount of its shape.
	p := redis.LimiterParams{Name: g.Name, MaxKeys: r.MaxKeys, Algorithm: redis.Algorithm(a.Name)}
	s := r.Limits()
	switch a.Shape {
	case limits.ShapeRate:
		p.Rate, p.Burst = s.Rate, s.Burst
	case limits.ShapeWindow:
		p.Limit, p.Window = s.Limit, s.Window
	}
	p.Sync = r.Sync
	if r.Sync == limits.SyncLeased {
		p.Lease = redis.LeaseParams{Period: r.LeasePeriod, TTL: r.LeaseExpiry}
	}
	return p, nil
}

// Limiter is a limits/redis Limiter as the gate sees a global limiter. Safe
// for concurrent use.
type Limiter struct{ l *redis.Limiter }

// AllowAt decides n units for key at now (gate.RateLimiter).
func (l Limiter) AllowAt(key string, now time.Time, n int64) limits.Result {
	return l.l.AllowAt(key, now, n)
}

// Policy is the quota's policy (gate.RateLimiter).
func (l Limiter) Policy() limits.Policy { return l.l.Policy() }

// Close stops the limiter's goroutines.
func (l Limiter) Close() error { return l.l.Close() }

// GlobalStatus tells where the decisions are made now (gate.GlobalReporter).
func (l Limiter) GlobalStatus() gate.GlobalStatus {
	s := l.l.Status()
	return gate.GlobalStatus{Mode: s.Mode.String(), Fallback: s.Fallback, Sync: s.Sync,
		StoreStatus: s.StoreStatus}
}

// Quota is the quota in force on this node (gate.GlobalQuota).
func (l Limiter) Quota() gate.Quota { return quotaOf(l.l.Quota()) }

// Define writes a definition to Redis and applies it here at once
// (gate.GlobalQuota).
func (l Limiter) Define(ctx context.Context, q gate.Quota) (gate.Quota, error) {
	now, err := l.l.Define(ctx, redis.Quota{Algorithm: redis.Algorithm(q.Algorithm), Rate: q.Rate, Burst: q.Burst,
		Limit: q.Limit, Window: q.Window, Version: q.Version})
	return quotaOf(now), quotaErr(err)
}

// Undefine removes the definition from Redis (gate.GlobalQuota).
func (l Limiter) Undefine(ctx context.Context) (gate.Quota, error) {
	now, err := l.l.Undefine(ctx)
	return quotaOf(now), quotaErr(err)
}

func quotaOf(q redis.Quota) gate.Quota {
	return gate.Quota{Algorithm: string(q.Algorithm), Rate: q.Rate, Burst: q.Burst, Limit: q.Limit, Window: q.Window, Version: q.Version}
}

// quotaErr makes an invalid quota's error a gate.ErrInvalidQuota too.
func quotaErr(err error) error {
	if errors.Is(err, redis.ErrInvalidQuota) {
		return invalidQuota{err}
	}
	return err
}

type invalidQuota struct{ error }

func (e invalidQuota) Unwrap() []error { return []error{e.error, gate.ErrInvalidQuota} }
