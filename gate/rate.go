package gate

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/limits"
)

// RateLimiter is a group's static rate limit as the gate uses it: one decision
// per request, for the request's key ("" when the group has none).
// *limits.Keyed satisfies it, and so do the global limiters plugged in
// through Params.GlobalRate (package gate/redisrate's, on Redis).
// Implementations must be safe for concurrent use and should not allocate
// for a key they already hold.
//
// A limiter built by Params.GlobalRate that is an io.Closer is closed by the
// gate when its group is replaced or removed by a Reload, or when the config
// it was built for is refused; those of the running groups are the caller's
// to close once the gate is no longer used. One that is a GlobalReporter
// shows its status in its group's read-out (GroupStatus.Global), and one that
// is a GlobalQuota can be changed through Gate.GlobalQuota.
type RateLimiter interface {
	AllowAt(key string, now time.Time, n int64) limits.Result
	Policy() limits.Policy
}

// single is one limiter shared by every request of a group without a key.
type single struct{ l limits.Limiter }

func (s single) AllowAt(_ string, now time.Time, n int64) limits.Result { return s.l.AllowAt(now, n) }
func (s single) Policy() limits.Policy                                  { return s.l.Policy() }

// rateLimit is a group's built rate limit.
type rateLimit struct {
	lim   RateLimiter
	algo  limits.Limiter // the algorithm (Keyed's template): its setters change every key
	keyed *limits.Keyed  // nil without a key or for a global limiter
	cost  int64
	// costHeader is the canonical name of the upstream response header
	// that carries a request's real cost (rate.cost_header; see
	// Gate.CorrectCost), "" for none.
	costHeader string
	paced      bool // leaky_queue: an admitted request waits out Result.Delay
	// burstSecs is burst / rate of a bucket whose rate the law manages, so the
	// burst follows the rate (as adaptive/sim's managed bucket does); 0 when
	// the rate is not managed.
	burstSecs float64
	// managed is the managed rate in force, units per second as float64 bits;
	// 0 until the law first sets one.
	managed atomic.Uint64
	// before holds the decision counts of the global limiters of the groups
	// this one replaced on reloads, so the read-outs do not restart from 0.
	before GlobalStatus
}

// newRate builds the rate limit of c (nil when it has none). global builds a
// limiter for scope "global".
func newRate(c *Group, global func(*Group) (RateLimiter, error)) (*rateLimit, error) {
	r := c.Rate
	if r == nil {
		return nil, nil
	}
	alg, ok := limits.LookupAlgorithm(string(r.Algorithm))
	if !ok {
		return nil, fmt.Errorf("gate: group %q: rate: unknown algorithm %q", c.Name, r.Algorithm)
	}
	rl := &rateLimit{cost: int64(r.Cost), costHeader: r.CostHeader, paced: alg.Paced}
	if r.Scope == spec.ScopeGlobal {
		if global == nil {
			return nil, fmt.Errorf("gate: group %q: rate scope \"global\" needs a global rate limiter (Params.GlobalRate, such as gate/redisrate's)", c.Name)
		}
		lim, err := global(c)
		if err != nil {
			return nil, fmt.Errorf("gate: group %q: global rate limit: %w", c.Name, err)
		}
		rl.lim = lim
		return rl, nil
	}
	algo, err := alg.New(r.Limits())
	if err != nil {
		return nil, fmt.Errorf("gate: group %q: rate: %w", c.Name, err)
	}
	rl.algo = algo
	if c.Key == spec.KeyNone {
		rl.lim = single{algo}
		return rl, nil
	}
	rl.keyed, err = limits.NewKeyed(algo, limits.KeyedParams{MaxKeys: r.MaxKeys})
	if err != nil {
		return nil, fmt.Errorf("gate: group %q: rate: %w", c.Name, err)
	}
	rl.lim = rl.keyed
	return rl, nil
}

// manageable reports the configured rate, in requests per second, of a group
// whose token rate the law may manage, else 0. The law manages it when its
// kind can (adaptive.LawKind.ManagesRate), and the rate is one local limiter
// for the whole group (no key: a per-key quota is the client's contract, not
// the service's capacity) whose rate can change at runtime
// (limits.ShapeRate). The configured rate is the ceiling: the law
// lowers it under overload and gives it back, never more.
func manageable(c *spec.Group) float64 {
	r := c.Rate
	if r == nil || c.Key != spec.KeyNone || r.Scope != spec.ScopeLocal {
		return 0
	}
	law, ok := adaptive.LookupLaw(string(c.Concurrency.Law))
	if !ok || !law.ManagesRate {
		return 0
	}
	if alg, ok := limits.LookupAlgorithm(string(r.Algorithm)); !ok || alg.Shape != limits.ShapeRate {
		return 0
	}
	return r.PerSecond() / float64(max(r.Cost, 1))
}

// setRate applies a managed rate in requests per second, with the burst
// scaled to keep burst / rate as configured.
func (rl *rateLimit) setRate(reqPerSec float64) error {
	units := reqPerSec * float64(rl.cost)
	rl.managed.Store(math.Float64bits(units))
	burst := int64(max(float64(rl.cost), math.Round(units*rl.burstSecs)))
	a, ok := rl.algo.(limits.RateSetter)
	if !ok {
		return fmt.Errorf("gate: rate of %T cannot change at runtime", rl.algo)
	}
	if err := a.SetRate(units); err != nil {
		return err
	}
	if b, ok := rl.algo.(limits.BurstSetter); ok {
		return b.SetBurst(burst)
	}
	return nil
}

// apply changes the figures of the running algorithm to r's (an override of
// the rate, the burst or the window; the algorithm itself cannot change
// without a reload). Every key keeps its state.
func (rl *rateLimit) apply(r *spec.Rate) error {
	if rl.algo == nil {
		return fmt.Errorf("gate: a global rate limit cannot change at runtime; reload")
	}
	errs := limits.Retune(rl.algo, r.Limits())
	if ps := r.PerSecond(); rl.burstSecs > 0 && ps > 0 {
		rl.burstSecs = float64(r.Burst) / ps
	}
	if len(errs) > 0 {
		return fmt.Errorf("gate: rate: %v", errs)
	}
	return nil
}
