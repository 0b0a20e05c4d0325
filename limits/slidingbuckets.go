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
	window[sbState, sbParams, *sbParams]
}

// NewSlidingBuckets returns a sliding-window limiter with sub-window counters.
func NewSlidingBuckets(p SlidingBucketsParams) (*SlidingBuckets, error) {
	w := WindowParams{Limit: p.Limit, Window: p.Window}
	return newWindow[SlidingBuckets](&sbParams{WindowParams: w, buckets: p.Buckets})
}

// Params returns the current parameters (Buckets resolved to its default).
// It takes the place of window's.
func (w *SlidingBuckets) Params() SlidingBucketsParams { return w.cur.Load().public() }

// SetBuckets changes the number of sub-windows.
func (w *SlidingBuckets) SetBuckets(n int) error {
	return w.set(func(p *sbParams) { p.buckets = n })
}

// sbState is a ring of sub-window counters; pos is the current one, which
// starts at head.
type sbState struct {
	counts []int64
	head   int64
	pos    int
	sum    int64
	debt   debt // what corrections charged beyond the limit
}

// sbParams are the parameters as SlidingBuckets runs them: Limit and Window
// as in the other windows (so window's setters reach them), checked,
// resolved and described by its own settle and policy.
type sbParams struct {
	WindowParams
	buckets int   // resolved: never 0 once settled
	width   int64 // sub-window length, ns
}

// public is p as Params reports it.
func (p *sbParams) public() SlidingBucketsParams {
	return SlidingBucketsParams{Limit: p.Limit, Window: p.Window, Buckets: p.buckets}
}

// settle checks p and resolves the default count and the sub-window length.
func (p *sbParams) settle() error {
	if err := p.public().Validate(); err != nil {
		return err
	}
	if p.buckets == 0 {
		p.buckets = DefaultBuckets
	}
	p.width = int64(p.Window) / int64(p.buckets)
	return nil
}

func (p *sbParams) allow(s *sbState, now, n int64) Result { return decide(p, p.Limit, s, now, n) }

// roll moves s to the sub-window holding now, expiring the old ones.
func (p *sbParams) roll(s *sbState, now int64) {
	if len(s.counts) != p.buckets {
		s.counts = make([]int64, p.buckets)
	}
	if now < s.head+p.width {
		return
	}
	if steps := (now - s.head) / p.width; steps >= int64(p.buckets) {
		clear(s.counts)
		s.sum = 0
	} else {
		for range steps {
			s.pos = (s.pos + 1) % p.buckets
			s.sum -= s.counts[s.pos]
			s.counts[s.pos] = 0
		}
	}
	s.head = windowStart(now, p.width)
}

// expiry is when the counter j sub-windows after the current one in ring
// order (j = 1 is the oldest, j = Buckets the current) leaves the window.
func (p *sbParams) expiry(s *sbState, j int) (count, at int64) {
	return s.counts[(s.pos+j)%p.buckets], s.head + int64(j)*p.width
}

func (p *sbParams) advance(s *sbState, now, n int64) (int64, int64, bool) {
	if n == 0 && s.sum == 0 && s.debt == 0 { // a probe of an empty window allocates nothing
		return now, p.Limit, s.debt != 0
	}
	p.roll(s, now)
	return now, p.Limit - s.sum, s.debt != 0
}

func (p *sbParams) take(s *sbState, _, n int64) {
	s.counts[s.pos] += n
	s.sum += n
}

// wait is until the oldest sub-windows holding the excess have expired.
func (p *sbParams) wait(s *sbState, now, n int64) int64 {
	excess := s.sum + n - p.Limit
	for j := 1; j <= p.buckets; j++ {
		c, at := p.expiry(s, j)
		if excess -= c; excess <= 0 {
			return at - now
		}
	}
	return 0 // not reached: n <= Limit, so the sub-windows hold the excess
}

// reset is until the newest non-empty sub-window expires.
func (p *sbParams) reset(s *sbState, now int64) int64 {
	for j := p.buckets; j >= 1 && s.sum > 0; j-- {
		if c, at := p.expiry(s, j); c > 0 {
			return at - now
		}
	}
	return 0
}

func (p *sbParams) idle(s *sbState, now int64) bool {
	return s.debt == 0 && (s.sum == 0 || now >= s.head+int64(p.buckets)*p.width)
}

func (p *sbParams) owed(s *sbState) *debt { return &s.debt }

// give takes up to m units out of the newest sub-windows.
func (p *sbParams) give(s *sbState, _, m int64) {
	for j := p.buckets; j >= 1 && m > 0 && s.sum > 0; j-- {
		c := &s.counts[(s.pos+j)%p.buckets]
		d := min(*c, m)
		*c, s.sum, m = *c-d, s.sum-d, m-d
	}
}

func (p *sbParams) adjustState(s *sbState, now, n int64) { adjustWindow(p, s, now, n) }

// adopt keeps the total count; on a new layout it moves it into the current
// sub-window.
func (p *sbParams) adopt(s *sbState, old *sbParams, now int64) {
	if p.width == old.width && p.buckets == old.buckets {
		return
	}
	old.roll(s, now)
	sum := s.sum
	*s = sbState{}
	if sum > 0 {
		p.roll(s, now)
		s.counts[s.pos], s.sum = sum, sum
	}
}

func (p *sbParams) policy() Policy {
	return Policy{Quota: p.Limit, Window: time.Duration(int64(p.buckets) * p.width)}
}

var slidingBucketsAlgorithm = Algorithm{
	Name: "sliding_buckets", Doc: "splits the window into sub-window counters",
	Shape: ShapeWindow, Knobs: KnobBuckets, Adjusts: true,
	Defaults: Spec{Buckets: 10}, FreshAfter: windowFresh,
	New: func(s Spec) (Limiter, error) {
		return NewSlidingBuckets(SlidingBucketsParams{Limit: s.Limit, Window: s.Window, Buckets: s.Buckets})
	},
}
