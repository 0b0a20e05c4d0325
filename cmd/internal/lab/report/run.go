// Package report turns the lab's measurements into what people read: a
// JSON file per run, a markdown table per scenario (one row per contender)
// and PNG plots. Its figures are pure functions of the measurements.
package report

import (
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
	"github.com/sluicehq/sluice/cmd/internal/lab/load"
)

// Run is one contender's run of one scenario: the JSON file's content.
type Run struct {
	Scenario  string         `json:"scenario"`
	Contender string         `json:"contender"`
	Quick     bool           `json:"quick"`
	Started   time.Time      `json:"started"`
	Capacity  float64        `json:"capacity"` // the backend's C at the start, req/s
	SLO       time.Duration  `json:"slo"`
	Timeout   time.Duration  `json:"timeout"` // the clients' bound on each try
	Schedule  load.Schedule  `json:"schedule"`
	Params    backend.Params `json:"backend_params"`
	Skipped   string         `json:"skipped,omitempty"` // why the contender did not run
	Error     string         `json:"error,omitempty"`   // why the run failed part-way
	Notes     []string       `json:"notes,omitempty"`
	Metrics   Metrics        `json:"metrics"`
	Load      load.Result    `json:"load"`
	Backend   backend.Stats  `json:"backend"` // the backend's counters at the end
	Samples   []Sample       `json:"samples"` // polled once a second
}

// Sample is what was polled at one instant of a run. Pointers are nil
// where the figure is not known (a contender without metrics, a backend
// in the lab's own process).
type Sample struct {
	T              float64  `json:"t"`                  // seconds from the start of the load
	Limit          *float64 `json:"limit,omitempty"`    // the contender's concurrency limit
	Inflight       *float64 `json:"inflight,omitempty"` // the contender's in-flight count
	Rate           *float64 `json:"rate,omitempty"`     // the token rate the contender manages, per second
	ClientInflight int64    `json:"client_inflight"`    // tries the generator has in flight
	// Backend is the backend's own account; nil when it did not answer
	// within half a sampling period (an overloaded backend may not).
	Backend      *BackendSample `json:"backend,omitempty"`
	ContenderRSS *int64         `json:"contender_rss,omitempty"` // bytes
	ContenderCPU *float64       `json:"contender_cpu,omitempty"` // seconds used so far
	BackendRSS   *int64         `json:"backend_rss,omitempty"`
	BackendCPU   *float64       `json:"backend_cpu,omitempty"`
}

// BackendSample is the part of backend.Stats a Sample keeps.
type BackendSample struct {
	InService int64   `json:"in_service"`
	Queued    int     `json:"queued"`
	Capacity  float64 `json:"capacity"` // C now, req/s
	HeldBytes int64   `json:"held_bytes"`
	Crashes   uint64  `json:"crashes"`
}
