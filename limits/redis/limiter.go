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

	conf *quota                // the configured quota
	q    atomic.Pointer[quota] // the quota in force: conf, or Redis's definition
	// defErr is why the definition in Redis is not applied ("" if it is,
	// or there is none).
	defErr atomic.Pointer[string]

	local    *limits.Keyed
	template limits.Limiter // local's template: its amounts are this node's share
	// over bounds what the decisions that Redis did not answer in time
	// admit (see overshoot); nil: nothing.
	over  atomic.Pointer[overshoot]
	b     *batcher // nil: a script call per decision
	lease *leaser  // nil: exact

	redisN, fallbackN, errN, timeoutN atomic.Uint64
	overN                             atomic.Uint64 // units admitted by over
	closed                            atomic.Bool
}

// Overshoot is the part of a quota that the decisions Redis did not answer
// in time (a timeout, or too many waiting, while Redis is still taken for
// up) may admit by the local fallback, on all nodes together: each node
// keeps a local limiter of its share of it (the quota's rate or limit, and
// burst, times Overshoot over the node count; at least one unit), and such
// a decision is admitted only if both the node's share of the quota and
// that limiter admit it. So exact mode admits at most (1 + Overshoot) times
// the quota however many decisions time out (a quota split per key: its
// keys share the one bound). With limits.FallbackOpen they are admitted,
// counted, and unbounded; with limits.FallbackClosed refused. While Redis
// is down the fallback decides as it does: the node's share of the quota.
const Overshoot = 0.01

// overshoot is a Limiter's bound on what its timed-out decisions admit.
type overshoot struct {
	lim limits.Limiter // Overshoot of the quota's amounts over the nodes
	per float64        // its rate, units per second
}

// quota is a Limiter's amounts: the configured ones or a definition set in
// Redis (Store.SetQuota). Immutable once published.
type quota struct {
	p       LimiterParams // the algorithm and amounts
	a1, a2  any           // the scripts' amount arguments, boxed once
	limit   int64
	policy  limits.Policy
	version int64 // of the definition in Redis; 0: the configured quota
	// nsPerUnit is a bucket's pace (1e9/Rate); 0 for the windows.
	nsPerUnit float64
}

// newQuota validates p's amounts and computes what the decisions need.
func newQuota(p LimiterParams, version int64) (*quota, error) {
	t, err := newTemplate(p)
	if err != nil {
		return nil, err
	}
	q := &quota{p: p, policy: t.Policy(), version: version}
	q.limit = q.policy.Quota
	if alg, _ := algorithm(p.Algorithm); alg.Shape == limits.ShapeRate {
		q.a1, q.a2 = formatRate(p.Rate), p.Burst
		q.nsPerUnit = 1e9 / p.Rate
	} else {
		q.a1, q.a2 = int64(p.Window), p.Limit
	}
	return q, nil
}

// perSecond is the quota's sustained rate in units per second.
func (q *quota) perSecond() float64 {
	if q.p.Window > 0 {
		return float64(q.p.Limit) / q.p.Window.Seconds()
	}
	return q.p.Rate
}

// newTemplate returns the local algorithm of p's amounts.
func newTemplate(p LimiterParams) (limits.Limiter, error) {
	alg, ok := algorithm(p.Algorithm)
	if !ok {
		return nil, fmt.Errorf("limits/redis: unknown algorithm %q", p.Algorithm)
	}
	return alg.New(limits.Spec{Rate: p.Rate, Burst: p.Burst, Limit: p.Limit, Window: p.Window})
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
// names stay distinct). In leased mode each leased key also has a hash of
// its leases, KeyPrefix + Name + ":lease:{" + key + "}".
//
// NewLimiter reads the quota's definition in Redis (Store.SetQuota), waiting
// at most the store's Timeout; without an answer it starts with p's amounts
// and applies the definition at the store's next refresh.
func (s *Store) NewLimiter(p LimiterParams) (*Limiter, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, errors.New("limits/redis: the store is closed")
	}
	conf, err := newQuota(p, 0)
	if err != nil {
		return nil, err
	}
	l := &Limiter{
		s: s, p: p, scr: s.clock[p.Algorithm], conf: conf,
		prefix: s.p.KeyPrefix + p.Name + ":" + keyTag[p.Algorithm] + ":{",
	}
	l.q.Store(conf)
	if l.template, err = newTemplate(p); err != nil {
		return nil, fmt.Errorf("limits/redis: the local fallback: %w", err)
	}
	if l.local, err = limits.NewKeyed(l.template, limits.KeyedParams{MaxKeys: p.MaxKeys}); err != nil {
		return nil, fmt.Errorf("limits/redis: the local fallback: %w", err)
	}
	if s.batch {
		l.b = newBatcher(l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.p.Timeout)
	s.refresh(ctx, []*Limiter{l})
	cancel()
	if p.Sync == limits.SyncLeased {
		l.lease = newLeaser(l)
	}
	s.register(l)
	return l, nil
}

// share sets the local fallback to 1/nodes of the quota in force. A share
// too small for the local algorithm (a rate under one unit in ten years)
// keeps the previous share. The store calls it with its mutex held.
func (l *Limiter) share(nodes int) {
	q, n := l.q.Load().p, int64(nodes)
	l.over.Store(newOvershoot(l.q.Load(), nodes))
	if t, ok := l.template.(limits.BurstSetter); ok {
		_ = t.SetBurst(max(1, q.Burst/n))
	}
	if t, ok := l.template.(limits.RateSetter); ok {
		_ = t.SetRate(q.Rate / float64(n))
	}
	if t, ok := l.template.(limits.WindowSetter); ok {
		// A window's policy is its limit per its window.
		if l.template.Policy().Window != q.Window {
			_ = t.SetWindow(q.Window)
		}
		_ = t.SetLimit(max(1, q.Limit/n))
	}
}

// newOvershoot is one node's overshoot limiter of q among nodes, or nil if
// the algorithm cannot be made that small.
func newOvershoot(q *quota, nodes int) *overshoot {
	p, f := q.p, Overshoot/float64(max(1, nodes))
	if p.Window > 0 {
		p.Limit = max(1, int64(float64(p.Limit)*f))
	} else {
		p.Rate, p.Burst = p.Rate*f, max(1, int64(float64(p.Burst)*f))
	}
	lim, err := newTemplate(p)
	if err != nil {
		return nil
	}
	per := p.Rate
	if p.Window > 0 {
		per = float64(p.Limit) / p.Window.Seconds()
	}
	return &overshoot{lim: lim, per: per}
}

// Allow is AllowAt(key, time.Now(), n).
func (l *Limiter) Allow(key string, n int64) limits.Result { return l.AllowAt(key, time.Now(), n) }

// AllowAt decides on a request of cost n for key. Redis decides at its own
// time; now is the instant of the local fallback, and the clock of the
// backoff schedule. In leased mode, a key this node holds a lease for is
// decided locally against it (now, on the wall clock, tells whether the
// lease is still valid); the others as in exact mode. A negative n is 0: a
// probe that consumes nothing.
func (l *Limiter) AllowAt(key string, now time.Time, n int64) (r limits.Result) {
	n = max(n, 0)
	if l.lease != nil && l.lease.allow(&r, key, now, n) {
		return r
	}
	q := l.q.Load()
	if !l.closed.Load() && !l.s.closed.Load() {
		t := now.UnixNano()
		if toRedis, probe := l.s.link.route(t); toRedis {
			var err error
			if probe {
				err = l.s.reach(l.s.dl.budget())
			}
			if err == nil {
				r, err = l.decide(q, key, now, n)
			}
			if err == nil {
				l.s.link.succeeded(t, probe)
				l.redisN.Add(1)
				if l.lease != nil {
					l.lease.noteExact(key)
				}
				return r
			}
			l.errN.Add(1)
			if errors.Is(err, context.DeadlineExceeded) {
				l.timeoutN.Add(1)
			}
			l.s.link.failed(t, probe, err)
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errQueueFull) {
				l.fallbackN.Add(1)
				return l.late(q, key, now, n)
			}
		}
	}
	l.fallbackN.Add(1)
	switch l.s.p.Fallback {
	case limits.FallbackOpen:
		return limits.Result{Allowed: true, Limit: q.limit, Remaining: q.limit}
	case limits.FallbackClosed:
		retry := l.s.p.BackoffMin
		if next := l.s.link.retryAt.Load(); l.s.link.down.Load() && next > now.UnixNano() {
			retry = max(retry, time.Duration(next-now.UnixNano()))
		}
		if n > q.limit {
			retry = limits.InfDuration
		}
		return limits.Result{Allowed: n == 0, Limit: q.limit, RetryAfter: retry}
	}
	return l.local.AllowAt(key, now, n)
}

// late decides on a decision that Redis did not answer in time (while it
// is still taken for up; an error, a refused connection, says Redis is
// gone and goes to the fallback as while it is down): by the fallback,
// within the overshoot bound.
func (l *Limiter) late(q *quota, key string, now time.Time, n int64) limits.Result {
	switch l.s.p.Fallback {
	case limits.FallbackOpen:
		l.overN.Add(uint64(n))
		return limits.Result{Allowed: true, Limit: q.limit, Remaining: q.limit}
	case limits.FallbackClosed:
		return limits.Result{Allowed: n == 0, Limit: q.limit, RetryAfter: l.s.dl.budget()}
	}
	r := l.local.AllowAt(key, now, n)
	if !r.Allowed || n == 0 {
		return r
	}
	if o := l.over.Load(); o != nil && o.lim.AllowAt(now, n).Allowed {
		l.overN.Add(uint64(n))
		return r
	}
	r.Allowed, r.RetryAfter = false, l.s.dl.budget()
	return r
}

// decide asks Redis, within the store's budget (see deadline), and
// records how long the answer took, or that it did not come in time.
func (l *Limiter) decide(q *quota, key string, now time.Time, n int64) (limits.Result, error) {
	start := time.Now()
	r, err := l.ask(q, key, now, n)
	if timedOut := errors.Is(err, context.DeadlineExceeded); err == nil || timedOut {
		end := time.Now()
		l.s.dl.observe(end.UnixNano(), end.Sub(start), timedOut)
	}
	return r, err
}

// ask asks Redis within the budget: through the batcher, or (on a cluster,
// and with the tests' clock) with a script call of its own.
func (l *Limiter) ask(q *quota, key string, now time.Time, n int64) (limits.Result, error) {
	budget := startBudget(l.s.dl.budget())
	defer budget.stop()
	if l.b != nil {
		return l.b.ask(newRequest(l.prefix+key+"}", n), budget)
	}
	r := &request{key: l.prefix + key + "}", n: n}
	var extra []any
	if l.s.argvTime {
		extra = []any{now.Unix(), int64(now.Nanosecond())}
	}
	reqs := []*request{r}
	cmd := q.command(reqs, "evalsha", l.scr.sha, extra...)
	err := l.s.pipe.Submit(context.Background(), cmd).WaitContext(budget)
	if isNoScript(err) {
		// Redis lost its script cache (a restart, a failover, SCRIPT
		// FLUSH): EVAL runs the script and caches it again.
		cmd = q.command(reqs, "eval", l.scr.src, extra...)
		err = l.s.pipe.Submit(context.Background(), cmd).WaitContext(budget)
	}
	if err != nil {
		return limits.Result{}, err
	}
	s, err := cmd.Text()
	if err != nil {
		return limits.Result{}, err
	}
	return parseReply(s, q.limit)
}

// Policy is the global quota in force: Burst per the time Rate takes to
// produce it for the buckets, Limit per Window for the windows (as the local
// algorithms report it).
func (l *Limiter) Policy() limits.Policy { return l.q.Load().policy }

// Status reports where decisions are made, the decision counts of this
// limiter, the quota in force and, in leased mode, its leases.
func (l *Limiter) Status() Status {
	st := l.s.Status()
	st.Sync = limits.SyncExact
	st.StoreDecisions = l.redisN.Load()
	st.FallbackDecisions = l.fallbackN.Load()
	st.Errors = l.errN.Load()
	st.Timeouts = l.timeoutN.Load()
	st.Timeout, st.LateAdmitted = l.s.dl.budget(), l.overN.Load()
	switch {
	case l.s.p.Fallback == limits.FallbackOpen:
		st.LateBound = -1
	case l.s.p.Fallback == limits.FallbackLocal:
		if o := l.over.Load(); o != nil {
			st.LateBound = o.per * float64(st.Nodes)
		}
	}
	st.QuotaVersion = l.q.Load().version
	if e := l.defErr.Load(); e != nil {
		st.QuotaError = *e
	}
	if l.lease != nil {
		st.Sync = limits.SyncLeased
		l.lease.status(&st)
	}
	return st
}

// Close stops the limiter (later decisions are made by the fallback) and,
// for a limiter built by New, closes its store. In leased mode it first gives
// back the units this node holds, waiting at most the store's Timeout
// (units not given back are counted until their leases expire). Idempotent.
func (l *Limiter) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	if l.lease != nil {
		l.lease.close(true)
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
	q := l.q.Load()
	return fmt.Sprintf("redis %s %s %s (%d per %v)", l.p.Algorithm, l.syncName(), l.p.Name, q.policy.Quota, q.policy.Window)
}

func (l *Limiter) syncName() limits.Sync {
	if l.lease != nil {
		return limits.SyncLeased
	}
	return limits.SyncExact
}

// formatRate formats a rate so that Lua's tonumber reads back the same
// float64 (the shortest representation that round-trips).
func formatRate(r float64) string { return strconv.FormatFloat(r, 'g', -1, 64) }
