package configs

import "github.com/sluicehq/sluice/gate/spec"

// KeySource says which part of a request tells clients apart for a per-key
// rate limit: "none", "ip", "path" or "header:NAME"; the gate's
// (spec.KeySource, whose Check this package's validation applies).
type KeySource = spec.KeySource

// Key sources other than "header:NAME" (see [KeyHeader]).
const (
	KeyNone = spec.KeyNone
	KeyIP   = spec.KeyIP
	KeyPath = spec.KeyPath
)

// KeyHeader returns the KeySource "header:NAME".
func KeyHeader(name string) KeySource { return spec.KeyHeader(name) }

// Level is a request priority: "critical", "default" or "sheddable". Under
// overload the lowest level present is shed first. It is the gate's
// (spec.Level, with its Rank).
type Level = spec.Level

// Levels, from most to least important.
const (
	LevelCritical  = spec.LevelCritical
	LevelDefault   = spec.LevelDefault
	LevelSheddable = spec.LevelSheddable
)

// Priority is a group's priority: a fixed Level for every request, or
// "header:NAME" to read the level of each request from header NAME (with
// the group's DefaultPriority when missing or unknown); the gate's
// (spec.Priority). Clients can set such a header themselves: strip or
// overwrite it at your edge.
type Priority = spec.Priority

// PriorityHeader returns the Priority "header:NAME".
func PriorityHeader(name string) Priority { return spec.PriorityHeader(name) }

// checkHeaderName accepts an HTTP field name (spec.CheckHeaderName).
func checkHeaderName(name string) error { return spec.CheckHeaderName(name) }

// canonicalHeader returns the canonical form of a valid header name and
// leaves anything else as it is, for Validate to report.
func canonicalHeader(name string) string { return spec.CanonicalHeader(name) }
