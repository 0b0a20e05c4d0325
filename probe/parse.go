package probe

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"math"
)

// Parsers for the small text files of cgroup v2 and procfs. The formats are
// those of the kernel's Documentation/admin-guide/cgroup-v2.rst ("Interface
// Files": flat keyed, nested keyed, single value) and proc(5). Every parser
// takes untrusted bytes: it returns an error for anything malformed, never
// panics (each has a fuzz target), and does not allocate unless it fails.

var errEmpty = errors.New("empty file")

// nextLine splits data at the first newline.
func nextLine(data []byte) (line, rest []byte) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i], data[i+1:]
	}
	return data, nil
}

// lines yields the lines of data that hold more than white space, each
// with its number (from 1) and without its newline.
func lines(data []byte) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		for n := 1; len(data) > 0; n++ {
			var line []byte
			line, data = nextLine(data)
			if len(bytes.TrimSpace(line)) != 0 && !yield(n, line) {
				return
			}
		}
	}
}

// field splits s at the first run of spaces or tabs.
func field(s []byte) (first, rest []byte) {
	s = bytes.TrimLeft(s, " \t")
	i := bytes.IndexAny(s, " \t")
	if i < 0 {
		return s, nil
	}
	return s[:i], bytes.TrimLeft(s[i:], " \t")
}

// parseUint parses a decimal unsigned integer.
func parseUint(b []byte) (uint64, error) {
	if len(b) == 0 {
		return 0, errors.New("empty number")
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not a number: %.40q", b)
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, fmt.Errorf("number out of range: %.40q", b)
		}
		n = n*10 + d
	}
	return n, nil
}

// parseDecimal parses a non-negative decimal such as "12.34", the form PSI
// averages are printed in.
func parseDecimal(b []byte) (float64, error) {
	ip, fp, dot := bytes.Cut(b, []byte{'.'})
	i, err := parseUint(ip)
	if err != nil {
		return 0, err
	}
	if !dot {
		return float64(i), nil
	}
	if len(fp) > 18 {
		fp = fp[:18] // beyond float64's precision anyway
	}
	f, err := parseUint(fp)
	if err != nil {
		return 0, err
	}
	return float64(i) + float64(f)/math.Pow10(len(fp)), nil
}

// parseSingle parses a single-value file that may hold "max", such as
// memory.max or memory.current. unlimited is true for "max".
func parseSingle(data []byte) (v uint64, unlimited bool, err error) {
	line, rest := nextLine(data)
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return 0, false, errEmpty
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return 0, false, errors.New("more than one line")
	}
	if string(line) == "max" {
		return 0, true, nil
	}
	v, err = parseUint(line)
	return v, false, err
}

// parseCPUMax parses cpu.max, "$MAX $PERIOD" in microseconds, $MAX being
// "max" for no quota. quota is 0 when there is none.
func parseCPUMax(data []byte) (quota, period uint64, err error) {
	line, rest := nextLine(data)
	if len(bytes.TrimSpace(rest)) != 0 {
		return 0, 0, errors.New("more than one line")
	}
	q, line := field(line)
	p, line := field(line)
	if len(q) == 0 {
		return 0, 0, errEmpty
	}
	if len(p) == 0 || len(bytes.TrimSpace(line)) != 0 {
		return 0, 0, fmt.Errorf("want \"$MAX $PERIOD\", got %.40q", data)
	}
	if period, err = parseUint(p); err != nil {
		return 0, 0, err
	}
	if period == 0 {
		return 0, 0, errors.New("period is 0")
	}
	if string(q) == "max" {
		return 0, period, nil
	}
	if quota, err = parseUint(q); err != nil {
		return 0, 0, err
	}
	if quota == 0 {
		return 0, 0, errors.New("quota is 0")
	}
	return quota, period, nil
}

// parseKeyed reads a flat-keyed file ("key value" lines, such as cpu.stat
// and memory.stat), setting out[i] to the value of keys[i] and bit i of found
// when that key is present. Every line must have exactly two fields; values
// of the keys asked for must be unsigned integers.
func parseKeyed(data []byte, keys []string, out []uint64) (found uint64, err error) {
	for n, line := range lines(data) {
		k, rest := field(line)
		v, rest := field(rest)
		if len(v) == 0 || len(bytes.TrimSpace(rest)) != 0 {
			return 0, fmt.Errorf("line %d: want \"key value\", got %.40q", n, line)
		}
		for i, key := range keys {
			if string(k) == key {
				if out[i], err = parseUint(v); err != nil {
					return 0, fmt.Errorf("line %d: %s: %w", n, key, err)
				}
				found |= 1 << uint(i)
			}
		}
	}
	return found, nil
}

// parseCPUList counts the CPUs in a list such as "0-3,8,10-11", the format of
// cpuset.cpus.effective.
func parseCPUList(data []byte) (int, error) {
	line, rest := nextLine(data)
	line = bytes.TrimSpace(line)
	if len(bytes.TrimSpace(rest)) != 0 {
		return 0, errors.New("more than one line")
	}
	if len(line) == 0 {
		return 0, errEmpty
	}
	const maxCPU = 1 << 20
	n := 0
	for len(line) > 0 {
		var part []byte
		part, line, _ = bytes.Cut(line, []byte{','})
		a, b, isRange := bytes.Cut(part, []byte{'-'})
		lo, err := parseUint(a)
		if err != nil {
			return 0, err
		}
		hi := lo
		if isRange {
			if hi, err = parseUint(b); err != nil {
				return 0, err
			}
		}
		if hi < lo || hi >= maxCPU {
			return 0, fmt.Errorf("bad CPU range %.40q", part)
		}
		n += int(hi - lo + 1)
		if n > maxCPU {
			return 0, errors.New("too many CPUs")
		}
	}
	return n, nil
}

var errNotANumber = errors.New("not a number")

// parseCFSQuota parses cgroup v1's cpu.cfs_quota_us: a quota in microseconds
// per period, or -1 for none (quota 0).
func parseCFSQuota(data []byte) (quota uint64, err error) {
	line, rest := nextLine(data)
	line = bytes.TrimSpace(line)
	switch {
	case len(bytes.TrimSpace(rest)) != 0:
		return 0, errors.New("more than one line")
	case len(line) == 0:
		return 0, errEmpty
	case string(line) == "-1":
		return 0, nil
	}
	if quota, err = parseUint(line); err != nil {
		return 0, err
	}
	if quota == 0 {
		return 0, errors.New("quota is 0")
	}
	return quota, nil
}

// parseStatusCPUs counts the CPUs in the Cpus_allowed_list line of
// /proc/<pid>/status (proc(5)): the CPUs the process may run on, its
// affinity as narrowed by its cpuset.
func parseStatusCPUs(data []byte) (int, error) {
	for len(data) > 0 {
		var line []byte
		line, data = nextLine(data)
		if v, ok := bytes.CutPrefix(line, []byte("Cpus_allowed_list:")); ok {
			return parseCPUList(v)
		}
	}
	return 0, errors.New("no Cpus_allowed_list line")
}

// parseHoldsOthers reports whether a cgroup.procs file (one process ID a
// line) lists any process but self.
func parseHoldsOthers(data []byte, self int) (bool, error) {
	for n, line := range lines(data) {
		line = bytes.TrimSpace(line)
		pid, err := parseUint(line)
		if err != nil {
			return false, fmt.Errorf("line %d: %w", n, err)
		}
		if pid != uint64(self) {
			return true, nil
		}
	}
	return false, nil
}
