package limits

import "time"

// SlidingLog is the exact sliding window: it logs the instant of every
// admitted request and admits a request only if the units logged in the last
// Window (the half-open span (now-Window, now]) plus n stay within Limit. No
// span of length Window ever holds more than Limit units. Memory is O(the
// admitted requests in a window): 16 bytes per distinct instant, at most
// Limit entries.
//
// Result fields: Limit is Limit; Remaining is Limit minus the units in the
// window; RetryAfter the time until enough logged units expire for n to fit;
// ResetAfter the time until the newest entry expires. n > Limit is never
// allowed (RetryAfter = InfDuration). An instant earlier than the newest
// entry is treated as that entry's instant (no time passing).
//
// SetLimit and SetWindow apply at once to the log (nothing is lost: the log
// holds instants, not counts). Safe for concurrent use.
type SlidingLog struct {
	l single[logState, slParams, *slParams]
}

// NewSlidingLog returns an exact sliding-window limiter.
func NewSlidingLog(p WindowParams) (*SlidingLog, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	w := &SlidingLog{}
	w.l.init(&slParams{p})
	return w, nil
}

// AllowAt decides on a request of n units at now.
func (w *SlidingLog) AllowAt(now time.Time, n int64) Result { return w.l.allowAt(now, n) }

// Allow is AllowAt(time.Now(), n).
func (w *SlidingLog) Allow(n int64) Result { return w.l.allowAt(time.Now(), n) }

// Policy is Limit per Window.
func (w *SlidingLog) Policy() Policy { return w.l.policy() }

// Params returns the current parameters.
func (w *SlidingLog) Params() WindowParams { return w.l.cur.Load().WindowParams }

// SetLimit changes N.
func (w *SlidingLog) SetLimit(n int64) error {
	return w.l.update(func(cur *slParams) (*slParams, error) {
		p := *cur
		p.Limit = n
		return &p, p.Validate()
	})
}

// SetWindow changes t.
func (w *SlidingLog) SetWindow(d time.Duration) error {
	return w.l.update(func(cur *slParams) (*slParams, error) {
		p := *cur
		p.Window = d
		return &p, p.Validate()
	})
}

func (w *SlidingLog) newStore(shards, maxKeys int) keyedStore {
	return w.l.newStore(shards, maxKeys)
}

// logState is a ring of (instant, units) entries, oldest at head.
type logState struct {
	buf   []logEntry
	head  int
	size  int
	total int64
}

type logEntry struct{ at, n int64 }

func (s *logState) at(i int) *logEntry { return &s.buf[(s.head+i)%len(s.buf)] }

func (s *logState) newest() int64 { return s.at(s.size - 1).at }

// expire drops the entries at or before cutoff.
func (s *logState) expire(cutoff int64) {
	for s.size > 0 && s.buf[s.head].at <= cutoff {
		s.total -= s.buf[s.head].n
		s.buf[s.head] = logEntry{}
		s.head = (s.head + 1) % len(s.buf)
		s.size--
	}
}

func (s *logState) push(at, n int64) {
	if s.size > 0 && s.newest() == at {
		s.at(s.size - 1).n += n
	} else {
		if s.size == len(s.buf) {
			grown := make([]logEntry, max(4, 2*len(s.buf)))
			for i := 0; i < s.size; i++ {
				grown[i] = *s.at(i)
			}
			s.buf, s.head = grown, 0
		}
		s.size++
		*s.at(s.size - 1) = logEntry{at, n}
	}
	s.total += n
}

type slParams struct{ WindowParams }

func (p *slParams) allow(s *logState, now, n int64) Result {
	if s.size > 0 {
		now = max(now, s.newest())
	}
	t := int64(p.Window)
	s.expire(now - t)
	r := Result{Limit: p.Limit}
	switch {
	case n == 0:
		r.Allowed = true
	case n > p.Limit:
		r.RetryAfter = InfDuration
	case s.total+n <= p.Limit:
		r.Allowed = true
		s.push(now, n)
	default:
		excess := s.total + n - p.Limit
		for i := 0; i < s.size; i++ {
			e := s.at(i)
			if excess -= e.n; excess <= 0 {
				r.RetryAfter = span(e.at + t - now)
				break
			}
		}
	}
	r.Remaining = max(0, p.Limit-s.total)
	if s.size > 0 {
		r.ResetAfter = span(s.newest() + t - now)
	}
	return r
}

func (p *slParams) idle(s *logState, now int64) bool {
	return s.size == 0 || s.newest() <= now-int64(p.Window)
}

func (p *slParams) adopt(*logState, *slParams, int64) {}

func (p *slParams) policy() Policy { return p.WindowParams.policy() }
