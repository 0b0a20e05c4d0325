package admin

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/probe"
)

// history keeps the last points of every group and of the resources, sampled
// from the gate's read-outs at a fixed interval, so the dashboard shows the
// last minutes however long it has been open. Its memory is fixed: a ring of
// n points per series; a group's rings go when the group goes.
//
// Rates (admitted, dropped, rejected per second) are differences of the
// gate's cumulative counters between two points, divided by the time
// between them; they are NaN (null in JSON) at a group's first point and
// where a counter went back (a group rebuilt from zero).
type history struct {
	mu     sync.Mutex
	n      int       // points kept
	head   int       // index of the next point
	count  int       // points held, up to n
	times  []int64   // unix milliseconds
	cpu    []float64 // resources.CPU, NaN when unknown
	memory []float64
	groups map[string]*groupHistory
	order  []string // the groups in match order, at the last point
	prevAt time.Time
}

// groupHistory is one group's rings, indexed like history.times.
type groupHistory struct {
	law       string
	quantile  float64
	cols      [numCols][]float64
	byReason  [adaptive.NumRejections][]float64
	prev      counts
	prevKnown bool
}

// The columns of a group, in the order of colNames.
const (
	colLimit = iota
	colInFlight
	colQueued
	colP50
	colP99
	colLatencyTarget
	colAdmitted
	colDropped
	colRejected
	colTokenRate
	colCPUTarget
	colMemoryTarget
	numCols
)

var colNames = [numCols]string{"limit", "in_flight", "queued", "p50", "p99", "latency_target",
	"admitted", "dropped", "rejected", "token_rate", "cpu_target", "memory_target"}

// counts are the cumulative counters rates are taken from.
type counts struct {
	completed uint64 // successes and drops
	dropped   uint64
	rejected  [adaptive.NumRejections]uint64
}

func newHistory(n int) *history {
	return &history{
		n:      n,
		times:  make([]int64, n),
		cpu:    nanRing(n),
		memory: nanRing(n),
		groups: map[string]*groupHistory{},
	}
}

func nanRing(n int) []float64 {
	r := make([]float64, n)
	for i := range r {
		r[i] = math.NaN()
	}
	return r
}

func newGroupHistory(n int) *groupHistory {
	gh := &groupHistory{}
	for i := range gh.cols {
		gh.cols[i] = nanRing(n)
	}
	for i := range gh.byReason {
		gh.byReason[i] = nanRing(n)
	}
	return gh
}

// sample adds a point at now from g's read-outs.
func (h *history) sample(now time.Time, g Gate) {
	sts := g.Groups()
	gs := g.Status()
	res, off := gs.Resources, switchedOffIn(gs)
	cfg := g.Config()

	h.mu.Lock()
	defer h.mu.Unlock()
	dt := now.Sub(h.prevAt).Seconds()
	if h.prevAt.IsZero() {
		dt = 0
	}
	i := h.head
	h.times[i] = now.UnixMilli()
	h.cpu[i] = signalValue(res.CPU)
	h.memory[i] = signalValue(res.Memory)

	seen := make(map[string]bool, len(sts))
	h.order = h.order[:0]
	for _, st := range sts {
		seen[st.Name] = true
		h.order = append(h.order, st.Name)
		gh := h.groups[st.Name]
		if gh == nil {
			gh = newGroupHistory(h.n)
			h.groups[st.Name] = gh
		}
		gh.law = string(st.Law)
		c := &gh.cols
		c[colLimit][i] = float64(st.Limit)
		c[colInFlight][i] = float64(st.InFlight)
		c[colQueued][i] = float64(st.Queued)
		c[colP50][i], c[colP99][i] = math.NaN(), math.NaN()
		if st.Latency.Successes > 0 {
			c[colP50][i], c[colP99][i] = st.Latency.P50.Seconds(), st.Latency.P99.Seconds()
		}
		c[colTokenRate][i] = math.NaN()
		if st.TokenRate > 0 {
			c[colTokenRate][i] = st.TokenRate
		}
		c[colLatencyTarget][i], c[colCPUTarget][i], c[colMemoryTarget][i] = math.NaN(), math.NaN(), math.NaN()
		if gc := cfg.Group(st.Name); gc != nil {
			gh.quantile = gc.Targets.Quantile
			c[colLatencyTarget][i] = orNaN(time.Duration(gc.Targets.Latency).Seconds())
			c[colCPUTarget][i] = orNaN(off.apply(gc.Targets.CPU, off.cpu))
			c[colMemoryTarget][i] = orNaN(off.apply(gc.Targets.Memory, off.memory))
		}
		gh.rates(i, st, dt)
	}
	for name := range h.groups {
		if !seen[name] {
			delete(h.groups, name)
		}
	}
	h.head = (i + 1) % h.n
	h.count = min(h.count+1, h.n)
	h.prevAt = now
}

// rates fills the rate columns of point i from st's counters and the
// previous point's, dt seconds before.
func (gh *groupHistory) rates(i int, st gate.GroupStatus, dt float64) {
	cur := counts{completed: st.Completed[gate.Success] + st.Completed[gate.Dropped], dropped: st.Completed[gate.Dropped], rejected: st.Rejected}
	prev, known := gh.prev, gh.prevKnown && dt > 0
	gh.prev, gh.prevKnown = cur, true
	rate := func(now, before uint64) float64 {
		if !known || now < before {
			return math.NaN()
		}
		return float64(now-before) / dt
	}
	c := &gh.cols
	c[colAdmitted][i] = rate(cur.completed, prev.completed)
	c[colDropped][i] = rate(cur.dropped, prev.dropped)
	var total, totalPrev uint64
	for r := 1; r < adaptive.NumRejections; r++ {
		gh.byReason[r][i] = rate(cur.rejected[r], prev.rejected[r])
		total += cur.rejected[r]
		totalPrev += prev.rejected[r]
	}
	c[colRejected][i] = rate(total, totalPrev)
}

func signalValue(s probe.Signal) float64 {
	if !s.Known {
		return math.NaN()
	}
	return s.Value
}

func orNaN(x float64) float64 {
	if x <= 0 {
		return math.NaN()
	}
	return x
}

// view returns the points after since (unix milliseconds; 0 for all).
func (h *history) view(since int64, interval time.Duration) api.History {
	h.mu.Lock()
	defer h.mu.Unlock()
	var idx []int
	for k := range h.count {
		i := (h.head - h.count + k + h.n) % h.n
		if h.times[i] > since {
			idx = append(idx, i)
		}
	}
	pick := func(ring []float64) api.Series {
		s := make(api.Series, len(idx))
		for k, i := range idx {
			s[k] = ring[i]
		}
		return s
	}
	v := api.History{Interval: interval.Seconds(), Capacity: h.n, Time: make([]int64, len(idx)),
		CPU: pick(h.cpu), Memory: pick(h.memory), Groups: make([]api.GroupSeries, 0, len(h.order))}
	for k, i := range idx {
		v.Time[k] = h.times[i]
	}
	for _, name := range h.order {
		gh := h.groups[name]
		gs := api.GroupSeries{Name: name, Law: gh.law, Quantile: gh.quantile,
			Series: make(map[string]api.Series, numCols), RejectedByReason: map[string]api.Series{}}
		for c, ring := range gh.cols {
			gs.Series[colNames[c]] = pick(ring)
		}
		for r := 1; r < adaptive.NumRejections; r++ {
			if s := pick(gh.byReason[r]); anyPositive(s) {
				gs.RejectedByReason[adaptive.RejectReason(r).String()] = s
			}
		}
		v.Groups = append(v.Groups, gs)
	}
	return v
}

// anyPositive reports whether any figure of s is above 0.
func anyPositive(s api.Series) bool {
	for _, x := range s {
		if x > 0 {
			return true
		}
	}
	return false
}

func (s *Server) getHistory(w http.ResponseWriter, r *http.Request) {
	var since int64
	if q := r.URL.Query().Get("since"); q != "" {
		n, err := strconv.ParseInt(q, 10, 64)
		if err != nil {
			e := errorf(http.StatusBadRequest, "admin: since must be an instant in unix milliseconds, got "+strconv.Quote(q))
			e.Field = "since"
			writeError(w, e)
			return
		}
		since = n
	}
	writeCompact(w, http.StatusOK, s.history.view(since, s.p.HistoryInterval))
}
