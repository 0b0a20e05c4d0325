package gate

import "time"

// Observer sees each admitted request as it finishes and each wait in a queue
// as it ends: the per-request figures a histogram needs, which the control
// loop's windows summarise away. The admin package's Prometheus histograms
// implement it; set it in Params.Observer.
//
// Its methods run on the hot path, on the goroutine that calls Done or waited
// in the queue, concurrently with each other: they must be safe for
// concurrent use, return quickly, and should not allocate. group is the name
// of the request's group, which stays the same across reloads.
type Observer interface {
	// ObserveDone is called by Pass.Done and DoneAfter with the request's
	// outcome, its upstream latency (queue wait excluded) as the control loop
	// records it, and wait, the time from its arrival at the gate to its slot
	// (a leaky_queue's pacing delay and the queue wait; 0 for a request that
	// found a slot at once). latency + wait is the request's time in sluice
	// from arrival to done.
	ObserveDone(group string, o Outcome, latency, wait time.Duration)
	// ObserveQueueWait is called when a request leaves the queue after
	// waiting wait: admitted, timed out, evicted, or gone with its client.
	ObserveQueueWait(group string, wait time.Duration)
}

// Overridable returns the key paths of the group fields that Override may
// change, as the TOML and JSON name them ("targets.latency",
// "concurrency.max"), in a fixed order. The admin API checks a PATCH body
// against it, so that a field that needs a reload is refused by name.
func Overridable() []string {
	out := make([]string, len(overridable))
	for i, f := range overridable {
		out[i] = f.path
	}
	return out
}
