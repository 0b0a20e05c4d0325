package limits

import (
	"sync"
	"sync/atomic"
	"time"
)

// model is one rate algorithm: immutable parameters P (used through the
// pointer type M) and a pure step over a small per-limiter (or per-key) state
// S. The zero S is the fresh state. Every exported rate type and Keyed run
// the same model code, so a single limiter and one key of a Keyed limiter
// decide identically.
type model[S, P any] interface {
	*P
	// allow decides on n units at now and updates s when they are admitted.
	allow(s *S, now, n int64) Result
	// idle reports whether s behaves exactly like the fresh state from now
	// on, so that forgetting it changes no decision.
	idle(s *S, now int64) bool
	// adopt carries s, built under the parameters old, over to these
	// parameters at instant now (the semantics each algorithm documents).
	adopt(s *S, old *P, now int64)
	// policy describes the quota.
	policy() Policy
}

// params holds a limiter's current parameters and serialises setters. The
// pointer is swapped atomically; a *P is never modified once published.
type params[P any] struct {
	cur atomic.Pointer[P]
	mu  sync.Mutex // serialises read-modify-write in update
}

// update publishes the parameters next derives from the current ones, or
// returns next's error and publishes nothing.
func (ps *params[P]) update(next func(cur *P) (*P, error)) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, err := next(ps.cur.Load())
	if err != nil {
		return err
	}
	ps.cur.Store(p)
	return nil
}

// single is one limiter: the shared parameters plus one state under a mutex.
type single[S, P any, M model[S, P]] struct {
	params[P]
	mu   sync.Mutex
	seen *P // the parameters s is expressed in
	s    S
}

func (l *single[S, P, M]) init(p *P) {
	l.cur.Store(p)
	l.seen = p
}

func (l *single[S, P, M]) allowAt(now time.Time, n int64) Result {
	t := nanos(now)
	n = units(n)
	l.mu.Lock()
	r := l.current(t).allow(&l.s, t, n)
	l.mu.Unlock()
	return r
}

// current returns the parameters in force, with the state carried over to
// them at t if they changed since it last saw them. Called with mu held.
func (l *single[S, P, M]) current(t int64) M {
	p := l.cur.Load()
	if p != l.seen {
		M(p).adopt(&l.s, l.seen, t)
		l.seen = p
	}
	return M(p)
}

func (l *single[S, P, M]) policy() Policy { return M(l.cur.Load()).policy() }

// newStore builds the per-key store Keyed uses with this limiter's model and
// (shared) parameters.
func (l *single[S, P, M]) newStore(shards, maxKeys int) keyedStore {
	return newStore[S, P, M](&l.cur, shards, maxKeys)
}
