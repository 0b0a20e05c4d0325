package limits

import (
	"math"
	"time"
)

// Corrections of a window limiter (Adjuster): a request admitted at one
// cost whose real cost is known after its work. A charge is counted in the
// window at the correction's instant as far as the window has room; the
// rest is owed, a debt carried in the key's state and paid, unit for unit,
// out of the room the key's next decisions find, before any of that room
// admits a request. So a key's units over any stretch of windows are its
// limit per window, give or take what its requests in flight at the end
// will be charged: no correction is forgiven when its window ends. A
// refund cancels the debt first, then gives back what the window still
// counts, newest units first (those the window would count longest), and
// never more: a refund of units that have left the window is lost, which
// errs on the side of the limit.
//
// A debt is paid only at decisions (a key that owes is not idle, so Keyed
// keeps it until it is paid), so a key that comes back after windows
// without requests pays what it owed then, in full.

// debt is the units a window limiter's key owes beyond its limit.
type debt int64

// charge takes a charge of n > 0 units against room: it returns what fits,
// to be counted now, and owes the rest (saturating far beyond any quota).
func (d *debt) charge(room, n int64) int64 {
	fit := min(n, max(0, room))
	*d = debt(min(int64(*d), math.MaxInt64-(n-fit)) + (n - fit))
	return fit
}

// pay takes what room can of the debt and returns it, to be counted now.
func (d *debt) pay(room int64) int64 {
	p := min(int64(*d), max(0, room))
	*d -= debt(p)
	return p
}

// refund cancels up to m > 0 units of the debt and returns the rest of m,
// to be given back from the window's count.
func (d *debt) refund(m int64) int64 {
	c := min(int64(*d), m)
	*d -= debt(c)
	return m - c
}

// debtor is the part of a window algorithm that corrections use besides
// its counter: where its state keeps the debt, and how it gives back
// counted units.
type debtor[S any] interface {
	counter[S]
	// owed is s's debt.
	owed(s *S) *debt
	// give takes up to m counted units out of the window at at, newest
	// first (at is advance's instant).
	give(s *S, at, m int64)
}

// adjustWindow charges n more units (n < 0 gives -n back) to s at now, c
// counting (see the corrections above). It runs under the limiter's (or
// the Keyed shard's) mutex and allocates nothing but what take does.
func adjustWindow[S any, C debtor[S]](c C, s *S, now, n int64) {
	at, room, _ := c.advance(s, now, max(0, n))
	d := c.owed(s)
	switch {
	case n > 0:
		if fit := d.charge(room, n); fit > 0 {
			c.take(s, at, fit)
		}
	case n < 0:
		if rest := d.refund(-n); rest > 0 {
			c.give(s, at, rest)
		}
	}
}

// payDebt pays what room can of s's debt ahead of a decision at at, and
// returns the room left.
func payDebt[S any, C debtor[S]](c C, s *S, at, room int64) int64 {
	if p := c.owed(s).pay(room); p > 0 {
		c.take(s, at, p)
		room -= p
	}
	return room
}

// AdjustAt charges n more units at now (n < 0 gives them back): see
// Adjuster, and windowdebt.go for what a window does with them. It always
// reports true.
func (w *window[S, P, M]) AdjustAt(now time.Time, n int64) bool {
	t := nanos(now)
	w.mu.Lock()
	w.current(t).adjustState(&w.s, t, n)
	w.mu.Unlock()
	return true
}
