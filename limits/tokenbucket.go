package limits

import (
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

// TokenBucket is a token bucket: capacity Burst, refilled continuously at Rate
// tokens per second, starting full; a request of n tokens is admitted when n
// tokens are in the bucket, and takes them. Internally it is GCRA (see gcra),
// so its state is one instant and decisions are exact integer nanoseconds.
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
// and old maxPermits (as Guava's setRate does); turning warm-up on for a
// running bucket starts it warm. The zero value is not usable; use
// NewTokenBucket. Safe for concurrent use.
type TokenBucket struct {
	l single[tbState, tbParams, *tbParams]
}

// NewTokenBucket returns a full (or, with Warmup, cold) token bucket.
func NewTokenBucket(p TokenBucketParams) (*TokenBucket, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	b := &TokenBucket{}
	b.l.init(newTBParams(p))
	return b, nil
}

// AllowAt decides on a request of n tokens at now.
func (b *TokenBucket) AllowAt(now time.Time, n int64) Result { return b.l.allowAt(now, n) }

// Allow is AllowAt(time.Now(), n).
func (b *TokenBucket) Allow(n int64) Result { return b.l.allowAt(time.Now(), n) }

// Policy is Burst tokens per the time Rate takes to produce them.
func (b *TokenBucket) Policy() Policy { return b.l.policy() }

// Params returns the current parameters.
func (b *TokenBucket) Params() TokenBucketParams { return b.l.cur.Load().TokenBucketParams }

// SetRate changes the refill rate; the tokens available are kept.
func (b *TokenBucket) SetRate(r float64) error {
	return b.set(func(p *TokenBucketParams) { p.Rate = r })
}

// SetBurst changes the capacity; the tokens available are kept, at most the
// new burst.
func (b *TokenBucket) SetBurst(n int64) error {
	return b.set(func(p *TokenBucketParams) { p.Burst = n })
}

// SetWarmup changes the warm-up period (0 turns warm-up off).
func (b *TokenBucket) SetWarmup(d time.Duration) error {
	return b.set(func(p *TokenBucketParams) { p.Warmup = d })
}

func (b *TokenBucket) set(change func(p *TokenBucketParams)) error {
	return b.l.update(func(p *tbParams) {
		change(&p.TokenBucketParams)
	}, func(p *tbParams) error {
		if err := p.Validate(); err != nil {
			return err
		}
		*p = *newTBParams(p.TokenBucketParams)
		return nil
	})
}

func (b *TokenBucket) newStore(shards, perShard int) keyedStore {
	return b.l.newStore(shards, perShard)
}

// tbState is a token bucket's state: the GCRA instant and, with warm-up, how
// warm it is (maxPermits minus Guava's stored permits; zero is fully cold).
type tbState struct {
	tat    int64
	warmth float64
}

type tbParams struct {
	TokenBucketParams
	gcra
	warm warmup
}

func newTBParams(p TokenBucketParams) *tbParams {
	if p.ColdFactor == 0 {
		p.ColdFactor = DefaultColdFactor
	}
	t := &tbParams{TokenBucketParams: p, gcra: *newGCRA(p.Rate, p.Burst, 0)}
	if p.Warmup > 0 {
		t.warm = newWarmup(t.interval, p.ColdFactor, float64(p.Warmup))
	}
	return t
}

func (p *tbParams) allow(s *tbState, now, n int64) Result {
	if p.Warmup == 0 {
		return p.bucket(&s.tat, now, n)
	}
	return p.warmAllow(s, now, n)
}

func (p *tbParams) idle(s *tbState, now int64) bool {
	if p.Warmup == 0 {
		return p.bucketIdle(&s.tat, now)
	}
	return s.tat <= now && p.warm.stored(s, now) >= p.warm.maxPermits
}

func (p *tbParams) adopt(s *tbState, old *tbParams, now int64) {
	if p.Warmup > 0 {
		stored := 0.0 // warm-up switched on for a running bucket: start warm
		if old.Warmup > 0 {
			stored = old.warm.stored(s, now) * p.warm.maxPermits / old.warm.maxPermits
		}
		s.warmth = p.warm.maxPermits - min(stored, p.warm.maxPermits)
	}
	p.bucketAdopt(&s.tat, &old.gcra, now)
}

func (p *tbParams) policy() Policy { return p.bucketPolicy() }
