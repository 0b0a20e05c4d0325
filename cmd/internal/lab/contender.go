// Package lab runs the benchmark lab: for each scenario and each of its
// contenders it starts a fresh simulated backend, puts the contender in
// front of it, drives open-loop load through the contender's URL while
// polling the backend, the contender and their processes once a second,
// and writes the report (see package report). cmd/sluice-lab is its
// command line.
package lab

import (
	"context"
	"time"
)

// Contender is one way of standing between the load and the backend: all
// that the lab needs of it is a URL the load goes to, optional setup and
// teardown around the run, and optional figures to poll. Direct (nothing
// in between) and Command (any process the scenario describes, such as a
// proxy started with a config file) are the implementations; a new kind
// of contender implements this interface and nothing else changes.
type Contender interface {
	// Name is the contender's name in reports and file names.
	Name() string
	// Start readies the contender in front of the backend that env
	// describes and returns it running. ctx bounds the start only.
	Start(ctx context.Context, env Env) (Running, error)
}

// Running is a started contender.
type Running interface {
	// URL is the base URL the load is sent to (the scenario's path is
	// appended).
	URL() string
	// Sample returns the contender's own figures now. It is called once a
	// second from one goroutine and should answer within a few
	// milliseconds; figures it cannot read stay nil.
	Sample(ctx context.Context) Sample
	// Stop tears the contender down and reports a failure of the
	// contender itself (a crashed process), if any.
	Stop(ctx context.Context) error
}

// Sample is a contender's figures at one instant.
type Sample struct {
	Limit    *float64       // its concurrency limit
	Inflight *float64       // requests it has in flight
	Rate     *float64       // the token rate it manages, per second
	RSS      *int64         // resident memory of its processes, bytes
	CPU      *time.Duration // CPU its processes have used so far
}

// Env describes the backend a contender stands in front of, and where it
// may keep files.
type Env struct {
	Backend string // the backend's base URL, e.g. "http://127.0.0.1:40123"
	Dir     string // a scratch directory for this run (configs, logs); it exists
	// Vars are the placeholders a scenario's strings may use, as
	// {{name}}: dir, backend, backend_addr, port and admin_port (free
	// loopback ports picked for the contender), workers, capacity (C,
	// req/s, rounded), mean_ms (mean service time), slo (the scenario's,
	// as "300ms"), plus any the operator passed with -var (e.g. sluice,
	// the daemon's path). A contender's own vars come under these.
	Vars map[string]string
	// Defaults are placeholders that come under a contender's own vars
	// (Runner.Defaults: "sluice", the daemon's path, unless the contender
	// names its own).
	Defaults map[string]string
}
