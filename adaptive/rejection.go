package adaptive

// RejectReason is why the gate turned a request away: the vocabulary of the
// data path (ARCHITECTURE.md), shown in the Sluice-Reason header, the metrics and the admin API.
type RejectReason uint8

// Rejection reasons. RejectNone is "admitted".
const (
	RejectNone RejectReason = iota
	// RejectRate: a token rate or window (static quota or the managed rate).
	RejectRate
	// RejectConcurrency: no slot free and no queue to wait in.
	RejectConcurrency
	// RejectQueueTimeout: waited for a slot longer than the queue's wait bound or
	// the request's deadline.
	RejectQueueTimeout
	// RejectQueueFull: the queue was full: it held its maximum of waiters,
	// or as many as will be served within the wait bound (the request was
	// refused on arrival, or pushed out at once by a later arrival served
	// before it: a higher priority, or a newer waiter under LIFO); or a
	// higher priority evicted the waiter.
	RejectQueueFull
	// RejectCPU: CPU beyond its target (ResourceGuard).
	RejectCPU
	// RejectMemory: memory beyond its target (ResourceGuard).
	RejectMemory
	// RejectPriority: the request's priority level is being shed (PriorityShedder).
	RejectPriority
	// RejectCircuitOpen: the upstream circuit breaker is open (proxy).
	RejectCircuitOpen
	// RejectFairShare: the group is at its limit and the request's key already
	// holds its fair share of slots (FairShare). Distinct from
	// RejectConcurrency so an operator can tell a greedy tenant from an
	// overloaded service.
	RejectFairShare
	// RejectStreams: the group holds its maximum of long-lived streams
	// (WebSocket, text/event-stream, gRPC; spec.Streams.Max) and the
	// request's answer would have opened one more. Not a signal of the
	// upstream's load: the law does not see it.
	RejectStreams

	numRejections
)

// NumRejections is the number of RejectReason values, RejectNone included: size of
// an array indexed by RejectReason.
const NumRejections = int(numRejections)

var rejectionNames = [...]string{
	RejectNone:         "",
	RejectRate:         "rate",
	RejectConcurrency:  "concurrency",
	RejectQueueTimeout: "queue_timeout",
	RejectQueueFull:    "queue_full",
	RejectCPU:          "cpu",
	RejectMemory:       "memory",
	RejectPriority:     "priority",
	RejectCircuitOpen:  "circuit_open",
	RejectFairShare:    "fair_share",
	RejectStreams:      "streams",
}

// String returns the reason's wire name ("queue_full"), "" for RejectNone.
func (r RejectReason) String() string {
	if int(r) < len(rejectionNames) {
		return rejectionNames[r]
	}
	return "unknown"
}
