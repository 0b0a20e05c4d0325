package limits

import "time"

// LeakyBucketParams configures a LeakyBucket. Both fields are required.
type LeakyBucketParams struct {
	// Rate is the leak rate in units per second, in (0, 1e9].
	Rate float64
	// Capacity is the bucket size in units, at least 1.
	Capacity int64
}

// Validate reports every problem with p.
func (p LeakyBucketParams) Validate() error {
	var ps problems
	ps.rate("leaky bucket rate", p.Rate)
	ps.positive("leaky bucket capacity", p.Capacity)
	if len(ps) == 0 && float64(p.Capacity)*1e9/p.Rate > float64(maxSpan) {
		ps.add("leaky bucket capacity/rate must be at most %v, got capacity %d at rate %v", time.Duration(maxSpan), p.Capacity, p.Rate)
	}
	return ps.err()
}

// LeakyBucket is the leaky bucket as a meter: each admitted request pours n
// units into a bucket of size Capacity that leaks at Rate units per second;
// a request that would overflow it is refused. It starts empty.
//
// The meter is the mirror image of the token bucket (level = Capacity -
// tokens) and admits exactly the same sequences as a TokenBucket with Burst
// = Capacity; both are GCRA inside and share that code. It exists so that
// configurations can name it, with level-oriented read-outs.
//
// Result fields: Limit is Capacity; Remaining the whole units of free room;
// RetryAfter the time until n units fit; ResetAfter the time until the
// bucket is empty. n > Capacity is never allowed (RetryAfter = InfDuration).
// SetRate and SetCapacity keep the free room (clamped to the new capacity).
// Safe for concurrent use.
type LeakyBucket struct {
	l cell
}

// NewLeakyBucket returns an empty leaky bucket.
func NewLeakyBucket(p LeakyBucketParams) (*LeakyBucket, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	b := &LeakyBucket{}
	b.l.init(newBucket(p.Rate, p.Capacity))
	return b, nil
}

// AllowAt decides on pouring n units at now.
func (b *LeakyBucket) AllowAt(now time.Time, n int64) (r Result) {
	b.l.allowAt(&r, now, n)
	return r
}

// AdjustAt adds n more units to the bucket at now (n < 0 lets them out; see
// Adjuster); it always reports true.
func (b *LeakyBucket) AdjustAt(now time.Time, n int64) bool {
	b.l.adjustAt(now, n)
	return true
}

// Allow is AllowAt(time.Now(), n).
func (b *LeakyBucket) Allow(n int64) Result { return b.AllowAt(time.Now(), n) }

// Policy is Capacity units per the time the bucket takes to drain.
func (b *LeakyBucket) Policy() Policy { return b.l.policy() }

// Params returns the current parameters.
func (b *LeakyBucket) Params() LeakyBucketParams {
	p := b.l.cur.Load()
	return LeakyBucketParams{Rate: p.rate, Capacity: p.burst}
}

// LevelAt returns the bucket's fill level in units at now (fractional).
func (b *LeakyBucket) LevelAt(now time.Time) float64 {
	t := nanos(now)
	tat, p := b.l.load(t)
	return max(0, float64(tat-t)/p.interval)
}

// SetRate changes the leak rate; the free room is kept.
func (b *LeakyBucket) SetRate(r float64) error {
	return b.set(func(p *LeakyBucketParams) { p.Rate = r })
}

// SetCapacity changes the bucket size; the free room is kept, at most the
// new capacity.
func (b *LeakyBucket) SetCapacity(n int64) error {
	return b.set(func(p *LeakyBucketParams) { p.Capacity = n })
}

// SetBurst is SetCapacity: a leaky bucket's capacity is its burst (the
// name BurstSetter shares with TokenBucket).
func (b *LeakyBucket) SetBurst(n int64) error { return b.SetCapacity(n) }

func (b *LeakyBucket) set(change func(p *LeakyBucketParams)) error {
	return b.l.update(func(cur *gcra) (*gcra, error) {
		p := LeakyBucketParams{Rate: cur.rate, Capacity: cur.burst}
		change(&p)
		if err := p.Validate(); err != nil {
			return nil, err
		}
		return newBucket(p.Rate, p.Capacity), nil
	})
}

func (b *LeakyBucket) newStore(shards, maxKeys int) keyedStore {
	return b.l.newStore(shards, maxKeys)
}

var leakyBucketAlgorithm = Algorithm{
	Name: "leaky_bucket", Doc: "the leaky bucket as a meter (GCRA): admits a request if the bucket, draining at rate, has room for it in burst",
	Shape: ShapeRate, Knobs: KnobBurst, Global: GlobalLeased, Adjusts: true,
	FreshAfter: bucketFresh,
	New: func(s Spec) (Limiter, error) {
		return NewLeakyBucket(LeakyBucketParams{Rate: s.Rate, Capacity: s.Burst})
	},
}
