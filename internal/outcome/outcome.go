// Package outcome is how a unit of work that sluice admitted ended, as the
// control loop reads it: the one enum that package gate (gate.Outcome) and
// the permit service's Go client (permitclient.Outcome) both name, so that
// a client library need not link the gate to say it.
package outcome

// Outcome is how an admitted unit of work ended.
type Outcome uint8

const (
	// Success: the work was done (a proxied request: the upstream answered
	// 1xx, 2xx or 3xx); its latency is a sample for the law.
	Success Outcome = iota
	// Dropped: it failed in a way that signals overload (a 5xx, a timeout,
	// a connection error, the resource refused). No latency sample.
	Dropped
	// Ignored: no signal (the client cancelled or gave up, a 4xx, bad
	// input, a panic).
	Ignored
)

var names = [...]string{"success", "dropped", "ignored"}

// String returns "success", "dropped" or "ignored" ("unknown" for any
// other value).
func (o Outcome) String() string {
	if int(o) < len(names) {
		return names[o]
	}
	return "unknown"
}
