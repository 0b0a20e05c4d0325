package limits

import (
	"math"
	"time"
)

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
	l single[swState, swParams, *swParams]
}

// NewSlidingWindow returns a weighted sliding-window limiter.
func NewSlidingWindow(p WindowParams) (*SlidingWindow, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	w := &SlidingWindow{}
	w.l.init(&swParams{p})
	return w, nil
}

// AllowAt decides on a request of n units at now.
func (w *SlidingWindow) AllowAt(now time.Time, n int64) Result { return w.l.allowAt(now, n) }

// Allow is AllowAt(time.Now(), n).
func (w *SlidingWindow) Allow(n int64) Result { return w.l.allowAt(time.Now(), n) }

// Policy is Limit per Window.
func (w *SlidingWindow) Policy() Policy { return w.l.policy() }

// Params returns the current parameters.
func (w *SlidingWindow) Params() WindowParams { return w.l.cur.Load().WindowParams }

// SetLimit changes N.
func (w *SlidingWindow) SetLimit(n int64) error {
	return w.l.update(func(cur *swParams) (*swParams, error) {
		p := *cur
		p.Limit = n
		return &p, p.Validate()
	})
}

// SetWindow changes t.
func (w *SlidingWindow) SetWindow(d time.Duration) error {
	return w.l.update(func(cur *swParams) (*swParams, error) {
		p := *cur
		p.Window = d
		return &p, p.Validate()
	})
}

func (w *SlidingWindow) newStore(shards, maxKeys int) keyedStore {
	return w.l.newStore(shards, maxKeys)
}

type swState struct {
	start     int64 // start of the current window
	prev, cur int64
}

type swParams struct{ WindowParams }

// advance moves s to the window holding now.
func (p *swParams) advance(s *swState, now int64) {
	t := int64(p.Window)
	if now < s.start+t {
		return
	}
	if now < s.start+2*t {
		s.prev = s.cur
	} else {
		s.prev = 0
	}
	s.cur, s.start = 0, now-now%t
}

func (p *swParams) allow(s *swState, now, n int64) Result {
	p.advance(s, now)
	t := int64(p.Window)
	elapsed := max(0, now-s.start)
	weight := float64(t-elapsed) / float64(t)
	limit := float64(p.Limit)
	const eps = 1e-9 // float slack so exact boundaries admit
	estimate := float64(s.prev)*weight + float64(s.cur)
	r := Result{Limit: p.Limit}
	switch {
	case n == 0:
		r.Allowed = true
	case n > p.Limit:
		r.RetryAfter = InfDuration
	case estimate+float64(n) <= limit+eps:
		r.Allowed = true
		s.cur += n
		estimate += float64(n)
	case s.cur+n <= p.Limit:
		// Within this window, once prev·(t-e)/t <= Limit-cur-n.
		e := float64(t) * (1 - float64(p.Limit-s.cur-n)/float64(s.prev))
		r.RetryAfter = span(int64(math.Ceil(e-eps)) - elapsed)
	default:
		// In the next window, once cur·(t-e)/t + n <= Limit.
		e := float64(t) * (1 - float64(p.Limit-n)/float64(s.cur))
		r.RetryAfter = span(s.start + t - now + int64(math.Ceil(e-eps)))
	}
	r.Remaining = max(0, min(p.Limit, int64(math.Floor(limit-estimate+eps))))
	switch {
	case s.cur > 0:
		r.ResetAfter = span(s.start + 2*t - now)
	case s.prev > 0:
		r.ResetAfter = span(s.start + t - now)
	}
	return r
}

func (p *swParams) idle(s *swState, now int64) bool {
	t := int64(p.Window)
	switch {
	case now >= s.start+2*t:
		return true
	case now >= s.start+t:
		return s.cur == 0
	}
	return s.cur == 0 && s.prev == 0
}

func (p *swParams) adopt(s *swState, old *swParams, now int64) {
	if p.Window != old.Window && now >= s.start {
		s.start = now - now%int64(p.Window)
	}
}

func (p *swParams) policy() Policy { return p.WindowParams.policy() }
