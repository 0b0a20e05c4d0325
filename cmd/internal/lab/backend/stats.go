package backend

import (
	"math"
	"sync"
	"time"
)

// Stats is the backend's own account of itself, served at StatsPath.
// Counters run from the last reset.
type Stats struct {
	Uptime        float64           `json:"uptime_seconds"` // since the schedule (re)started
	Workers       int               `json:"workers"`        // W now
	Slowdown      float64           `json:"slowdown"`       // service-time multiplier now
	Capacity      float64           `json:"capacity"`       // the model's C now, req/s (sleep mode)
	InService     int64             `json:"in_service"`
	Queued        int               `json:"queued"`
	Served        uint64            `json:"served"`     // answered 200
	QueueFull     uint64            `json:"queue_full"` // answered 503: queue at its bound
	Crashes       uint64            `json:"crashes"`    // simulated out-of-memory crashes
	Aborted       uint64            `json:"aborted"`    // connections closed by a crash or while down
	Abandoned     uint64            `json:"abandoned"`  // left the queue because the client went away
	HeldBytes     int64             `json:"held_bytes"` // memory held by queued requests now
	PeakHeldBytes int64             `json:"peak_held_bytes"`
	ByTenant      map[string]uint64 `json:"served_by_tenant,omitempty"`
	ByPriority    map[string]uint64 `json:"served_by_priority,omitempty"`
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	start := s.start
	s.mu.Unlock()
	_, _, queued := s.pool.counts()
	st := Stats{
		Uptime:        time.Since(start).Seconds(),
		Workers:       int(s.workers.Load()),
		Slowdown:      math.Float64frombits(s.slowdown.Load()),
		InService:     s.inService.Load(),
		Queued:        queued,
		Served:        s.served.Load(),
		QueueFull:     s.queueFull.Load(),
		Crashes:       s.crashes.Load(),
		Aborted:       s.aborted.Load(),
		Abandoned:     s.abandoned.Load(),
		HeldBytes:     s.held.Load(),
		PeakHeldBytes: s.peakHeld.Load(),
	}
	st.Capacity = float64(st.Workers) / (s.p.Service.MeanTime().Seconds() * st.Slowdown)
	st.ByTenant, st.ByPriority = s.classes.snapshot()
	return st
}

// maxClasses bounds the distinct tenant (and priority) names counted; the
// rest are counted as "other", so a hostile header cannot grow memory.
const maxClasses = 64

// classCounter counts served requests per tenant and per priority.
type classCounter struct {
	mu       sync.Mutex
	tenant   map[string]uint64
	priority map[string]uint64
}

func (c *classCounter) count(tenant, priority string) {
	if tenant == "" && priority == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tenant == nil {
		c.tenant, c.priority = map[string]uint64{}, map[string]uint64{}
	}
	bump(c.tenant, tenant)
	bump(c.priority, priority)
}

func bump(m map[string]uint64, name string) {
	if name == "" {
		return
	}
	if _, ok := m[name]; !ok && len(m) >= maxClasses {
		name = "other"
	}
	m[name]++
}

func (c *classCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tenant, c.priority = nil, nil
}

func (c *classCounter) snapshot() (tenant, priority map[string]uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clone := func(m map[string]uint64) map[string]uint64 {
		if len(m) == 0 {
			return nil
		}
		out := make(map[string]uint64, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	return clone(c.tenant), clone(c.priority)
}
