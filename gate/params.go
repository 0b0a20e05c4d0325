package gate

import "github.com/sluicehq/sluice/gate/spec"

// The plain types of a gate's configuration, from package gate/spec (where
// configs can convert into them without importing gate): see there for
// each field, its unit and its default.
type (
	// Config is what a gate runs: its groups and the settings they share.
	Config = spec.Config
	// Group is a class of requests with its own limits.
	Group = spec.Group
	// Match selects the requests of a group.
	Match = spec.Match
	// Concurrency is a group's concurrency limit and its law.
	Concurrency = spec.Concurrency
	// Targets are what a group's limit keeps the service inside.
	Targets = spec.Targets
	// Queue is where a group's requests wait for a slot.
	Queue = spec.Queue
	// Rate is a group's static rate limit.
	Rate = spec.Rate
)

// The names of a Group's settings.
type (
	KeySource = spec.KeySource // where a group's key comes from
	Priority  = spec.Priority  // a fixed Level, or "header:NAME"
	Level     = spec.Level     // critical, default, sheddable
	Law       = spec.Law       // a concurrency control law
	Algorithm = spec.Algorithm // a rate limiting algorithm
	Scope     = spec.Scope     // where a rate quota lives
	Order     = spec.Order     // a queue discipline
	Mode      = spec.Mode      // enforce, or shadow: count what would be refused, admit it
)
