// Package configs is sluice's configuration: the TOML schema, its defaults,
// and validation that reports every problem at once, each with its key path
// and line.
//
// # Loading
//
// [Load] (a file) and [Parse] (bytes) run three steps and return either a
// complete, valid *[Config] or every problem found:
//
//  1. decode: the TOML is parsed into a generic tree, then copied onto a
//     Config that starts with the static defaults ([New]; [NewGroup] for
//     each [[group]]). Unknown keys, values of the wrong type and malformed
//     durations are recorded, and decoding goes on.
//  2. defaults: [Config.SetDefaults] fills the values that depend on others
//     (an adaptive law's initial limit, a bucket's burst, per-key bounds)
//     and appends the catch-all group.
//  3. validate: [Config.Validate] checks ranges and the rules between
//     fields and between groups.
//
// A TOML syntax error stops the parser, so it is reported alone.
//
// # The gate's types
//
// The gate runs plain Go types of its own (package gate/spec), and a
// [[group]] decodes into them: a group is a [spec.Group], with its
// [spec.Rate], [spec.Targets], [spec.Queue] and the rest, whose toml tags
// are the file's keys (their durations are time.Duration, written as
// text, "250ms", in the file, the effective config and the admin API's
// JSON). This package gives them no second name. [Config.Gate] hands the
// groups to the gate with the settings they share. The defaults a file
// shares with the library (bounds, quantile, waits, key bounds) and the
// rules of matching are the gate's, read from there: each is written once.
//
// # Errors
//
// Problems come as an [Errors], a list of [*Error] ordered by line, each
// printed as
//
//	FILE:LINE: PATH: MESSAGE
//	sluice.toml:14: group[1].rate.burst: must be ≥ cost (5), got 2
//	sluice.toml:7: group[0].concurency: unknown key (did you mean "concurrency"?)
//
// PATH is the full key path with array indexes. LINE is the line of the key
// or, for a value that comes from a default, of its table; it is left out
// when not known (a config built in Go or changed at runtime). Durations are
// strings such as "250ms"; a bare number where a duration belongs is an
// error naming the key.
//
// # Groups and routing
//
// Requests are matched against the groups in order ([spec.Match.Matches]); the
// first match takes the request. A group that an earlier group's match
// covers ([spec.Match.Covers]) can never be reached and is an error naming both.
// A request that no group of the file matches goes to the catch-all group
// "default", which SetDefaults appends with default settings unless the
// file ends with a group of its own that matches everything.
//
// # Runtime changes
//
// The admin API changes a group by decoding a JSON body (the same names as
// the TOML; durations as strings) onto a copy of the group (spec.Group.Clone)
// and passing the result to [Config.ReplaceGroup], which checks the whole
// new config as the file is checked. [ValidateGroup] checks one group
// alone.
//
// # Files
//
// default.toml is the embedded default ([Default], [DefaultFile]); the
// examples directory holds commented configs for a Kubernetes sidecar,
// per-tenant API quotas and a gRPC service.
//
// The package imports only the standard library and the TOML decoder.
// Its values are plain data: safe for concurrent reads, not for concurrent
// writes.
package configs
