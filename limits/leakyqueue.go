package limits

import "time"

// LeakyQueueParams configures a LeakyQueue. Rate is required.
type LeakyQueueParams struct {
	// Rate is the pace in units per second, in (0, 1e9]: requests leave the
	// queue 1/Rate apart (n/Rate for a request of n units).
	Rate float64
	// MaxWait bounds the wait a request may be given; a request that would
	// have to wait longer is refused. Zero: no waiting (a request is admitted
	// only if its slot is free now).
	MaxWait time.Duration
}

// Validate reports every problem with p.
func (p LeakyQueueParams) Validate() error {
	var ps problems
	ps.rate("leaky queue rate", p.Rate)
	if p.MaxWait < 0 || int64(p.MaxWait) > maxSpan {
		ps.add("leaky queue max wait must be between 0 and %v, got %v", time.Duration(maxSpan), p.MaxWait)
	}
	return ps.err()
}

// LeakyQueue is the leaky bucket as a queue: requests are scheduled to leave
// at a fixed pace, one unit per 1/Rate, in arrival order. Instead of holding
// the request, it tells the caller when its slot is: an admitted Result's
// Delay is how long the caller must wait before going ahead. A request whose
// wait would exceed MaxWait is refused and not scheduled. This is the
// shaping variant of the seeds' leaky bucket (smooth output, no burst) and
// Sentinel's "rate limiter" control behaviour.
//
// Result fields: Limit is the queue's capacity in units, MaxWait·Rate + 1
// (rounded down); Remaining how many more units could still be scheduled now;
// Delay the wait of an admitted request; RetryAfter, when refused, the time
// until a request would be given a wait within MaxWait; ResetAfter the time
// until the queue has drained. Any n can be scheduled (a large request just
// occupies the pace for longer), so RetryAfter is never InfDuration.
//
// A scheduled slot is not returned if the caller gives up waiting: the pace
// stays conservative. SetRate keeps the queued units (their backlog is
// re-timed at the new pace); SetMaxWait affects later requests only. Safe
// for concurrent use.
type LeakyQueue struct {
	l cell
}

// NewLeakyQueue returns an empty leaky queue.
func NewLeakyQueue(p LeakyQueueParams) (*LeakyQueue, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	q := &LeakyQueue{}
	q.l.init(newQueue(p.Rate, p.MaxWait))
	return q, nil
}

// AllowAt schedules a request of n units at now, or refuses it.
func (q *LeakyQueue) AllowAt(now time.Time, n int64) (r Result) {
	q.l.allowAt(&r, now, n)
	return r
}

// AdjustAt moves the queue's next slot by n more units at now (n < 0 moves
// it back, not before now; see Adjuster); it always reports true.
func (q *LeakyQueue) AdjustAt(now time.Time, n int64) bool {
	q.l.adjustAt(now, n)
	return true
}

// Allow is AllowAt(time.Now(), n).
func (q *LeakyQueue) Allow(n int64) Result { return q.AllowAt(time.Now(), n) }

// Policy is the queue's capacity per the time it takes to drain.
func (q *LeakyQueue) Policy() Policy { return q.l.policy() }

// Params returns the current parameters.
func (q *LeakyQueue) Params() LeakyQueueParams {
	p := q.l.cur.Load()
	return LeakyQueueParams{Rate: p.rate, MaxWait: time.Duration(p.maxWait)}
}

// SetRate changes the pace; units already scheduled keep their place in the
// queue and are re-timed at the new pace.
func (q *LeakyQueue) SetRate(r float64) error {
	return q.set(func(p *LeakyQueueParams) { p.Rate = r })
}

// SetMaxWait changes the wait bound for later requests.
func (q *LeakyQueue) SetMaxWait(d time.Duration) error {
	return q.set(func(p *LeakyQueueParams) { p.MaxWait = d })
}

func (q *LeakyQueue) set(change func(p *LeakyQueueParams)) error {
	return q.l.update(func(cur *gcra) (*gcra, error) {
		p := LeakyQueueParams{Rate: cur.rate, MaxWait: time.Duration(cur.maxWait)}
		change(&p)
		if err := p.Validate(); err != nil {
			return nil, err
		}
		return newQueue(p.Rate, p.MaxWait), nil
	})
}

func (q *LeakyQueue) newStore(shards, maxKeys int) keyedStore {
	return q.l.newStore(shards, maxKeys)
}

var leakyQueueAlgorithm = Algorithm{
	Name: "leaky_queue", Doc: "the leaky bucket as a queue: requests wait and leave at exactly rate, refused beyond max_wait",
	Shape: ShapeRate, Knobs: KnobMaxWait, Paced: true, Adjusts: true,
	Defaults: Spec{MaxWait: 500 * time.Millisecond},
	// The last request admitted leaves at most MaxWait after it came (it
	// still holds the next one back by one interval, 1/rate: a key forgotten
	// at MaxWait may admit one request early, as before issue 25).
	FreshAfter: func(s Spec) float64 { return s.MaxWait.Seconds() },
	New: func(s Spec) (Limiter, error) {
		return NewLeakyQueue(LeakyQueueParams{Rate: s.Rate, MaxWait: s.MaxWait})
	},
}
