package configs

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/check"
)

// Duration is a time.Duration written in TOML and JSON as a Go duration
// string such as "250ms", "2s" or "1m30s". A bare number is refused: "250"
// could mean milliseconds or seconds, and a config is no place to guess.
//
// The zero value is 0s; what zero means (none, off, default) is documented on
// each field that holds a Duration.
type Duration time.Duration

// String formats d without the zero tails time.Duration.String adds, so one
// minute is "1m" rather than "1m0s". The result parses back to d.
func (d Duration) String() string { return check.Dur(time.Duration(d)) }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. It accepts what
// time.ParseDuration accepts, and nothing else.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := parseDuration(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// parseDuration wraps time.ParseDuration with a message an operator can act
// on: a number without a unit is the common mistake.
func parseDuration(s string) (Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: write a number with a unit, such as \"250ms\" or \"2s\"", s)
	}
	return Duration(v), nil
}
