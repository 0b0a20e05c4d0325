package load

import (
	"time"
)

// Outcome kinds of a request (after its retries).
const (
	KindOK       = "ok"       // 2xx
	KindRejected = "rejected" // 429 or 503: shed by whatever stands in front of the backend, or by it
	// Errors:
	KindOverflow  = "overflow"  // the generator had no free slot: never sent (counted, never delayed)
	KindTimeout   = "timeout"   // no answer within the client timeout
	KindTransport = "transport" // connection refused, reset, ...
	KindStatus    = "status"    // any other status code
	KindCancelled = "cancelled" // the run was stopped
)

// Quantiles summarises a latency distribution, in milliseconds.
type Quantiles struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
}

// Counts are the outcomes of a set of requests. Offered = OK + Rejected +
// Errors always holds. An arrival that found no free slot for its first
// try is an overflow error and not Sent; one whose retry found none is
// Sent and an overflow error too.
type Counts struct {
	Offered  int64 `json:"offered"`  // arrivals (first tries)
	Sent     int64 `json:"sent"`     // arrivals whose first try went out
	Attempts int64 `json:"attempts"` // tries sent, retries included
	OK       int64 `json:"ok"`       // final 2xx
	Good     int64 `json:"good"`     // final 2xx within the SLO
	Rejected int64 `json:"rejected"` // final 429/503
	Errors   int64 `json:"errors"`   // final errors of every kind
}

// Totals are a whole run's figures.
type Totals struct {
	Counts
	ErrorsByKind    map[string]int64 `json:"errors_by_kind,omitempty"`
	RejectsByStatus map[int]int64    `json:"rejects_by_status,omitempty"` // final rejections by code
	RejectedTries   int64            `json:"rejected_tries"`              // every 429/503 answer, retried or not
	Latency         Quantiles        `json:"latency"`                     // of final 2xx, from the intended send instant
	RejectLatency   Quantiles        `json:"reject_latency"`              // of each 429/503 answer, from its try's send instant
}

// Class is the figures of one tenant or priority.
type Class struct {
	Name     string  `json:"name"`
	Fraction float64 `json:"fraction"` // of the arrivals, by the mix's weights
	Counts
	Latency Quantiles `json:"latency"`
	// RejectLatency is of each 429/503 answer to the class's tries, from
	// the try's send instant, as Totals.RejectLatency.
	RejectLatency Quantiles `json:"reject_latency"`
}

// PhaseResult is the figures of one phase of the schedule, by the intended
// send instant of each arrival.
type PhaseResult struct {
	Label string        `json:"label"`
	Start time.Duration `json:"start"`
	For   time.Duration `json:"for"`
	Counts
	Latency Quantiles `json:"latency"`
	// RejectLatency is of each 429/503 answer to a try of the phase's
	// arrivals, from the try's send instant, as Totals.RejectLatency.
	RejectLatency Quantiles `json:"reject_latency"`
}

// Second is one second of the run, by the intended send instant of each
// arrival (attempts by their own send instant).
type Second struct {
	T        int     `json:"t"`    // seconds from the start
	Rate     float64 `json:"rate"` // scheduled rate at the middle of the second, req/s
	Offered  int64   `json:"offered"`
	Attempts int64   `json:"attempts"`
	OK       int64   `json:"ok"`
	Good     int64   `json:"good"`
	Rejected int64   `json:"rejected"`
	Errors   int64   `json:"errors"`
	// Reasons counts the final rejections by the Sluice-Reason they
	// carried ("rate", "queue_timeout"), or by status ("503") without one.
	Reasons map[string]int64 `json:"reasons,omitempty"`
	P50     float64          `json:"p50_ms"` // of final 2xx
	P99     float64          `json:"p99_ms"`
}

// Result is what a run measured.
type Result struct {
	Start      time.Time     `json:"start"`
	Duration   time.Duration `json:"duration"` // the schedule's length
	SLO        time.Duration `json:"slo"`
	Totals     Totals        `json:"totals"`
	Phases     []PhaseResult `json:"phases"`
	Seconds    []Second      `json:"seconds"`
	Tenants    []Class       `json:"tenants,omitempty"`
	Priorities []Class       `json:"priorities,omitempty"`
	// DispatchLag is how late first tries left their intended instants: the
	// generator's own health. Latency is measured from the intended
	// instant either way, so lag never hides in the figures, but a large
	// one means the generator, not the server, limited the run.
	DispatchLag Quantiles `json:"dispatch_lag"`
}
