package limits

import (
	"sync"
	"time"
)

// wordModel is a rate algorithm whose whole state is one int64 (the GCRA
// family). Deciding is split in two: decide, the few instructions that must
// see and update the state atomically, and result, which describes the
// decision afterwards, outside the lock.
type wordModel[P any] interface {
	*P
	// decide decides on n units at now from state w; it returns the new
	// state (w itself when nothing is consumed) and whether n is admitted.
	decide(w, now, n int64) (int64, bool)
	// result describes the decision (old state, new state, admitted).
	result(old, next int64, ok bool, now, n int64) Result
	// carry converts w, built under old, to these parameters at now.
	carry(w int64, old *P, now int64) int64
	policy() Policy
}

// word is a single limiter with a one-word state. Its mutex is held only
// for decide (a max, a multiplication, a comparison): under contention on
// two cores this measured faster than a compare-and-swap loop, whose
// retries repeat the work (see BenchmarkTokenBucketVsXRate).
type word[P any, M wordModel[P]] struct {
	params[P]
	mu   sync.Mutex
	seen *P // the parameters w is expressed in
	w    int64
}

func (l *word[P, M]) init(p *P) {
	l.cur.Store(p)
	l.seen = p
}

func (l *word[P, M]) allowAt(now time.Time, n int64) Result {
	t := nanos(now)
	n = units(n)
	l.mu.Lock()
	p := l.current(t)
	old := l.w
	next, ok := M(p).decide(old, t, n)
	l.w = next
	l.mu.Unlock()
	return M(p).result(old, next, ok, t, n)
}

// current returns the current parameters, carrying the state over to them
// if they changed. Call with mu held.
func (l *word[P, M]) current(now int64) *P {
	p := l.cur.Load()
	if p != l.seen {
		l.w = M(p).carry(l.w, l.seen, now)
		l.seen = p
	}
	return p
}

// load returns the state in the current parameters.
func (l *word[P, M]) load(now int64) (int64, *P) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.current(now)
	return l.w, p
}

func (l *word[P, M]) policy() Policy { return M(l.cur.Load()).policy() }
