// Package sim is a deterministic, event-driven simulator for trying control
// laws and shedding policies offline, before they guard anything real.
//
// A run is a Scenario (usually parsed from a text file, see ParseScenario) and
// a control law; Run returns a Report. Time is virtual: events (arrivals,
// completions, timeouts, control ticks) are processed in time order from a heap
// and a few time-ordered queues, with no goroutines and no per-millisecond
// stepping, so an hour of 1,000 req/s takes about a second of CPU. Every random
// draw comes from math/rand/v2 PCG streams seeded by Scenario.Seed, so a run is
// reproducible bit for bit.
//
// # The model
//
// The backend is a pool of Service.Workers fed from an unbounded FIFO queue,
// with exponential, lognormal, bimodal or constant service times, optional
// contention, a slowdown factor and a worker count that can change over time,
// outages (every request fails), CPU per busy worker and memory per request
// held (in the backend) and per waiter (in the gate's queue). A CPU-bound
// backend (Service.Cores) instead shares its cores with a CPU hog's threads by
// processor sharing weighted by nice level, and reports its CPU (the host's
// or its own) and its CPU pressure, as PSI's avg10 or per interval. Clients are open loop: new requests arrive as a Poisson process whose
// rate follows the load profile (constant, step, ramp, spike, sine segments in
// multiples of capacity) regardless of how the service copes, so overload is
// real; each has a priority and a tenant drawn from the scenario's mix, gives up
// after Clients.Timeout (a drop: the gate slot is released, as a proxy
// cancelling the call does, but the backend keeps working on it) and retries
// failures, honouring Retry-After or not.
//
// The gate model stands for the real gate: it composes the adaptive
// package's pieces exactly as the daemon must (see gate.go for the order of the
// checks and the queue's semantics: slots that are never overshot, a bounded
// queue served highest priority first, FIFO or LIFO within a priority, a full
// queue evicting its lowest-priority newest waiter, per-waiter wait bounds). Each
// control interval it fills an adaptive.Sample the way probe and the gate do
// (latency quantiles of the interval's successes, counted in the daemon's own
// histogram, internal/hist; a 30 s min RTT; CPU averaged over the interval;
// memory at the tick) and feeds the law, QueueWait, ResourceGuard and
// PriorityShedder. The admission traces of testdata/conformance, which the
// real gate runs too, check that both decide alike (TestConformance). The
// proxy's circuit breaker can stand in front of the gate (Gate.Breaker); the
// traces do not cover it, since the gate has none.
//
// # The report
//
// Report gives, per phase of the scenario: offered load, goodput (successes
// within the SLO per second), admitted p50/p99/p99.9 end to end, reject and drop
// rates, rejections by reason, the limit's range, steady mean, coefficient of
// variation and overshoot, convergence time, peak memory and CPU, and outcomes
// per priority and per tenant; Report.Series has every control interval and
// Report.Window sums up any stretch of it, by completion time and, for the
// lateness of attempts, by the time they were sent (as the lab counts).
package sim
