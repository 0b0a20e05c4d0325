package probe

import "time"

// Resources is one Sample of everything a Sampler watches. It is a plain
// value owned by the caller. Ratios are 0–1; CPU ratios are clamped to it
// (a cgroup bursting past its quota reads 1).
type Resources struct {
	// Time is the instant passed to Sample.
	Time time.Time

	// CPU is the CPU utilisation of what is guarded: the cgroup's against its
	// limit when it has one (Cgroup.CPULimit is known), else the host's.
	// CPUFrom says which: FromCgroup or FromHost.
	CPU     Signal
	CPUFrom string
	// Memory is the memory utilisation of what is guarded: the cgroup's
	// working set against memory.max when it is set (Cgroup.MemoryLimit is
	// known), else the host's. MemoryFrom says which.
	Memory     Signal
	MemoryFrom string

	Host    Host
	Process Process
	Cgroup  Cgroup
	Runtime Runtime
}

// Where Resources.CPU and Resources.Memory come from.
const (
	FromCgroup = "cgroup"
	FromHost   = "host"
)

// Host is the machine as a whole, from /proc.
type Host struct {
	// CPUs is the number of logical CPUs, 0 when unknown.
	CPUs int
	// CPU is the busy share of all CPUs since the previous sample: time not
	// idle and not waiting for I/O, from /proc/stat.
	CPU Signal
	// Memory is 1 − MemAvailable/MemTotal; MemoryTotal is MemTotal in bytes.
	Memory      Signal
	MemoryTotal Signal
	// Pressure is from /proc/pressure.
	Pressure Pressure
}

// Pressure is Linux pressure stall information (PSI): the share of the last
// 10 seconds (avg10) in which some, or all non-idle, tasks were stalled
// waiting for CPU or memory, as a fraction 0–1. See the kernel's
// Documentation/accounting/psi.rst.
type Pressure struct {
	CPUSome, CPUFull       Signal
	MemorySome, MemoryFull Signal
}

// Process is the watched process.
type Process struct {
	PID int
	// CPU is the process's CPU time since the previous sample as a share of
	// all the host's CPUs.
	CPU Signal
	// RSS is its resident set size in bytes.
	RSS Signal
}

// Cgroup is the watched cgroup v2. Only its own limit files are read: a
// limit set on an ancestor alone (a pod-level cgroup, a systemd slice) is not
// seen; point SamplerParams.Cgroup at the cgroup that carries it.
type Cgroup struct {
	// Dir is the cgroup directory read, "" when none was found.
	Dir string
	// CPU is the cgroup's CPU usage since the previous sample against
	// CPULimit, or against all the host's CPUs when it has no limit.
	CPU Signal
	// CPULimit is in cores: the smaller of cpu.max's quota/period and the
	// size of cpuset.cpus.effective when that is less than the host's CPUs.
	// Unknown when neither limits the cgroup.
	CPULimit Signal
	// Throttled is the share of CFS enforcement periods since the previous
	// sample in which the cgroup ran out of quota (cpu.stat nr_throttled /
	// nr_periods); 0 when no period elapsed.
	Throttled Signal
	// Memory is MemoryWorkingSet / MemoryLimit.
	Memory Signal
	// MemoryWorkingSet is memory.current less memory.stat's inactive_file,
	// in bytes: page cache the kernel can drop is not counted, as the
	// kubelet counts it for eviction.
	MemoryWorkingSet Signal
	// MemoryLimit is memory.max in bytes, unknown when it is "max".
	MemoryLimit Signal
	// Pressure is from the cgroup's cpu.pressure and memory.pressure.
	Pressure Pressure
}

// Runtime is the Go runtime of this process (always this process, whatever
// PID is watched), from runtime/metrics, which does not stop the world.
type Runtime struct {
	// HeapBytes is memory occupied by live and not yet swept heap objects.
	HeapBytes uint64
	// HeapGoal is the heap size at which the next GC cycle will end.
	HeapGoal   uint64
	Goroutines int
	// GCCycles is the number of GC cycles completed since the previous
	// sample (since the process started, on the first sample).
	GCCycles uint64
	// GCPauseMax is the longest stop-the-world GC pause since the previous
	// sample (since start, on the first): the upper bound of the runtime's
	// histogram bucket it fell in. 0 when there was none.
	GCPauseMax time.Duration
}
