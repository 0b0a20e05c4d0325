// Package spec is the plain description of what a gate runs: its groups of
// requests and their settings, in Go types (time.Duration, ratios, counts),
// with no file format attached. Package gate runs a Config; package configs
// converts the TOML schema into one. gate re-exports these types (gate.Config,
// gate.Group, ...), so a library user need not import spec.
//
// The zero value of a field means its documented default, which
// Group.WithDefaults fills in; the gate applies it to every group it is
// given. Where zero means "off" (a target, the CoDel target, a queue of 0),
// that is the default. The rules of matching (Match.Matches) live here too,
// so that the gate routes and configs checks for unreachable groups by the
// same code.
//
// Everything here is a plain value: safe to read from many goroutines, not
// to mutate while others read it.
package spec
