package limits

import "math"

// SlidingWindow is the weighted sliding window (the "sliding window
// counter" of the seeds; Cloudflare's rate limiter): it keeps the counts of
// the current and the previous fixed window (epoch-aligned, like
// FixedWindow) and estimates the units in the last Window as
//
//	estimate = previous·(1 - elapsed/Window) + current
//
// where elapsed is the time since the current window began, i.e. the
// previous count weighted by the share of the previous window that the
// sliding window still overlaps. A request is admitted if estimate + n <=
// Limit. Two counters of memory; the estimate assumes the previous window's
// requests were spread evenly. Under saturation with evenly spaced arrivals
// it settles at about Limit-1 per window (9.05 of 10, 99.05 of 100 in
// TestSuite's simulation).
//
// Result fields: Limit is Limit; Remaining is Limit minus the estimate,
// rounded down; RetryAfter the time until the estimate has fallen enough for
// n to fit (computed from the formula); ResetAfter the time until the
// estimate is zero (the end of the window after the last counted one). n >
// Limit is never allowed (RetryAfter = InfDuration). An instant before the
// current window is treated as its start (no time passing: the previous
// window weighs fully).
//
// SetLimit applies at once; SetWindow keeps both counts and re-aligns the
// current window at the next decision. Safe for concurrent use.
type SlidingWindow struct {
	window[swState, swParams, *swParams]
}

// NewSlidingWindow returns a weighted sliding-window limiter.
func NewSlidingWindow(p WindowParams) (*SlidingWindow, error) {
	return newWindow[SlidingWindow](&swParams{p})
}

type swState struct {
	start     int64 // start of the current window
	prev, cur int64
	debt      debt // what corrections charged beyond the limit
}

type swParams struct{ WindowParams }

// swSlack is the float slack by which an estimate exactly at a boundary
// still admits.
const swSlack = 1e-9

func (p *swParams) allow(s *swState, now, n int64) Result { return decide(p, p.Limit, s, now, n) }

// roll moves s to the window holding now.
func (p *swParams) roll(s *swState, now int64) {
	t := int64(p.Window)
	if now < s.start+t {
		return
	}
	if now < s.start+2*t {
		s.prev = s.cur
	} else {
		s.prev = 0
	}
	s.cur, s.start = 0, windowStart(now, t)
}

// elapsed is the time since the current window began (0 before it).
func (p *swParams) elapsed(s *swState, now int64) int64 { return max(0, now-s.start) }

// advance: the room is Limit minus the estimate, rounded down, in
// [0, Limit] (n fits exactly when estimate + n <= Limit).
func (p *swParams) advance(s *swState, now, _ int64) (int64, int64, bool) {
	p.roll(s, now)
	t := int64(p.Window)
	weight := float64(t-p.elapsed(s, now)) / float64(t)
	estimate := float64(s.prev)*weight + float64(s.cur)
	limit := float64(p.Limit)
	switch free := limit - estimate + swSlack; {
	case free < 1:
		return now, 0, s.debt != 0
	case free >= limit: // an empty window; and no overflow converting a Limit near 2^63
		return now, p.Limit, s.debt != 0
	default:
		return now, int64(free), s.debt != 0
	}
}

func (p *swParams) take(s *swState, _, n int64) { s.cur += n }

// wait solves the estimate formula for the elapsed time at which n fits.
func (p *swParams) wait(s *swState, now, n int64) int64 {
	t := int64(p.Window)
	if n <= p.Limit-s.cur {
		// Within this window, once prev·(t-e)/t <= Limit-cur-n.
		e := float64(t) * (1 - float64(p.Limit-s.cur-n)/float64(s.prev))
		return int64(math.Ceil(e-swSlack)) - p.elapsed(s, now)
	}
	// In the next window, once cur·(t-e)/t + n <= Limit.
	e := float64(t) * (1 - float64(p.Limit-n)/float64(s.cur))
	return s.start + t - now + int64(math.Ceil(e-swSlack))
}

func (p *swParams) reset(s *swState, now int64) int64 {
	t := int64(p.Window)
	switch {
	case s.cur > 0:
		return s.start + 2*t - now
	case s.prev > 0:
		return s.start + t - now
	}
	return 0
}

func (p *swParams) idle(s *swState, now int64) bool {
	t := int64(p.Window)
	switch {
	case s.debt != 0:
		return false
	case now >= s.start+2*t:
		return true
	case now >= s.start+t:
		return s.cur == 0
	}
	return s.cur == 0 && s.prev == 0
}

func (p *swParams) owed(s *swState) *debt { return &s.debt }

// give takes from the current window's count only: the previous window's
// weighs less than a unit each.
func (p *swParams) give(s *swState, _, m int64) { s.cur -= min(s.cur, m) }

func (p *swParams) adjustState(s *swState, now, n int64) { adjustWindow(p, s, now, n) }

func (p *swParams) adopt(s *swState, old *swParams, now int64) {
	p.realign(&s.start, &old.WindowParams, now)
}

// policy is N per Window, of which N-1 are promised to evenly spread
// requests (Policy.Shortfall; see SlidingWindow).
func (p *swParams) policy() Policy {
	return Policy{Quota: p.Limit, Window: p.Window, Shortfall: 1}
}

var slidingWindowAlgorithm = Algorithm{
	Name: "sliding_window", Doc: "weights the previous window's count by its overlap; approximate, two counters",
	// limits/redis keeps the two counts of 9 digits in one Redis integer.
	Shape: ShapeWindow, Global: GlobalExact, GlobalMaxLimit: 999_999_999, Adjusts: true,
	// Its estimate reads the previous window's count.
	FreshAfter: func(s Spec) float64 { return 2 * s.Window.Seconds() },
	New:        func(s Spec) (Limiter, error) { return NewSlidingWindow(WindowParams{Limit: s.Limit, Window: s.Window}) },
}
