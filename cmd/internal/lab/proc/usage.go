package proc

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Usage is what a process group uses, summed over its live members.
type Usage struct {
	RSS   int64         // resident memory now, bytes
	HWM   int64         // the largest member's peak RSS (VmHWM), bytes
	CPU   time.Duration // user + system time consumed so far
	Procs int           // members found
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat.
// It is 100 on every Linux architecture Go supports.
const clockTicks = 100

// GroupUsage reads /proc for the members of process group pgid.
func GroupUsage(pgid int) (Usage, error) {
	return groupUsage("/proc", pgid)
}

func groupUsage(root string, pgid int) (Usage, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return Usage{}, fmt.Errorf("proc: %w", err)
	}
	var u Usage
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(root, e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		st, err := parseStat(stat)
		if err != nil || st.pgrp != pgid {
			continue
		}
		status, err := os.ReadFile(filepath.Join(root, e.Name(), "status"))
		if err != nil {
			continue
		}
		rss, hwm := parseStatus(status)
		u.Procs++
		u.RSS += rss
		u.HWM = max(u.HWM, hwm)
		u.CPU += st.cpu
	}
	if u.Procs == 0 {
		return u, fmt.Errorf("proc: no process in group %d", pgid)
	}
	return u, nil
}

type stat struct {
	pgrp int
	cpu  time.Duration
}

// parseStat reads pgrp (field 5) and utime + stime (fields 14, 15) of
// /proc/PID/stat (proc(5)). The command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseStat(b []byte) (stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, errors.New("proc: stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return stat{}, errors.New("proc: stat: too few fields")
	}
	pgrp, err1 := strconv.Atoi(f[2])
	ut, err2 := strconv.ParseUint(f[11], 10, 64)
	st, err3 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return stat{}, fmt.Errorf("proc: stat: %w", err)
	}
	const tick = time.Second / clockTicks
	if ut > math.MaxInt64/uint64(tick)/2 || st > math.MaxInt64/uint64(tick)/2 {
		return stat{}, errors.New("proc: stat: cpu time out of range")
	}
	return stat{pgrp: pgrp, cpu: time.Duration(ut+st) * tick}, nil
}

// parseStatus reads VmRSS and VmHWM (kB) of /proc/PID/status; 0 if absent
// (kernel threads, zombies).
func parseStatus(b []byte) (rss, hwm int64) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if k == "VmRSS" {
			rss = n << 10
		} else {
			hwm = n << 10
		}
	}
	return rss, hwm
}
