package limits

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
	window[fwState, fwParams, *fwParams]
}

// NewFixedWindow returns a fixed-window limiter.
func NewFixedWindow(p WindowParams) (*FixedWindow, error) {
	return newWindow[FixedWindow](&fwParams{p})
}

type fwState struct {
	start int64 // start of the current window
	count int64
	debt  debt // what corrections charged beyond the limit
}

type fwParams struct{ WindowParams }

func (p *fwParams) allow(s *fwState, now, n int64) Result { return decide(p, p.Limit, s, now, n) }

func (p *fwParams) advance(s *fwState, now, _ int64) (int64, int64, bool) {
	if now >= p.end(s) {
		s.start, s.count = windowStart(now, int64(p.Window)), 0
	}
	return now, p.Limit - s.count, s.debt != 0
}

// end is when the current window, and its count, end.
func (p *fwParams) end(s *fwState) int64 { return s.start + int64(p.Window) }

func (p *fwParams) take(s *fwState, _, n int64) { s.count += n }

func (p *fwParams) wait(s *fwState, now, _ int64) int64 { return p.end(s) - now }

func (p *fwParams) reset(s *fwState, now int64) int64 {
	if s.count == 0 {
		return 0
	}
	return p.end(s) - now
}

func (p *fwParams) idle(s *fwState, now int64) bool {
	return s.debt == 0 && (s.count == 0 || now >= p.end(s))
}

func (p *fwParams) owed(s *fwState) *debt { return &s.debt }

func (p *fwParams) give(s *fwState, _, m int64) { s.count -= min(s.count, m) }

func (p *fwParams) adjustState(s *fwState, now, n int64) { adjustWindow(p, s, now, n) }

func (p *fwParams) adopt(s *fwState, old *fwParams, now int64) {
	p.realign(&s.start, &old.WindowParams, now)
}

var fixedWindowAlgorithm = Algorithm{
	Name: "fixed_window", Doc: "counts per aligned window; cheap, lets up to twice the limit through around a window edge",
	// limits/redis keeps the count as a decimal field of one 64-bit integer.
	Shape: ShapeWindow, Global: GlobalLeased, GlobalMaxLimit: 9_999_999_999, Adjusts: true,
	FreshAfter: windowFresh,
	New:        func(s Spec) (Limiter, error) { return NewFixedWindow(WindowParams{Limit: s.Limit, Window: s.Window}) },
}
