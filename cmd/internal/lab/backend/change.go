package backend

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Change alters the backend's capacity or latency at an offset from the
// start of its schedule (the backend's start, or its last reset). Zero
// fields leave that setting as it was.
type Change struct {
	At       time.Duration `json:"at"`                 // offset from the schedule's start
	Workers  int           `json:"workers,omitempty"`  // new worker count; 0: unchanged
	Slowdown float64       `json:"slowdown,omitempty"` // service-time multiplier relative to the base distribution; 0: unchanged
}

// ParseChange parses "AT:key=value,key=value" with keys workers and slow,
// e.g. "30s:slow=2" or "1m:workers=8,slow=1".
func ParseChange(s string) (Change, error) {
	at, rest, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || rest == "" {
		return Change{}, fmt.Errorf("backend: change %q: want AT:key=value[,key=value] (keys workers, slow)", s)
	}
	var c Change
	var err error
	if c.At, err = time.ParseDuration(at); err != nil {
		return Change{}, fmt.Errorf("backend: change %q: at: %v", s, err)
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.TrimSpace(k) {
		case "workers":
			if c.Workers, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return Change{}, fmt.Errorf("backend: change %q: workers: %v", s, err)
			}
		case "slow":
			if c.Slowdown, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
				return Change{}, fmt.Errorf("backend: change %q: slow: %v", s, err)
			}
		default:
			return Change{}, fmt.Errorf("backend: change %q: unknown key %q (want workers or slow)", s, k)
		}
	}
	if errs := c.validate(); len(errs) > 0 {
		return Change{}, fmt.Errorf("backend: change %q: %v", s, errs[0])
	}
	return c, nil
}

func (c Change) validate() []error {
	var errs []error
	if c.At < 0 {
		errs = append(errs, fmt.Errorf("backend: change at %v: offset must not be negative", c.At))
	}
	if c.Workers < 0 || c.Workers > maxWorkers {
		errs = append(errs, fmt.Errorf("backend: change at %v: workers must be in [1,%d], got %d", c.At, maxWorkers, c.Workers))
	}
	if c.Slowdown < 0 || c.Slowdown > 1000 {
		errs = append(errs, fmt.Errorf("backend: change at %v: slow must be in (0,1000], got %v", c.At, c.Slowdown))
	}
	if c.Workers == 0 && c.Slowdown == 0 {
		errs = append(errs, fmt.Errorf("backend: change at %v changes nothing (set workers or slow)", c.At))
	}
	return errs
}

// String returns the form ParseChange reads.
func (c Change) String() string {
	var kv []string
	if c.Workers != 0 {
		kv = append(kv, "workers="+strconv.Itoa(c.Workers))
	}
	if c.Slowdown != 0 {
		kv = append(kv, "slow="+strconv.FormatFloat(c.Slowdown, 'g', -1, 64))
	}
	return c.At.String() + ":" + strings.Join(kv, ",")
}

// settings is what the schedule says at one instant.
type settings struct {
	workers  int
	slowdown float64
}

// settingsAt applies, in order of At, every change with At <= elapsed to
// base. changes need not be sorted.
func settingsAt(base settings, changes []Change, elapsed time.Duration) settings {
	sorted := slices.Clone(changes)
	slices.SortStableFunc(sorted, func(a, b Change) int { return cmp.Compare(a.At, b.At) })
	s := base
	for _, c := range sorted {
		if c.At > elapsed {
			break
		}
		if c.Workers != 0 {
			s.workers = c.Workers
		}
		if c.Slowdown != 0 {
			s.slowdown = c.Slowdown
		}
	}
	return s
}
