package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Quota is a global quota's definition kept in Redis beside its state
// (Store.SetQuota), so that a change made once applies to every node: the
// algorithm and its amounts, Rate and Burst for the buckets, Limit and
// Window for the windows.
type Quota struct {
	Algorithm Algorithm
	Rate      float64
	Burst     int64
	Limit     int64
	Window    time.Duration
	// Version numbers the definitions of a quota: SetQuota returns one
	// more than the previous one's (0 is the configured quota, never a
	// definition's).
	Version int64
}

// params returns q's amounts as the limiter params of quota name.
func (q Quota) params(name string) LimiterParams {
	return LimiterParams{Name: name, Algorithm: q.Algorithm, Rate: q.Rate, Burst: q.Burst, Limit: q.Limit, Window: q.Window}
}

// defKey is where the definition of quota name lives.
func (s *Store) defKey(name string) string { return s.p.KeyPrefix + name + ":def" }

// SetQuota writes the definition of the quota name (a group's name) in
// Redis, with the next version, and returns that version. Every node's
// limiter of that name applies it at its store's next refresh (each
// heartbeat, and Store.Refresh), in place of its configured amounts, as long
// as the algorithms keep the same state (the two buckets share theirs); a
// limiter of another algorithm keeps its own and reports why in
// Status.QuotaError. q.Version is ignored.
//
// Who wins: a definition in Redis wins over every node's configuration, at
// a reload and at a restart, until ClearQuota removes it (or Redis loses its
// data); while Redis holds none, each node applies its own configuration.
func (s *Store) SetQuota(ctx context.Context, name string, q Quota) (int64, error) {
	p := q.params(name)
	if err := p.Validate(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalidQuota, err)
	}
	key := s.defKey(name)
	var version *goredis.IntCmd
	_, err := s.client.TxPipelined(ctx, func(tx goredis.Pipeliner) error {
		tx.HSet(ctx, key, "algorithm", string(q.Algorithm), "rate", formatRate(q.Rate),
			"burst", q.Burst, "limit", q.Limit, "window", int64(q.Window))
		version = tx.HIncrBy(ctx, key, "version", 1)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("limits/redis: setting quota %s: %w", name, err)
	}
	return version.Val(), nil
}

// ClearQuota removes the definition of the quota name from Redis: the nodes
// go back to their configured amounts at their next refresh.
func (s *Store) ClearQuota(ctx context.Context, name string) error {
	if err := s.client.Del(ctx, s.defKey(name)).Err(); err != nil {
		return fmt.Errorf("limits/redis: clearing quota %s: %w", name, err)
	}
	return nil
}

// GetQuota reads the definition of the quota name; ok is false when Redis
// holds none.
func (s *Store) GetQuota(ctx context.Context, name string) (q Quota, ok bool, err error) {
	m, err := s.client.HGetAll(ctx, s.defKey(name)).Result()
	if err != nil {
		return Quota{}, false, fmt.Errorf("limits/redis: reading quota %s: %w", name, err)
	}
	return parseQuota(m)
}

// ErrInvalidQuota is wrapped by the errors of SetQuota and Limiter.Define
// for amounts that are refused (nothing was written): the caller's mistake,
// where the other errors are Redis's.
var ErrInvalidQuota = errors.New("limits/redis: invalid quota")

var errDef = errors.New("limits/redis: malformed quota definition")

// parseQuota reads a definition's hash (empty: none).
func parseQuota(m map[string]string) (Quota, bool, error) {
	if len(m) == 0 {
		return Quota{}, false, nil
	}
	var q Quota
	var errs [5]error
	q.Algorithm = Algorithm(m["algorithm"])
	q.Rate, errs[0] = strconv.ParseFloat(m["rate"], 64)
	q.Burst, errs[1] = strconv.ParseInt(m["burst"], 10, 64)
	q.Limit, errs[2] = strconv.ParseInt(m["limit"], 10, 64)
	var w int64
	w, errs[3] = strconv.ParseInt(m["window"], 10, 64)
	q.Window = time.Duration(w)
	q.Version, errs[4] = strconv.ParseInt(m["version"], 10, 64)
	if err := errors.Join(errs[:]...); err != nil || q.Version < 1 {
		return Quota{}, false, errDef
	}
	return q, true, nil
}

// Refresh reads the definitions of every limiter's quota from Redis and
// applies them (the heartbeat does it every Heartbeat; an admin API that
// has just set a quota calls it to apply the change on this node at once).
func (s *Store) Refresh(ctx context.Context) error {
	s.mu.Lock()
	ls := make([]*Limiter, 0, len(s.limiters))
	for l := range s.limiters {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	return s.refresh(ctx, ls)
}

// refresh reads the definitions of ls's quotas in one round trip and
// applies them.
func (s *Store) refresh(ctx context.Context, ls []*Limiter) error {
	if len(ls) == 0 {
		return nil
	}
	cmds := make([]*goredis.MapStringStringCmd, len(ls))
	_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, l := range ls {
			cmds[i] = p.HGetAll(ctx, s.defKey(l.p.Name))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("limits/redis: reading quota definitions: %w", err)
	}
	for i, l := range ls {
		q, ok, err := parseQuota(cmds[i].Val())
		s.apply(l, q, ok, err)
	}
	return nil
}

// apply puts the definition q (none: !ok) in force on l.
func (s *Store) apply(l *Limiter, q Quota, ok bool, err error) {
	next := l.conf
	var why string
	switch cur := l.q.Load(); {
	case err != nil:
		why = err.Error()
		next = cur // a damaged definition changes nothing
	case !ok:
	case keyTag[q.Algorithm] != keyTag[l.p.Algorithm]:
		why = fmt.Sprintf("the definition in Redis (version %d) is for %s, which keeps another state than this %s quota: the configured quota applies", q.Version, q.Algorithm, l.p.Algorithm)
	case q.Version == cur.version:
		next = cur
	default:
		p := l.withAmounts(q)
		var nq *quota
		verr := p.Validate()
		if verr == nil {
			nq, verr = newQuota(p, q.Version)
		}
		if verr != nil {
			why = fmt.Sprintf("the definition in Redis (version %d) is refused: %v", q.Version, verr)
			next = cur
		} else {
			next = nq
		}
	}
	if why == "" {
		l.defErr.Store(nil)
	} else {
		l.defErr.Store(&why)
	}
	if next == l.q.Load() {
		return
	}
	s.mu.Lock()
	l.q.Store(next)
	l.share(int(s.divisor.Load()))
	s.mu.Unlock()
}

// withAmounts is l's params with q's amounts: its sync and lease kept, which
// bound the amounts a leased quota can take.
func (l *Limiter) withAmounts(q Quota) LimiterParams {
	p := l.p
	p.Rate, p.Burst, p.Limit, p.Window = q.Rate, q.Burst, q.Limit, q.Window
	return p
}

// Quota returns the quota in force on l: its configured amounts (Version
// 0) or those of the definition in Redis it applies.
func (l *Limiter) Quota() Quota {
	q := l.q.Load()
	return Quota{Algorithm: l.p.Algorithm, Rate: q.p.Rate, Burst: q.p.Burst, Limit: q.p.Limit, Window: q.p.Window, Version: q.version}
}

// Define writes q's amounts as the definition of l's quota in Redis
// (Store.SetQuota; the algorithm stays l's) and applies it on l at once;
// every other node applies it at its next refresh (a heartbeat). It returns
// the quota then in force on l. Amounts that l's algorithm does not take, or
// out of range, or that l's sync cannot take (a leased bucket's burst below
// rate × lease period, which every leased node would refuse to apply), are
// refused before anything is written.
func (l *Limiter) Define(ctx context.Context, q Quota) (Quota, error) {
	q.Algorithm = l.p.Algorithm
	if err := l.withAmounts(q).Validate(); err != nil {
		return l.Quota(), fmt.Errorf("%w: %w", ErrInvalidQuota, err)
	}
	if _, err := l.s.SetQuota(ctx, l.p.Name, q); err != nil {
		return l.Quota(), err
	}
	err := l.s.refresh(ctx, []*Limiter{l})
	return l.Quota(), err
}

// Undefine removes the definition of l's quota from Redis (ClearQuota) and
// puts l's configured quota back in force at once; the other nodes go back
// to their own configured quotas at their next refresh. It returns the
// quota then in force on l.
func (l *Limiter) Undefine(ctx context.Context) (Quota, error) {
	if err := l.s.ClearQuota(ctx, l.p.Name); err != nil {
		return l.Quota(), err
	}
	err := l.s.refresh(ctx, []*Limiter{l})
	return l.Quota(), err
}
