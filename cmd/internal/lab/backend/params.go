package backend

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/pause"
)

// Defaults for the zero fields of Params. They suit a 2-core machine that
// also runs the proxy and the load generator: C = 16 / 40 ms = 400 req/s,
// so 3×C = 1200 req/s stays well below what loopback and the generator push.
const (
	DefaultWorkers      = 16
	DefaultMemoryLimit  = 1 << 30 // 1 GiB of queued-request memory before a simulated crash
	DefaultRestartDelay = time.Second
	maxWorkers          = 100000
)

// DefaultService is the service-time distribution of a zero Params.
var DefaultService = Dist{Kind: Exponential, Mean: 40 * time.Millisecond}

// Params configures a Server. Zero fields mean the default.
type Params struct {
	Workers int  `json:"workers,omitempty"` // W, the worker pool size; zero: DefaultWorkers
	Service Dist `json:"service,omitempty"` // service-time distribution; zero: DefaultService
	// Queue bounds the requests waiting for a worker; beyond it the backend
	// answers 503 at once. Zero: unbounded.
	Queue int `json:"queue,omitempty"`
	// QueuedMemory is the number of bytes a request holds (allocated and
	// touched, so it counts in RSS) while it waits for a worker. Zero: none.
	QueuedMemory int64 `json:"queued_memory,omitempty"`
	// MemoryLimit is the queued-request memory beyond which the backend
	// "runs out of memory": it crashes (every queued and in-service request
	// fails with a closed connection) and is down for RestartDelay. Zero:
	// DefaultMemoryLimit. Only meaningful with QueuedMemory.
	MemoryLimit int64 `json:"memory_limit,omitempty"`
	// RestartDelay is how long the backend stays down after a crash. Zero:
	// DefaultRestartDelay.
	RestartDelay time.Duration `json:"restart_delay,omitempty"`
	// CPU makes a request burn its service time as CPU time of its thread
	// instead of sleeping; capacity is then bounded by the cores as well:
	// C = min(W, cores) / mean.
	CPU bool `json:"cpu,omitempty"`
	// DropAbandoned takes a queued request out of the queue when its client
	// goes away. By default the backend, like most thread-pool servers,
	// does not notice and serves it anyway (wasted work).
	DropAbandoned bool `json:"drop_abandoned,omitempty"`
	// ResponseBytes is the size of a successful response body. Zero: 3
	// bytes ("ok\n").
	ResponseBytes int `json:"response_bytes,omitempty"`
	// Changes alter workers or latency on a schedule, counted from the
	// backend's start or its last reset.
	Changes []Change `json:"changes,omitempty"`
	// Stall pauses every worker periodically, counted like Changes: no
	// request makes progress during a pause (one in service resumes where
	// it was when the pause ends), as in a stop-the-world collection.
	// Zero: never. Not with CPU.
	Stall pause.Periodic `json:"stall,omitzero"`
}

// WithDefaults returns p with zero fields filled in.
func (p Params) WithDefaults() Params {
	if p.Workers == 0 {
		p.Workers = DefaultWorkers
	}
	if p.Service.Kind == "" && p.Service.Mean == 0 {
		p.Service = DefaultService
	}
	if p.MemoryLimit == 0 {
		p.MemoryLimit = DefaultMemoryLimit
	}
	if p.RestartDelay == 0 {
		p.RestartDelay = DefaultRestartDelay
	}
	if p.ResponseBytes == 0 {
		p.ResponseBytes = 3
	}
	return p
}

// Validate returns every problem with p (after defaults).
func (p Params) Validate() []error {
	p = p.WithDefaults()
	var errs []error
	if p.Workers < 1 || p.Workers > maxWorkers {
		errs = append(errs, fmt.Errorf("backend: workers must be in [1,%d], got %d", maxWorkers, p.Workers))
	}
	errs = append(errs, p.Service.Validate()...)
	if p.Queue < 0 {
		errs = append(errs, fmt.Errorf("backend: queue must not be negative, got %d", p.Queue))
	}
	if p.QueuedMemory < 0 || p.QueuedMemory > 1<<30 {
		errs = append(errs, fmt.Errorf("backend: queued memory must be in [0,1GiB], got %d", p.QueuedMemory))
	}
	if p.MemoryLimit < 0 {
		errs = append(errs, fmt.Errorf("backend: memory limit must not be negative, got %d", p.MemoryLimit))
	}
	if p.RestartDelay < 0 {
		errs = append(errs, fmt.Errorf("backend: restart delay must not be negative, got %v", p.RestartDelay))
	}
	if p.ResponseBytes < 0 || p.ResponseBytes > 64<<20 {
		errs = append(errs, fmt.Errorf("backend: response bytes must be in [0,64MiB], got %d", p.ResponseBytes))
	}
	for _, c := range p.Changes {
		errs = append(errs, c.validate()...)
	}
	if err := p.Stall.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("backend: stall: %w", err))
	}
	if p.Stall.On() && p.CPU {
		errs = append(errs, fmt.Errorf("backend: stall is not modelled with cpu = true"))
	}
	return errs
}

// Capacity is the model's capacity C = W / mean service time in requests
// per second, at the start of the schedule (before any Change). In CPU mode
// the machine's cores bound it further.
func (p Params) Capacity() float64 {
	p = p.WithDefaults()
	return float64(p.Workers) / p.Service.MeanTime().Seconds()
}

// CapacityAt is C after the schedule's changes up to elapsed; once stalls
// have begun, averaged over their period (C × the share not paused).
func (p Params) CapacityAt(elapsed time.Duration) float64 {
	p = p.WithDefaults()
	s := settingsAt(settings{workers: p.Workers, slowdown: 1}, p.Changes, elapsed)
	c := float64(s.workers) / (p.Service.MeanTime().Seconds() * s.slowdown)
	if p.Stall.On() && elapsed >= p.Stall.From {
		c *= 1 - p.Stall.Share()
	}
	return c
}
