package limits

import (
	"sync"
	"time"
)

// cell is a single GCRA limiter (TokenBucket without warm-up, LeakyBucket,
// LeakyQueue). Its mutex is held only for gcra.decide (a max, a
// multiplication, a comparison); the Result is built after releasing it.
// Under contention on two cores this measured faster than a
// compare-and-swap loop, whose retries repeat the work, and the concrete
// (non-generic) calls inline.
type cell struct {
	params[gcra]
	mu   sync.Mutex
	seen *gcra // the parameters tat is expressed in
	tat  int64
}

func (l *cell) init(p *gcra) {
	l.cur.Store(p)
	l.seen = p
}

func (l *cell) allowAt(now time.Time, n int64) Result {
	t := nanos(now)
	n = units(n)
	l.mu.Lock()
	p := l.cur.Load()
	if p != l.seen {
		l.convert(p, t)
	}
	old := l.tat
	var next int64
	var ok bool
	if p.queue { // decide, inlined
		next, ok = p.decideQueue(old, t, n)
	} else {
		next, ok = p.decideBucket(old, t, n)
	}
	l.tat = next
	l.mu.Unlock()
	return p.result(old, next, ok, t, n)
}

// convert carries the state over to new parameters p. Call with mu held.
func (l *cell) convert(p *gcra, now int64) {
	l.tat = p.carry(l.tat, l.seen, now)
	l.seen = p
}

// load returns the state in the current parameters.
func (l *cell) load(now int64) (int64, *gcra) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.cur.Load()
	if p != l.seen {
		l.convert(p, now)
	}
	return l.tat, p
}

func (l *cell) policy() Policy { return l.cur.Load().policy() }

func (l *cell) newStore(shards, maxKeys int) keyedStore {
	return newStore[int64, gcra](&l.cur, shards, maxKeys)
}
