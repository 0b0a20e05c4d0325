package configs

import "github.com/sluicehq/sluice/internal/durtext"

// Duration is a time.Duration written in TOML and JSON as a Go duration
// string such as "250ms", "2s" or "1m30s" (durtext.Duration: the one text
// form of a duration, which gate/spec's types are written in too). A bare
// number is refused: "250" could mean milliseconds or seconds, and a config
// is no place to guess.
//
// The zero value is 0s; what zero means (none, off, default) is documented on
// each field that holds a Duration.
type Duration = durtext.Duration
