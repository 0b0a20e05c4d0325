package limits

import (
	"sync/atomic"
	"time"
)

// cell is a single GCRA limiter (TokenBucket without warm-up, LeakyBucket,
// LeakyQueue). Its whole state is one word, the theoretical arrival time,
// updated by compare-and-swap: a decision loads the word, decides (a max,
// a multiplication, a comparison) and swaps the new instant in. A refusal,
// or a probe that leaves the state as it was, writes nothing. The Result is
// built after the swap, written field by field into the caller's variable
// (a Result returned by value through two calls was copied through memory
// in a way that cost a third of the decision).
//
// A swap fails only when another core changed the word meanwhile; the
// decisions then queue for a while (see contention). Uncontended, a
// decision takes no lock. (An earlier version always held a mutex, and
// this comment then recorded that a CAS loop measured slower; that
// benchmark drew every instant of both arms from one shared atomic
// counter, a contended line of its own. Measured with a clock per
// goroutine: BENCHMARKS.md.)
//
// Parameters are immutable and published with the word they are expressed
// in (cellState), so a decision never applies new parameters to a state
// built under old ones: see update and settle.
type cell struct {
	params[gcra] // cur is what Keyed shares; mu serialises update and settle
	st           atomic.Pointer[cellState]
	c            contention // when swaps fail
}

// cellState is the state word and the parameters it is expressed in. A
// setter publishes a new cellState whose word is unset; the first decision
// under it seals the previous word (no decision can swap into it any more)
// and carries its value over to the new parameters at that decision's
// instant, as the package documents for runtime changes.
type cellState struct {
	g    *gcra
	tat  atomic.Int64 // ns; or unset, or sealed (instants are never negative)
	from *cellState   // while unset: the state to carry over (guarded by cell.mu)
}

// The values of cellState.tat that are not instants.
const (
	unset  = -1 // published by a setter, not yet carried over
	sealed = -2 // superseded: its value has been carried over
)

func (l *cell) init(p *gcra) {
	l.cur.Store(p)
	l.st.Store(&cellState{g: p}) // tat 0: a full bucket, an empty queue
}

func (l *cell) allowAt(r *Result, now time.Time, n int64) {
	t := nanos(now)
	n = units(n)
	if !l.c.busy.Load() && l.try(r, t, n) {
		return
	}
	l.c.enter()
	for !l.try(r, t, n) {
		l.c.again()
	}
	l.c.leave()
}

// try makes one attempt at a decision: it returns false, writing nothing,
// if another decision changed the state meanwhile.
func (l *cell) try(r *Result, t, n int64) bool {
	s := l.st.Load()
	old := s.tat.Load()
	if old < 0 {
		l.settle(t)
		return false
	}
	p := s.g
	var next int64
	var ok bool
	if p.queue { // decide, inlined
		next, ok = p.decideQueue(old, t, n)
	} else {
		next, ok = p.decideBucket(old, t, n)
	}
	if next != old && !s.tat.CompareAndSwap(old, next) {
		return false
	}
	if ok && !p.queue {
		p.granted(r, next, t)
	} else {
		p.result(r, old, next, ok, t, n)
	}
	return true
}

// adjustAt charges n more units at now (n < 0 gives them back): see
// gcra.adjust.
func (l *cell) adjustAt(now time.Time, n int64) {
	t := nanos(now)
	for {
		s := l.st.Load()
		old := s.tat.Load()
		if old < 0 {
			l.settle(t)
			continue
		}
		if next := s.g.adjust(old, t, n); next == old || s.tat.CompareAndSwap(old, next) {
			return
		}
	}
}

// update publishes the parameters next derives from the current ones, with
// an unset state word that the next decision carries over.
func (l *cell) update(next func(cur *gcra) (*gcra, error)) error {
	return l.params.update(func(cur *gcra) (*gcra, error) {
		p, err := next(cur)
		if err != nil {
			return nil, err
		}
		// Called with mu held. Two changes with no decision between them
		// carry over once, from the last settled state.
		from := l.st.Load()
		if from.tat.Load() == unset {
			from = from.from
		}
		s := &cellState{g: p, from: from}
		s.tat.Store(unset)
		l.st.Store(s)
		return p, nil
	})
}

// settle carries the state over to the parameters last published, at now,
// if no decision has done it yet.
func (l *cell) settle(now int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.st.Load()
	if s.tat.Load() != unset {
		return
	}
	old := s.from.tat.Swap(sealed) // later swaps into it fail
	s.tat.Store(s.g.carry(old, s.from.g, now))
	s.from = nil
}

// load returns the state and the parameters it is expressed in, carrying it
// over at now if the parameters have changed.
func (l *cell) load(now int64) (int64, *gcra) {
	for {
		s := l.st.Load()
		if tat := s.tat.Load(); tat >= 0 {
			return tat, s.g
		}
		l.settle(now)
	}
}

func (l *cell) policy() Policy { return l.cur.Load().policy() }

func (l *cell) newStore(shards, maxKeys int) keyedStore {
	return newStore[int64, gcra](&l.cur, shards, maxKeys)
}
