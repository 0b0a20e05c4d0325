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

// sizes is the part of a window algorithm's parameters that SetLimit and
// SetWindow change.
func (p *WindowParams) sizes() *WindowParams { return p }

// settle checks parameters a setter has changed (SlidingBuckets, which
// derives more from them, has its own).
func (p *WindowParams) settle() error { return p.Validate() }

// realign carries the start of an epoch-aligned window over from the
// parameters old: when the window length changed, it moves to the start of
// the window holding now; an instant before it leaves it where it is (no
// time passes). The count is the algorithm's to keep.
func (p *WindowParams) realign(start *int64, old *WindowParams, now int64) {
	if p.Window != old.Window && now >= *start {
		*start = windowStart(now, int64(p.Window))
	}
}

// windowStart is the start of the window of the given width (ns) holding
// now; windows are aligned to the Unix epoch, so every node and limits/redis
// agree on the boundaries.
func windowStart(now, width int64) int64 { return now - now%width }

// window is what the four window limiters (FixedWindow, SlidingLog,
// SlidingWindow, SlidingBuckets) share: the exported methods, the setters
// of N and t, and (in decide) the decision itself. Each embeds it and adds
// only how it counts the units in its window: a windowModel. Safe for
// concurrent use: single's mutex guards the state, setters publish new
// parameters atomically.
type window[S, P any, M windowModel[S, P]] struct {
	single[S, P, M]
}

// windowModel is a window algorithm: a model whose parameters hold a
// WindowParams (sizes, promoted from it or the algorithm's own). Its allow
// is decide over its counter.
type windowModel[S, P any] interface {
	model[S, P]
	sizes() *WindowParams
	// settle checks parameters a setter changed and derives what the
	// algorithm derives from them; it returns every problem.
	settle() error
	// adjustState is adjustWindow over its counter (windowdebt.go).
	adjustState(s *S, now, n int64)
}

// counter is the part of a window decision that is the algorithm's own:
// how it counts the units in its window. Every method but advance is
// called after advance, with the instant advance returned.
type counter[S any] interface {
	// advance moves s to now, dropping what has left the window, ahead of
	// a decision on n units. It returns the instant the decision is made
	// at (now, or an instant already seen when time went backwards), the
	// room: how many units fit in the window at that instant (negative
	// when a lowered limit left more counted), and whether s owes
	// (windowdebt.go).
	advance(s *S, now, n int64) (at, room int64, owes bool)
	// take counts n admitted units.
	take(s *S, at, n int64)
	// wait is the time (ns) until n units fit, n being more than the room
	// and at most the limit: until enough counted units leave the window.
	wait(s *S, at, n int64) int64
	// reset is the time (ns) until the window holds nothing, 0 if it holds
	// nothing now.
	reset(s *S, at int64) int64
}

// decide is every window algorithm's decision on n units (n >= 0) at now,
// c counting: what the key owes takes the room first (windowdebt.go); a
// probe (n = 0) is allowed and takes nothing; n over the limit can never be
// allowed (RetryAfter = InfDuration); n within the room is admitted and
// counted; otherwise it is refused for c.wait (until n and the debt fit).
// Remaining is the room left, ResetAfter the time until the window is
// empty. It runs under the limiter's (or the Keyed shard's) mutex and
// allocates nothing: s is the limiter's or the shard's, and c's methods are
// called through the generic dictionary.
func decide[S any, C debtor[S]](c C, limit int64, s *S, now, n int64) Result {
	at, room, owes := c.advance(s, now, n)
	if owes {
		room = payDebt(c, s, at, room)
	}
	r := Result{Limit: limit}
	switch {
	case n == 0:
		r.Allowed = true
	case n > limit:
		r.RetryAfter = InfDuration
	case n <= room:
		r.Allowed = true
		c.take(s, at, n)
		room -= n
	case owes:
		r.RetryAfter = span(c.wait(s, at, n+min(limit-n, int64(*c.owed(s)))))
	default:
		r.RetryAfter = span(c.wait(s, at, n))
	}
	r.Remaining = max(0, room)
	r.ResetAfter = span(c.reset(s, at))
	return r
}

// newWindow returns a new window limiter W (a type embedding window, whose
// start PW reaches) on the parameters p, or every problem with them.
func newWindow[W, P any, PW interface {
	*W
	start(p *P) error
}](p *P) (*W, error) {
	w := PW(new(W))
	if err := w.start(p); err != nil {
		return nil, err
	}
	return w, nil
}

// start checks p and makes it the parameters of a new limiter.
func (w *window[S, P, M]) start(p *P) error {
	if err := M(p).settle(); err != nil {
		return err
	}
	w.init(p)
	return nil
}

// AllowAt decides on a request of n units at now.
func (w *window[S, P, M]) AllowAt(now time.Time, n int64) Result { return w.allowAt(now, n) }

// Allow is AllowAt(time.Now(), n).
func (w *window[S, P, M]) Allow(n int64) Result { return w.allowAt(time.Now(), n) }

// Policy is Limit per Window.
func (w *window[S, P, M]) Policy() Policy { return w.policy() }

// Params returns the current parameters. (SlidingBuckets, whose parameters
// have Buckets too, has its own.)
func (w *window[S, P, M]) Params() WindowParams { return *M(w.cur.Load()).sizes() }

// SetLimit changes N.
func (w *window[S, P, M]) SetLimit(n int64) error {
	return w.set(func(p *P) { M(p).sizes().Limit = n })
}

// SetWindow changes t.
func (w *window[S, P, M]) SetWindow(d time.Duration) error {
	return w.set(func(p *P) { M(p).sizes().Window = d })
}

// set publishes a copy of the current parameters changed by change, once it
// settles; otherwise it publishes nothing and returns the problems.
func (w *window[S, P, M]) set(change func(p *P)) error {
	return w.update(func(cur *P) (*P, error) {
		next := *cur
		change(&next)
		return &next, M(&next).settle()
	})
}
