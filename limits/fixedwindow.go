package limits

import "time"

// WindowParams configures the window algorithms (FixedWindow, SlidingLog,
// SlidingWindow): at most Limit units per Window. Both fields are required.
type WindowParams struct {
	// Limit is N, the units allowed per window, at least 1.
	Limit int64
	// Window is t, the window length, at most 87600h (10 years).
	Window time.Duration
}

// Validate reports every problem with p.
func (p WindowParams) Validate() error {
	var ps problems
	ps.positive("window limit", p.Limit)
	ps.window("window length", p.Window)
	return ps.err()
}

func (p *WindowParams) policy() Policy { return Policy{Quota: p.Limit, Window: p.Window} }

// FixedWindow counts units in consecutive fixed windows of length Window,
// aligned to the Unix epoch (so every node and limits/redis agree on the
// boundaries), and refuses a request that would take the current window's
// count over Limit. Cheap and exact per window, but it lets up to 2·Limit
// through in a span of one Window that straddles a boundary: Limit at the
// end of one window, Limit at the start of the next.
//
// Result fields: Limit is Limit; Remaining is Limit minus the window's count;
// RetryAfter the time until the next window; ResetAfter the time until the
// count is zero again (the next window, or 0 when it already is). n > Limit
// is never allowed (RetryAfter = InfDuration). An instant before the current
// window (time went backwards) is counted in the current window.
//
// SetLimit applies at once to the current count; SetWindow keeps the count
// and moves it into the window holding the next decision's instant. Safe for
// concurrent use.
type FixedWindow struct {
	l single[fwState, fwParams, *fwParams]
}

// NewFixedWindow returns a fixed-window limiter.
func NewFixedWindow(p WindowParams) (*FixedWindow, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	w := &FixedWindow{}
	w.l.init(&fwParams{p})
	return w, nil
}

// AllowAt decides on a request of n units at now.
func (w *FixedWindow) AllowAt(now time.Time, n int64) Result { return w.l.allowAt(now, n) }

// Allow is AllowAt(time.Now(), n).
func (w *FixedWindow) Allow(n int64) Result { return w.l.allowAt(time.Now(), n) }

// Policy is Limit per Window.
func (w *FixedWindow) Policy() Policy { return w.l.policy() }

// Params returns the current parameters.
func (w *FixedWindow) Params() WindowParams { return w.l.cur.Load().WindowParams }

// SetLimit changes N.
func (w *FixedWindow) SetLimit(n int64) error {
	return w.l.update(func(cur *fwParams) (*fwParams, error) {
		p := *cur
		p.Limit = n
		return &p, p.Validate()
	})
}

// SetWindow changes t.
func (w *FixedWindow) SetWindow(d time.Duration) error {
	return w.l.update(func(cur *fwParams) (*fwParams, error) {
		p := *cur
		p.Window = d
		return &p, p.Validate()
	})
}

func (w *FixedWindow) newStore(shards, maxKeys int) keyedStore {
	return w.l.newStore(shards, maxKeys)
}

type fwState struct {
	start int64 // start of the current window
	count int64
}

type fwParams struct{ WindowParams }

func (p *fwParams) allow(s *fwState, now, n int64) Result {
	t := int64(p.Window)
	if now >= s.start+t {
		s.start, s.count = now-now%t, 0
	}
	end := s.start + t
	r := Result{Limit: p.Limit}
	switch {
	case n == 0:
		r.Allowed = true
	case n > p.Limit:
		r.RetryAfter = InfDuration
	case s.count+n <= p.Limit:
		r.Allowed = true
		s.count += n
	default:
		r.RetryAfter = span(end - now)
	}
	r.Remaining = max(0, p.Limit-s.count)
	if s.count > 0 {
		r.ResetAfter = span(end - now)
	}
	return r
}

func (p *fwParams) idle(s *fwState, now int64) bool {
	return s.count == 0 || now >= s.start+int64(p.Window)
}

func (p *fwParams) adopt(s *fwState, old *fwParams, now int64) {
	if p.Window != old.Window && now >= s.start {
		s.start = now - now%int64(p.Window)
	}
}

func (p *fwParams) policy() Policy { return p.WindowParams.policy() }
