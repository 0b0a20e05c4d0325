package probe

import (
	"context"
	"errors"
	"fmt"

	"github.com/shirou/gopsutil/v3/cpu"
	"github.com/shirou/gopsutil/v3/mem"
	"github.com/shirou/gopsutil/v3/process"
)

// Host and process figures come from gopsutil v3, given a context that
// points it at Root's /proc and /sys. CPU utilisation is computed here from
// successive cpu.Times readings on the Sampler's own tick: gopsutil's
// Percent(0) keeps its previous reading in package-level state shared by
// every caller.

// guard turns a panic inside gopsutil, whose parsers index fields of files
// they trust, into an error: a malformed file must not crash the daemon.
func guard(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("gopsutil panicked on malformed input: %v", p)
	}
}

// hostCPUTimes returns busy and total CPU seconds of all CPUs since boot.
// Busy is everything but idle and iowait; guest time is left out of the
// total because /proc/stat already counts it in user (proc(5)).
func hostCPUTimes(ctx context.Context) (busy, total float64, err error) {
	defer guard(&err)
	ts, err := cpu.TimesWithContext(ctx, false)
	if err != nil {
		return 0, 0, err
	}
	if len(ts) == 0 {
		return 0, 0, errors.New("no cpu line in /proc/stat")
	}
	t := ts[0]
	total = t.User + t.Nice + t.System + t.Idle + t.Iowait + t.Irq + t.Softirq + t.Steal
	return total - t.Idle - t.Iowait, total, nil
}

// hostCPUCount returns the number of logical CPUs.
func hostCPUCount(ctx context.Context) (n int, err error) {
	defer guard(&err)
	return cpu.CountsWithContext(ctx, true)
}

// hostMemory returns MemAvailable and MemTotal in bytes.
func hostMemory(ctx context.Context) (avail, total uint64, err error) {
	defer guard(&err)
	vm, err := mem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return 0, 0, err
	}
	if vm.Total == 0 {
		return 0, 0, errors.New("no MemTotal in /proc/meminfo")
	}
	return min(vm.Available, vm.Total), vm.Total, nil
}

// processCPU returns a process's user+system CPU seconds since it started.
func processCPU(ctx context.Context, p *process.Process) (secs float64, err error) {
	defer guard(&err)
	t, err := p.TimesWithContext(ctx)
	if err != nil {
		return 0, err
	}
	return t.User + t.System, nil
}

// processRSS returns a process's resident set size in bytes.
func processRSS(ctx context.Context, p *process.Process) (rss uint64, err error) {
	defer guard(&err)
	m, err := p.MemoryInfoWithContext(ctx)
	if err != nil {
		return 0, err
	}
	return m.RSS, nil
}
