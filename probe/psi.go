package probe

import (
	"bytes"
	"errors"
	"fmt"
)

// psi is one pressure file, /proc/pressure/{cpu,memory} or a cgroup's
// {cpu,memory}.pressure: the share of wall time, over the last 10 s, in which
// some (or all non-idle) tasks were stalled on the resource. The kernel
// prints percentages; these are fractions, 0–1. hasFull is false on kernels
// that print no "full" line for CPU (before 5.13).
type psi struct {
	some, full float64
	hasFull    bool
}

// parsePSI parses a pressure file (Documentation/accounting/psi.rst):
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
func parsePSI(data []byte) (psi, error) {
	var p psi
	hasSome := false
	for n, line := range lines(data) {
		kind, rest := field(line)
		avg10, err := psiAvg10(rest)
		if err != nil {
			return psi{}, fmt.Errorf("line %d: %w", n, err)
		}
		switch string(kind) {
		case "some":
			p.some, hasSome = avg10, true
		case "full":
			p.full, p.hasFull = avg10, true
		default:
			return psi{}, fmt.Errorf("line %d: want \"some\" or \"full\", got %.40q", n, kind)
		}
	}
	if !hasSome {
		return psi{}, errors.New("no \"some\" line")
	}
	return p, nil
}

// psiAvg10 finds avg10=… among the key=value fields of a PSI line and returns
// it as a fraction.
func psiAvg10(fields []byte) (float64, error) {
	for len(fields) > 0 {
		var kv []byte
		kv, fields = field(fields)
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if !ok {
			return 0, fmt.Errorf("want key=value, got %.40q", kv)
		}
		if string(k) != "avg10" {
			continue
		}
		pct, err := parseDecimal(v)
		if err != nil {
			return 0, fmt.Errorf("avg10: %w", err)
		}
		if pct > 100 {
			return 0, fmt.Errorf("avg10 %v is over 100%%", pct)
		}
		return pct / 100, nil
	}
	return 0, errors.New("no avg10")
}
