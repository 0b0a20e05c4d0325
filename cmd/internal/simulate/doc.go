// Package simulate turns what an operator has — a sluice config and a
// description of a service and its load — into runs of the deterministic
// simulator (adaptive/sim): the model behind "sluice simulate".
//
// A Workload is the service and the load: the backend, the open-loop
// clients, their priority and tenant mix, the phases and the SLO, with the
// policy left out. It comes from a lab scenario (cmd/internal/lab's TOML, the
// shipped ones by name: FromLab), from a simulator scenario file (the text
// form of adaptive/sim: FromSimFile), or from a few numbers (Service, Load).
//
// ForGroup then puts one group of the config in charge: its law and bounds,
// targets, queue, rate, priority and fair share, the control interval and
// the circuit breaker, as the daemon builds them. What the simulator does
// not model of the config or of the workload is never dropped silently: each
// such thing is a Note, which the command prints.
//
// Everything here is pure: no clock, no goroutines, no files but the one
// FromSimFile reads.
package simulate
