package limits

import "time"

// SlidingBucketsParams configures SlidingBuckets: at most Limit units in any
// Window, counted in Buckets sub-windows.
type SlidingBucketsParams struct {
	// Limit is N, the units allowed per window, at least 1.
	Limit int64
	// Window is t, the window length.
	Window time.Duration
	// Buckets is the number of sub-windows n (default 10, at most 4096). The
	// sub-window length is Window/Buckets, which must be at least 1 ns; the
	// effective window is Buckets times that (Window rounded down to a
	// multiple of Buckets nanoseconds).
	Buckets int
}

// DefaultBuckets is SlidingBucketsParams.Buckets' default.
const DefaultBuckets = 10

// Validate reports every problem with p.
func (p SlidingBucketsParams) Validate() error {
	var ps problems
	buckets := p.Buckets
	if buckets == 0 {
		buckets = DefaultBuckets
	}
	ps.positive("sliding buckets limit", p.Limit)
	ps.window("sliding buckets window", p.Window)
	switch {
	case p.Buckets < 0 || p.Buckets > 4096:
		ps.add("sliding buckets count must be between 0 and 4096, got %d", p.Buckets)
	case p.Window > 0 && int64(p.Window) < int64(buckets):
		ps.add("sliding buckets window %v is shorter than one nanosecond per bucket (%d buckets)", p.Window, buckets)
	}
	return ps.err()
}

// SlidingBuckets is the sliding window split into Buckets sub-windows (the
// seeds' "rolling window" in grids, as Sentinel and Hystrix count): a
// counter per sub-window, epoch-aligned, and a request is admitted if the
// units counted in the last Buckets sub-windows (the current, partly
// elapsed, one included) plus n stay within Limit. The count is exact at
// sub-window granularity: no span of Window - Window/Buckets holds more than
// Limit. A span of a full Window can still hold up to 2·Limit, but only
// when one limit's worth sits at the very end of one sub-window and the next
// at the start of the sub-window a Window later (a FixedWindow is the case
// Buckets = 1, where that span is tiny). Memory: 8 bytes per sub-window.
//
// Result fields: Limit is Limit; Remaining is Limit minus the count;
// RetryAfter the time until enough old sub-windows expire for n to fit;
// ResetAfter the time until the newest non-empty sub-window expires. n >
// Limit is never allowed (RetryAfter = InfDuration). An instant before the
// current sub-window is counted in it (no time passing).
//
// SetLimit applies at once; SetWindow and SetBuckets keep the total count,
// moved into the sub-window holding the next decision's instant (a
// conservative carry-over: it expires last). Safe for concurrent use.
type SlidingBuckets struct {
	l single[sbState, sbParams, *sbParams]
}

// NewSlidingBuckets returns a sliding-window limiter with sub-window counters.
func NewSlidingBuckets(p SlidingBucketsParams) (*SlidingBuckets, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	w := &SlidingBuckets{}
	w.l.init(newSBParams(p))
	return w, nil
}

// AllowAt decides on a request of n units at now.
func (w *SlidingBuckets) AllowAt(now time.Time, n int64) Result { return w.l.allowAt(now, n) }

// Allow is AllowAt(time.Now(), n).
func (w *SlidingBuckets) Allow(n int64) Result { return w.l.allowAt(time.Now(), n) }

// Policy is Limit per Window.
func (w *SlidingBuckets) Policy() Policy { return w.l.policy() }

// Params returns the current parameters (Buckets resolved to its default).
func (w *SlidingBuckets) Params() SlidingBucketsParams { return w.l.cur.Load().SlidingBucketsParams }

// SetLimit changes N.
func (w *SlidingBuckets) SetLimit(n int64) error {
	return w.set(func(p *SlidingBucketsParams) { p.Limit = n })
}

// SetWindow changes t.
func (w *SlidingBuckets) SetWindow(d time.Duration) error {
	return w.set(func(p *SlidingBucketsParams) { p.Window = d })
}

// SetBuckets changes the number of sub-windows.
func (w *SlidingBuckets) SetBuckets(n int) error {
	return w.set(func(p *SlidingBucketsParams) { p.Buckets = n })
}

func (w *SlidingBuckets) set(change func(p *SlidingBucketsParams)) error {
	return w.l.update(func(cur *sbParams) (*sbParams, error) {
		p := cur.SlidingBucketsParams
		change(&p)
		if err := p.Validate(); err != nil {
			return nil, err
		}
		return newSBParams(p), nil
	})
}

func (w *SlidingBuckets) newStore(shards, maxKeys int) keyedStore {
	return w.l.newStore(shards, maxKeys)
}

// sbState is a ring of sub-window counters; pos is the current one, which
// starts at head.
type sbState struct {
	counts []int64
	head   int64
	pos    int
	sum    int64
}

type sbParams struct {
	SlidingBucketsParams
	width int64 // sub-window length, ns
}

func newSBParams(p SlidingBucketsParams) *sbParams {
	if p.Buckets == 0 {
		p.Buckets = DefaultBuckets
	}
	return &sbParams{SlidingBucketsParams: p, width: int64(p.Window) / int64(p.Buckets)}
}

// advance moves s to the sub-window holding now, expiring the old ones.
func (p *sbParams) advance(s *sbState, now int64) {
	if len(s.counts) != p.Buckets {
		s.counts = make([]int64, p.Buckets)
	}
	if now < s.head+p.width {
		return
	}
	if steps := (now - s.head) / p.width; steps >= int64(p.Buckets) {
		clear(s.counts)
		s.sum = 0
	} else {
		for range steps {
			s.pos = (s.pos + 1) % p.Buckets
			s.sum -= s.counts[s.pos]
			s.counts[s.pos] = 0
		}
	}
	s.head = now - now%p.width
}

// expiry is when the counter j sub-windows after the current one in ring
// order (j = 1 is the oldest, j = Buckets the current) leaves the window.
func (p *sbParams) expiry(s *sbState, j int) (count, at int64) {
	return s.counts[(s.pos+j)%p.Buckets], s.head + int64(j)*p.width
}

func (p *sbParams) allow(s *sbState, now, n int64) Result {
	if n == 0 && s.sum == 0 {
		return Result{Allowed: true, Limit: p.Limit, Remaining: p.Limit}
	}
	p.advance(s, now)
	r := Result{Limit: p.Limit}
	switch {
	case n == 0:
		r.Allowed = true
	case n > p.Limit:
		r.RetryAfter = InfDuration
	case s.sum+n <= p.Limit:
		r.Allowed = true
		s.counts[s.pos] += n
		s.sum += n
	default:
		excess := s.sum + n - p.Limit
		for j := 1; j <= p.Buckets; j++ {
			c, at := p.expiry(s, j)
			if excess -= c; excess <= 0 {
				r.RetryAfter = span(at - now)
				break
			}
		}
	}
	r.Remaining = max(0, p.Limit-s.sum)
	for j := p.Buckets; j >= 1 && s.sum > 0; j-- {
		if c, at := p.expiry(s, j); c > 0 {
			r.ResetAfter = span(at - now)
			break
		}
	}
	return r
}

func (p *sbParams) idle(s *sbState, now int64) bool {
	return s.sum == 0 || now >= s.head+int64(p.Buckets)*p.width
}

// adopt keeps the total count; on a new layout it moves it into the current
// sub-window.
func (p *sbParams) adopt(s *sbState, old *sbParams, now int64) {
	if p.width == old.width && p.Buckets == old.Buckets {
		return
	}
	old.advance(s, now)
	sum := s.sum
	*s = sbState{}
	if sum > 0 {
		p.advance(s, now)
		s.counts[s.pos], s.sum = sum, sum
	}
}

func (p *sbParams) policy() Policy {
	return Policy{Quota: p.Limit, Window: time.Duration(int64(p.Buckets) * p.width)}
}
