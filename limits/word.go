package limits

import (
	"sync"
	"sync/atomic"
	"time"
)

// wordModel is a rate algorithm whose whole state is one int64 (the GCRA
// family). Its step is a pure function of values, so a limiter can decide
// lock-free: load the word, step, compare-and-swap.
type wordModel[P any] interface {
	*P
	// step decides on n units at now from state w; it returns the new state
	// (w itself when nothing is consumed) and the Result.
	step(w, now, n int64) (int64, Result)
	// carry converts w, built under old, to these parameters at now.
	carry(w int64, old *P, now int64) int64
	policy() Policy
}

// word is a single limiter with a one-word state and lock-free decisions.
// After a parameter change, the first decision converts the state (under a
// mutex that only setters' successors ever take); a decision racing with
// that conversion is judged under either the old or the new parameters.
type word[P any, M wordModel[P]] struct {
	params[P]
	w    atomic.Int64
	seen atomic.Pointer[P] // the parameters w is expressed in
	mu   sync.Mutex        // serialises conversions
}

func (l *word[P, M]) init(p *P) {
	l.cur.Store(p)
	l.seen.Store(p)
}

func (l *word[P, M]) allowAt(now time.Time, n int64) Result {
	t := nanos(now)
	n = units(n)
	for {
		p := l.cur.Load()
		if p != l.seen.Load() {
			l.convert(t)
			continue
		}
		old := l.w.Load()
		next, r := M(p).step(old, t, n)
		if next == old || l.w.CompareAndSwap(old, next) {
			return r
		}
	}
}

// convert carries the state over to the current parameters.
func (l *word[P, M]) convert(now int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, seen := l.cur.Load(), l.seen.Load()
	if p == seen {
		return
	}
	for {
		old := l.w.Load()
		next := M(p).carry(old, seen, now)
		if next == old {
			// Always change the word, so that a decision computed under
			// the old parameters cannot compare-and-swap after this.
			// One nanosecond earlier is in the caller's favour.
			next = old - 1
		}
		if l.w.CompareAndSwap(old, next) {
			break
		}
	}
	l.seen.Store(p)
}

// load returns the state in the current parameters.
func (l *word[P, M]) load(now int64) (int64, *P) {
	for {
		p := l.cur.Load()
		if p == l.seen.Load() {
			return l.w.Load(), p
		}
		l.convert(now)
	}
}

func (l *word[P, M]) policy() Policy { return M(l.cur.Load()).policy() }
