package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a TOML string such as "250ms" or "2m".
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("want a duration such as \"250ms\" or \"2m\", got %q", b)
	}
	if v < 0 {
		return fmt.Errorf("duration must not be negative, got %q", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Bytes is a size: a whole number of bytes or one with a unit, "64KiB",
// "1MiB", "2GiB" (powers of 1024) or "64KB", "1MB" (powers of 1000).
type Bytes int64

var byteUnits = []struct {
	suffix string
	n      float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *Bytes) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	mult := 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.n
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || v*mult > 1<<40 {
		return fmt.Errorf("want a size such as \"4096\", \"64KiB\" or \"1MiB\" (at most 1TiB), got %q", text)
	}
	*b = Bytes(v * mult)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (b Bytes) MarshalText() ([]byte, error) { return []byte(strconv.FormatInt(int64(b), 10)), nil }

// Rate is an arrival rate: requests per second ("300"), or a multiple of
// the backend's capacity C at the start of the run ("1.4C").
type Rate struct {
	Value float64 // req/s, or the multiple of C when OfC
	OfC   bool
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Rate) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	ofC := strings.HasSuffix(s, "C")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "C"), 64)
	if err != nil || !(v >= 0 && v <= 1e6) {
		return fmt.Errorf("want a rate such as \"300\" (req/s) or \"1.4C\" (times the capacity), got %q", text)
	}
	*r = Rate{Value: v, OfC: ofC}
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// String returns the form UnmarshalText reads.
func (r Rate) String() string {
	s := strconv.FormatFloat(r.Value, 'g', -1, 64)
	if r.OfC {
		s += "C"
	}
	return s
}

// PerSecond resolves r against the capacity c.
func (r Rate) PerSecond(c float64) float64 {
	if r.OfC {
		return r.Value * c
	}
	return r.Value
}
