package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/limits"
)

// Limiter is a global quota: one rate algorithm per key, its state in Redis,
// shared by every node. Each decision is one round trip (a Lua script run
// by EVALSHA, shared with the concurrent decisions of other callers), whose
// clock is Redis's TIME, so the nodes' clocks never matter.
//
// A decision never fails: if Redis cannot answer within the store's
// Timeout, or the store has stopped calling it while it is down, the
// decision is made by the store's Fallback policy, the local one deciding
// with this node's share of the quota (rate, burst or limit divided by the
// node count) in a limits.Keyed of the same algorithm. Status tells which.
//
// Results have the semantics of the local algorithm of the same name (see
// package limits): from the same state at the same instants, Redis and the
// local algorithm give the same Result (TestExact). Safe for concurrent use.
type Limiter struct {
	s      *Store
	own    bool // built by New: Close closes s
	p      LimiterParams
	scr    *script
	prefix string // the keys: prefix + key + "}"
	a1, a2 any    // the script's amount arguments, boxed once
	limit  int64
	policy limits.Policy

	local    *limits.Keyed
	setShare func(nodes int) error // sets the local template's amounts
	b        *batcher              // nil: a script call per decision

	redisN, fallbackN, errN, timeoutN atomic.Uint64
	closed                            atomic.Bool
}

// New returns a Limiter with a Store of its own, closed with it. Several
// quotas on one Redis should share a Store (Open, then Store.NewLimiter).
func New(p Params) (*Limiter, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s, err := Open(p.StoreParams)
	if err != nil {
		return nil, err
	}
	l, err := s.NewLimiter(p.LimiterParams)
	if err != nil {
		s.Close()
		return nil, err
	}
	l.own = true
	return l, nil
}

// keyTag names an algorithm's state in keys: the buckets share theirs.
var keyTag = map[Algorithm]string{TokenBucket: "gcra", LeakyBucket: "gcra", FixedWindow: "fw", SlidingWindow: "sw"}

// NewLimiter returns a limiter of quota p on s. Its keys are
//
//	KeyPrefix + Name + ":" + {gcra|fw|sw} + ":{" + key + "}"
//
// The caller's key is the hash tag, so a Redis Cluster spreads keys over
// its nodes by the caller's key (a key holding '}' only moves the tag's end;
// names stay distinct).
func (s *Store) NewLimiter(p LimiterParams) (*Limiter, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, errors.New("limits/redis: the store is closed")
	}
	l := &Limiter{
		s: s, p: p, scr: s.clock[p.Algorithm],
		prefix: s.p.KeyPrefix + p.Name + ":" + keyTag[p.Algorithm] + ":{",
	}
	var template limits.Limiter
	var err error
	switch p.Algorithm {
	case TokenBucket:
		var b *limits.TokenBucket
		b, err = limits.NewTokenBucket(limits.TokenBucketParams{Rate: p.Rate, Burst: p.Burst})
		template = b
		l.setShare = func(n int) error {
			return errors.Join(b.SetBurst(max(1, p.Burst/int64(n))), b.SetRate(p.Rate/float64(n)))
		}
	case LeakyBucket:
		var b *limits.LeakyBucket
		b, err = limits.NewLeakyBucket(limits.LeakyBucketParams{Rate: p.Rate, Capacity: p.Burst})
		template = b
		l.setShare = func(n int) error {
			return errors.Join(b.SetCapacity(max(1, p.Burst/int64(n))), b.SetRate(p.Rate/float64(n)))
		}
	case FixedWindow:
		var w *limits.FixedWindow
		w, err = limits.NewFixedWindow(limits.WindowParams{Limit: p.Limit, Window: p.Window})
		template = w
		l.setShare = func(n int) error { return w.SetLimit(max(1, p.Limit/int64(n))) }
	case SlidingWindow:
		var w *limits.SlidingWindow
		w, err = limits.NewSlidingWindow(limits.WindowParams{Limit: p.Limit, Window: p.Window})
		template = w
		l.setShare = func(n int) error { return w.SetLimit(max(1, p.Limit/int64(n))) }
	}
	if err != nil {
		return nil, fmt.Errorf("limits/redis: the local fallback: %w", err)
	}
	// The global policy is the template's before it is shared out.
	l.policy = template.Policy()
	l.limit = l.policy.Quota
	if l.local, err = limits.NewKeyed(template, limits.KeyedParams{MaxKeys: p.MaxKeys}); err != nil {
		return nil, fmt.Errorf("limits/redis: the local fallback: %w", err)
	}
	switch p.Algorithm {
	case TokenBucket, LeakyBucket:
		l.a1, l.a2 = formatRate(p.Rate), p.Burst
	default:
		l.a1, l.a2 = int64(p.Window), p.Limit
	}
	if s.batch {
		l.b = newBatcher(l)
	}
	s.register(l)
	return l, nil
}

// share sets the local fallback to 1/nodes of the quota. A share too small
// for the local algorithm (a rate under one unit in ten years) keeps the
// previous share.
func (l *Limiter) share(nodes int) { _ = l.setShare(nodes) }

// Allow is AllowAt(key, time.Now(), n).
func (l *Limiter) Allow(key string, n int64) limits.Result { return l.AllowAt(key, time.Now(), n) }

// AllowAt decides on a request of cost n for key. Redis decides at its own
// time; now is the instant of the local fallback, and the clock of the
// backoff schedule. A negative n is 0: a probe that consumes nothing.
func (l *Limiter) AllowAt(key string, now time.Time, n int64) limits.Result {
	n = max(n, 0)
	if !l.closed.Load() && !l.s.closed.Load() {
		t := now.UnixNano()
		if toRedis, probe := l.s.link.route(t); toRedis {
			r, err := l.decide(key, now, n)
			if err == nil {
				l.s.link.succeeded(t, probe)
				l.redisN.Add(1)
				return r
			}
			l.errN.Add(1)
			if errors.Is(err, context.DeadlineExceeded) {
				l.timeoutN.Add(1)
			}
			l.s.link.failed(t, probe, err)
		}
	}
	l.fallbackN.Add(1)
	switch l.s.p.Fallback {
	case FallbackOpen:
		return limits.Result{Allowed: true, Limit: l.limit, Remaining: l.limit}
	case FallbackClosed:
		retry := l.s.p.BackoffMin
		if next := l.s.link.retryAt.Load(); l.s.link.down.Load() && next > now.UnixNano() {
			retry = max(retry, time.Duration(next-now.UnixNano()))
		}
		if n > l.limit {
			retry = limits.InfDuration
		}
		return limits.Result{Allowed: n == 0, Limit: l.limit, RetryAfter: retry}
	}
	return l.local.AllowAt(key, now, n)
}

// decide asks Redis, within the store's Timeout: through the batcher, or
// (on a cluster, and with the tests' clock) with a script call of its own.
func (l *Limiter) decide(key string, now time.Time, n int64) (limits.Result, error) {
	budget := startBudget(l.s.p.Timeout)
	defer budget.stop()
	r := &request{key: l.prefix + key + "}", n: n}
	if l.b != nil {
		r.done = make(chan struct{})
		return l.b.ask(r, budget)
	}
	var extra []any
	if l.s.argvTime {
		extra = []any{now.Unix(), int64(now.Nanosecond())}
	}
	reqs := []*request{r}
	cmd := l.command(reqs, "evalsha", l.scr.sha, extra...)
	err := l.s.pipe.Submit(context.Background(), cmd).WaitContext(budget)
	if isNoScript(err) {
		// Redis lost its script cache (a restart, a failover, SCRIPT
		// FLUSH): EVAL runs the script and caches it again.
		cmd = l.command(reqs, "eval", l.scr.src, extra...)
		err = l.s.pipe.Submit(context.Background(), cmd).WaitContext(budget)
	}
	if err != nil {
		return limits.Result{}, err
	}
	s, err := cmd.Text()
	if err != nil {
		return limits.Result{}, err
	}
	return parseReply(s, l.limit)
}

// Policy is the global quota: Burst per the time Rate takes to produce it
// for the buckets, Limit per Window for the windows (as the local
// algorithms report it).
func (l *Limiter) Policy() limits.Policy { return l.policy }

// Status reports where decisions are made and the decision counts of this
// limiter.
func (l *Limiter) Status() Status {
	st := l.s.Status()
	st.RedisDecisions = l.redisN.Load()
	st.FallbackDecisions = l.fallbackN.Load()
	st.Errors = l.errN.Load()
	st.Timeouts = l.timeoutN.Load()
	return st
}

// Close stops the limiter (later decisions are made by the fallback) and,
// for a limiter built by New, closes its store. Idempotent.
func (l *Limiter) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	l.s.unregister(l)
	if l.b != nil {
		l.b.close()
	}
	if l.own {
		return l.s.Close()
	}
	return nil
}

// String describes the limiter for logs.
func (l *Limiter) String() string {
	return fmt.Sprintf("redis %s %s (%d per %v)", l.p.Algorithm, l.p.Name, l.policy.Quota, l.policy.Window)
}

// formatRate formats a rate so that Lua's tonumber reads back the same
// float64 (the shortest representation that round-trips).
func formatRate(r float64) string { return strconv.FormatFloat(r, 'g', -1, 64) }
