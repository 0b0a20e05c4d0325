package limits

import (
	"errors"
	"time"
)

// TokenBucketParams configures a TokenBucket. Zero optional fields mean their
// default; Rate and Burst are required.
type TokenBucketParams struct {
	// Rate is the refill rate v in tokens per second, in (0, 1e9].
	Rate float64
	// Burst is the capacity N in tokens, at least 1: the largest request and
	// the largest burst from a full bucket.
	Burst int64
	// Warmup, if positive, makes the bucket start cold and warm up like
	// Guava's SmoothWarmingUp: while cold each token costs up to ColdFactor
	// times the stable interval, and sustained use over Warmup brings the
	// cost down to the stable 1/Rate. Idle time cools it again. Zero: none.
	Warmup time.Duration
	// ColdFactor is the cold interval as a multiple of the stable interval
	// (Guava: 3). Zero means 3; otherwise at least 1. Ignored without Warmup.
	ColdFactor float64
}

// DefaultColdFactor is Guava's hard-coded cold factor for SmoothWarmingUp.
const DefaultColdFactor = 3

// Validate reports every problem with p.
func (p TokenBucketParams) Validate() error {
	var ps problems
	ps.rate("token bucket rate", p.Rate)
	ps.positive("token bucket burst", p.Burst)
	if p.Warmup < 0 || int64(p.Warmup) > maxSpan {
		ps.add("token bucket warmup must be between 0 and %v, got %v", time.Duration(maxSpan), p.Warmup)
	}
	if p.ColdFactor != 0 && !(p.ColdFactor >= 1 && p.ColdFactor <= 1e6) {
		ps.add("token bucket cold factor must be between 1 and 1e6 (or 0 for %d), got %v", DefaultColdFactor, p.ColdFactor)
	}
	if len(ps) == 0 && float64(p.Burst)*1e9/p.Rate > float64(maxSpan) {
		ps.add("token bucket burst/rate must be at most %v, got burst %d at rate %v", time.Duration(maxSpan), p.Burst, p.Rate)
	}
	return ps.err()
}

// ErrWarmupSwitch is returned by TokenBucket.SetWarmup when it would switch
// warm-up on or off: the two are different state machines.
var ErrWarmupSwitch = errors.New("limits: token bucket warm-up can be changed at runtime but not switched on or off; build a new bucket")

// TokenBucket is a token bucket: capacity Burst, refilled continuously at Rate
// tokens per second, starting full; a request of n tokens is admitted when n
// tokens are in the bucket, and takes them. Internally it is GCRA (see gcra):
// its state is one instant, decisions are exact integer nanoseconds, and
// without warm-up a decision is one compare-and-swap of that instant.
//
// Result fields: Limit is Burst; Remaining the whole tokens left; RetryAfter
// the time until n tokens will be there; ResetAfter the time until the bucket
// is full. n > Burst is never allowed (RetryAfter = InfDuration).
//
// With Warmup, the bucket also tracks how cold it is, as Guava's
// SmoothWarmingUp does with its "stored permits": thresholdPermits =
// 0.5·warmup/stable, maxPermits = threshold + 2·warmup/(stable+cold),
// cold = ColdFactor·stable; a token taken while above the threshold costs
// the area under the line from stable to cold (Guava's
// storedPermitsToWaitTime), below it the stable interval; while the bucket is
// full it cools by one stored permit per warmup/maxPermits. It starts fully
// cold: the first tokens cost ColdFactor times the stable interval (rate
// v/3, bursts of N/3), and sustained demand reaches the full rate after
// Warmup. A full bucket always admits one request of up to Burst tokens even
// while its cost exceeds the capacity (Guava's "pay later"), so cold
// requests never starve. With Warmup, Remaining is an estimate at the
// current (marginal) token cost.
//
// Runtime changes (SetRate, SetBurst, SetWarmup) keep the tokens available,
// clamped to the new Burst, and scale the coldness by the ratio of the new
// and old maxPermits (as Guava's setRate does). They take effect at the next
// decision, at that decision's instant. The zero value is not usable;
// use NewTokenBucket. Safe for concurrent use.
type TokenBucket struct {
	plain *cell                                       // without warm-up
	warm  *single[warmState, warmParams, *warmParams] // with warm-up
}

// NewTokenBucket returns a full (or, with Warmup, cold) token bucket.
func NewTokenBucket(p TokenBucketParams) (*TokenBucket, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	b := &TokenBucket{}
	if p.Warmup > 0 {
		b.warm = &single[warmState, warmParams, *warmParams]{}
		b.warm.init(newWarmParams(p))
	} else {
		b.plain = &cell{}
		b.plain.init(newBucket(p.Rate, p.Burst))
	}
	return b, nil
}

// AllowAt decides on a request of n tokens at now.
func (b *TokenBucket) AllowAt(now time.Time, n int64) (r Result) {
	if b.plain != nil {
		b.plain.allowAt(&r, now, n)
		return
	}
	return b.warm.allowAt(now, n)
}

// AdjustAt charges n more tokens at now (n < 0 gives them back; see
// Adjuster): a bucket without warm-up only, the one whose state a charge
// after the fact can correct exactly; with warm-up it reports false and
// changes nothing.
func (b *TokenBucket) AdjustAt(now time.Time, n int64) bool {
	if b.plain == nil {
		return false
	}
	b.plain.adjustAt(now, n)
	return true
}

// Allow is AllowAt(time.Now(), n).
func (b *TokenBucket) Allow(n int64) Result { return b.AllowAt(time.Now(), n) }

// Policy is Burst tokens per the time Rate takes to produce them.
func (b *TokenBucket) Policy() Policy {
	if b.plain != nil {
		return b.plain.policy()
	}
	return b.warm.policy()
}

// Params returns the current parameters.
func (b *TokenBucket) Params() TokenBucketParams {
	if b.plain != nil {
		p := b.plain.cur.Load()
		return TokenBucketParams{Rate: p.rate, Burst: p.burst}
	}
	return b.warm.cur.Load().TokenBucketParams
}

// SetRate changes the refill rate; the tokens available are kept.
func (b *TokenBucket) SetRate(r float64) error {
	return b.set(func(p *TokenBucketParams) { p.Rate = r })
}

// SetBurst changes the capacity; the tokens available are kept, at most the
// new burst.
func (b *TokenBucket) SetBurst(n int64) error {
	return b.set(func(p *TokenBucketParams) { p.Burst = n })
}

// SetWarmup changes the warm-up period of a bucket built with one. It
// cannot switch warm-up on or off (ErrWarmupSwitch): build a new bucket.
func (b *TokenBucket) SetWarmup(d time.Duration) error {
	if b.warm == nil || d == 0 {
		return ErrWarmupSwitch
	}
	return b.set(func(p *TokenBucketParams) { p.Warmup = d })
}

func (b *TokenBucket) set(change func(p *TokenBucketParams)) error {
	if b.plain != nil {
		return b.plain.update(func(cur *gcra) (*gcra, error) {
			p := TokenBucketParams{Rate: cur.rate, Burst: cur.burst}
			change(&p)
			if err := p.Validate(); err != nil {
				return nil, err
			}
			return newBucket(p.Rate, p.Burst), nil
		})
	}
	return b.warm.update(func(cur *warmParams) (*warmParams, error) {
		p := cur.TokenBucketParams
		change(&p)
		if err := p.Validate(); err != nil {
			return nil, err
		}
		return newWarmParams(p), nil
	})
}

func (b *TokenBucket) newStore(shards, maxKeys int) keyedStore {
	if b.plain != nil {
		return b.plain.newStore(shards, maxKeys)
	}
	return b.warm.newStore(shards, maxKeys)
}

var tokenBucketAlgorithm = Algorithm{
	Name: "token_bucket", Doc: "refills rate tokens per second up to burst, with an optional warm-up",
	Shape: ShapeRate, Knobs: KnobBurst | KnobWarmup, Global: GlobalLeased, Adjusts: true,
	FreshAfter: bucketFresh,
	New: func(s Spec) (Limiter, error) {
		return NewTokenBucket(TokenBucketParams{Rate: s.Rate, Burst: s.Burst, Warmup: s.Warmup})
	},
}
