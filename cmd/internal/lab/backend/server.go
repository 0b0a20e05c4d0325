package backend

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Paths the backend serves besides the simulated work (every other path).
const (
	StatsPath = "/_lab/stats" // GET: Stats as JSON
	ResetPath = "/_lab/reset" // POST: zero the counters and restart the schedule
)

// Headers the backend reads for accounting only; they never change how a
// request is served.
const (
	TenantHeader   = "X-Tenant"
	PriorityHeader = "X-Priority"
	// ReasonHeader names why the backend itself answered 503 ("queue_full").
	ReasonHeader = "X-Lab-Reason"
)

// Server is the simulated backend: an http.Handler with a known capacity
// C = W / mean service time (see pool). Each request waits in a FIFO queue
// for one of W workers, then takes a service time drawn from the
// distribution, scaled by the current slowdown.
//
// Tolerance: in sleep mode a response leaves at most the timer slack of the
// runtime late (typically 50 µs–1 ms on Linux), but that slack is not
// carried over to the next request on the same worker, so throughput under
// saturation is W / mean to within sampling noise. In CPU mode a request
// burns its service time as CPU time of its thread, so it takes longer when
// the cores are shared.
//
// A Server is safe for concurrent use. Close stops its schedule.
type Server struct {
	p    Params
	pool *pool
	body []byte

	mu     sync.Mutex // guards start, timers and crash
	start  time.Time
	timers []*time.Timer
	// startNs is start in Unix ns, for the stalls of the hot path.
	startNs atomic.Int64

	slowdown  atomic.Uint64 // float64 bits
	workers   atomic.Int64
	epoch     atomic.Uint64 // bumped by every crash
	downUntil atomic.Int64  // unix ns; the backend refuses work before it
	held      atomic.Int64  // bytes held by queued requests
	peakHeld  atomic.Int64
	inService atomic.Int64

	served, queueFull, crashes, aborted, abandoned atomic.Uint64
	classes                                        classCounter

	// changed, when set (by tests, before serving), is called after a
	// request enters the queue, starts its service or leaves the queue
	// abandoned, and after a scheduled change.
	changed func()
}

// New returns a Server for p, with its schedule started now.
func New(p Params) (*Server, error) {
	if errs := p.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p = p.WithDefaults()
	s := &Server{p: p, body: make([]byte, p.ResponseBytes)}
	copy(s.body, "ok\n")
	s.pool = newPool(p.Workers, p.Queue, time.Now())
	s.Reset()
	return s, nil
}

// Params returns the server's parameters with defaults filled in.
func (s *Server) Params() Params { return s.p }

// Reset zeroes the counters, restores the base workers and latency and
// restarts the schedule of changes from now.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.timers {
		t.Stop()
	}
	s.timers = s.timers[:0]
	now := time.Now()
	s.start = now
	s.startNs.Store(now.UnixNano())
	s.apply(Change{Workers: s.p.Workers, Slowdown: 1}, now)
	for _, c := range s.p.Changes {
		s.timers = append(s.timers, time.AfterFunc(c.At, func() {
			s.apply(c, time.Now())
			s.notify()
		}))
	}
	for _, c := range []*atomic.Uint64{&s.served, &s.queueFull, &s.crashes, &s.aborted, &s.abandoned} {
		c.Store(0)
	}
	s.peakHeld.Store(s.held.Load())
	s.classes.reset()
}

// Close stops the schedule. It does not close connections; the http.Server
// serving s does that.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.timers {
		t.Stop()
	}
	s.timers = nil
}

func (s *Server) apply(c Change, now time.Time) {
	if c.Workers != 0 {
		s.workers.Store(int64(c.Workers))
		s.pool.resize(c.Workers, now)
	}
	if c.Slowdown != 0 {
		s.slowdown.Store(math.Float64bits(c.Slowdown))
	}
}

// ServeHTTP serves StatsPath, ResetPath and, on every other path, one unit
// of simulated work.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case StatsPath:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Stats())
		return
	case ResetPath:
		if r.Method != http.MethodPost {
			http.Error(w, "backend: reset takes POST", http.StatusMethodNotAllowed)
			return
		}
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.work(w, r)
}

func (s *Server) work(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	_, _ = io.Copy(io.Discard, r.Body)
	epoch := s.epoch.Load()
	if arrival.UnixNano() < s.downUntil.Load() {
		s.abort()
	}
	freeAt, wt, err := s.pool.enter()
	if err != nil {
		s.queueFull.Add(1)
		w.Header().Set(ReasonHeader, "queue_full")
		http.Error(w, "backend: queue full", http.StatusServiceUnavailable)
		return
	}
	if wt != nil {
		s.notify()
		var ok bool
		if freeAt, ok = s.queue(r, wt); !ok {
			return
		}
	}
	s.inService.Add(1)
	s.notify()
	var end time.Time
	if s.p.CPU {
		burnCPU(s.serviceTime())
		end = time.Now()
	} else {
		start := arrival
		if freeAt.After(start) {
			start = freeAt
		}
		end = s.serviceEnd(start, s.serviceTime())
		if d := time.Until(end); d > 0 {
			time.Sleep(d)
		}
	}
	s.inService.Add(-1)
	s.pool.leave(end)
	if s.epoch.Load() != epoch {
		s.abort()
	}
	s.served.Add(1)
	s.classes.count(r.Header.Get(TenantHeader), r.Header.Get(PriorityHeader))
	w.Header().Set("Content-Length", strconv.Itoa(len(s.body)))
	_, _ = w.Write(s.body)
}

// queue holds the request's memory while it waits for a worker and returns
// the granted slot's freeAt; false means the request is over (crash or
// abandoned) and has been answered.
func (s *Server) queue(r *http.Request, wt *waiter) (time.Time, bool) {
	buf := s.hold()
	defer s.release(buf)
	var g grant
	if s.p.DropAbandoned {
		select {
		case g = <-wt.grant:
		case <-r.Context().Done():
			if s.pool.abandon(wt) {
				s.abandoned.Add(1)
				s.notify()
				return time.Time{}, false
			}
			g = <-wt.grant
		}
	} else {
		g = <-wt.grant
	}
	if g.err != nil {
		s.abort()
	}
	return g.freeAt, true
}

// hold allocates and touches the per-queued-request memory, or crashes the
// backend if that would pass the memory limit.
func (s *Server) hold() []byte {
	n := s.p.QueuedMemory
	if n == 0 {
		return nil
	}
	if s.held.Add(n) > s.p.MemoryLimit {
		s.held.Add(-n)
		s.crash()
		return nil
	}
	for {
		peak := s.peakHeld.Load()
		if h := s.held.Load(); h <= peak || s.peakHeld.CompareAndSwap(peak, h) {
			break
		}
	}
	buf := make([]byte, n)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1 // touch every page so it counts in RSS
	}
	return buf
}

func (s *Server) release(buf []byte) {
	if buf != nil {
		s.held.Add(-int64(len(buf)))
		runtime.KeepAlive(buf)
	}
}

// crash simulates running out of memory: every queued request fails, the
// ones in service fail when they finish, and the backend refuses work for
// RestartDelay. Its memory goes back to the OS as a restarted process's
// would.
func (s *Server) crash() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.UnixNano() < s.downUntil.Load() {
		return // already down
	}
	s.crashes.Add(1)
	s.epoch.Add(1)
	s.downUntil.Store(now.Add(s.p.RestartDelay).UnixNano())
	s.pool.failAll()
	time.AfterFunc(100*time.Millisecond, debug.FreeOSMemory)
}

// abort ends the request with a closed connection, as a crashed process
// would.
func (s *Server) abort() {
	s.aborted.Add(1)
	panic(http.ErrAbortHandler)
}

func (s *Server) notify() {
	if s.changed != nil {
		s.changed()
	}
}

// serviceEnd is when service of the given length that starts at start ends,
// the schedule's stalls included.
func (s *Server) serviceEnd(start time.Time, d time.Duration) time.Time {
	if !s.p.Stall.On() {
		return start.Add(d)
	}
	t0 := time.Unix(0, s.startNs.Load())
	return t0.Add(s.p.Stall.End(start.Sub(t0), d))
}

func (s *Server) serviceTime() time.Duration {
	return time.Duration(float64(s.p.Service.Sample(nil)) * math.Float64frombits(s.slowdown.Load()))
}
