package limits

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
	window[logState, slParams, *slParams]
}

// NewSlidingLog returns an exact sliding-window limiter.
func NewSlidingLog(p WindowParams) (*SlidingLog, error) {
	return newWindow[SlidingLog](&slParams{p})
}

// logState is a ring of (instant, units) entries, oldest at head.
type logState struct {
	buf   []logEntry
	head  int
	size  int
	total int64
	debt  debt // what corrections charged beyond the limit
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

// pop takes up to m units out of the newest entries.
func (s *logState) pop(m int64) {
	for m > 0 && s.size > 0 {
		e := s.at(s.size - 1)
		d := min(e.n, m)
		e.n, s.total, m = e.n-d, s.total-d, m-d
		if e.n == 0 {
			*e = logEntry{}
			s.size--
		}
	}
}

type slParams struct{ WindowParams }

func (p *slParams) allow(s *logState, now, n int64) Result { return decide(p, p.Limit, s, now, n) }

func (p *slParams) advance(s *logState, now, _ int64) (int64, int64, bool) {
	if s.size > 0 {
		now = max(now, s.newest())
	}
	s.expire(now - int64(p.Window))
	return now, p.Limit - s.total, s.debt != 0
}

func (p *slParams) take(s *logState, at, n int64) { s.push(at, n) }

// wait is until the oldest entries holding the excess have expired.
func (p *slParams) wait(s *logState, now, n int64) int64 {
	excess := s.total + n - p.Limit
	for i := 0; i < s.size; i++ {
		e := s.at(i)
		if excess -= e.n; excess <= 0 {
			return e.at + int64(p.Window) - now
		}
	}
	return 0 // not reached: n <= Limit, so the log holds the excess
}

func (p *slParams) reset(s *logState, now int64) int64 {
	if s.size == 0 {
		return 0
	}
	return s.newest() + int64(p.Window) - now
}

func (p *slParams) idle(s *logState, now int64) bool {
	return s.debt == 0 && (s.size == 0 || s.newest() <= now-int64(p.Window))
}

func (p *slParams) owed(s *logState) *debt { return &s.debt }

func (p *slParams) give(s *logState, _, m int64) { s.pop(m) }

func (p *slParams) adjustState(s *logState, now, n int64) { adjustWindow(p, s, now, n) }

func (p *slParams) adopt(*logState, *slParams, int64) {}

var slidingLogAlgorithm = Algorithm{
	Name: "sliding_log", Doc: "keeps a timestamp per request; exact, memory grows with the limit",
	Shape: ShapeWindow, Adjusts: true, FreshAfter: windowFresh,
	New: func(s Spec) (Limiter, error) { return NewSlidingLog(WindowParams{Limit: s.Limit, Window: s.Window}) },
}
