package probe

import "time"

// Resources is one Sample of everything a Sampler watches. It is a plain
// value owned by the caller. Ratios are 0–1; CPU ratios are clamped to it
// (a cgroup bursting past its quota reads 1).
//
// CPU, Memory and CPUPressure are the three guarded signals, those a control
// law steers on. Each is that of the guarded workload, chosen once a minute
// (see SamplerParams for the order), and comes with where it is from: a
// short tag (…From: FromCgroup, FromProcess, FromHost, or "" when the signal
// has no source) and a description for people (…Source), which says why
// when there is no source. A signal whose …From is "" is unknown at every
// sample: a target on it cannot be met or missed, and is best switched off
// (see Source.Usable). A signal with a source can still be unknown at one
// sample (the first CPU sample, a file that failed to read); its Reason
// says why.
type Resources struct {
	// Time is the instant passed to Sample.
	Time time.Time

	// CPU is the CPU utilisation of the guarded workload, 0–1: its CPU time
	// against the CPU it may use (its cgroup's quota or cpuset, a process's
	// cores), or the host's busy share with SamplerParams.Host. Without a
	// CPU allotment to measure against there is no CPU utilisation: CPUFrom
	// is "" and CPUPressure is the signal to steer on.
	CPU       Signal
	CPUFrom   string
	CPUSource string
	// Memory is the memory utilisation of the guarded workload, 0–1: its
	// cgroup's working set against its memory limit, a process's RSS
	// against the host's memory, or the host's used share with
	// SamplerParams.Host.
	Memory       Signal
	MemoryFrom   string
	MemorySource string
	// CPUPressure is the share of the last 10 seconds in which some of the
	// guarded workload's runnable tasks waited for a CPU (PSI "some" avg10
	// of its cgroup v2, or of the host with SamplerParams.Host), 0–1. It
	// has a meaning with or without a CPU limit.
	CPUPressure       Signal
	CPUPressureFrom   string
	CPUPressureSource string

	Host    Host
	Process Process
	Cgroup  Cgroup
	Runtime Runtime
}

// Where the guarded signals come from: the short tags of Resources.CPUFrom,
// MemoryFrom and CPUPressureFrom, and of Source.From.
const (
	FromCgroup  = "cgroup"
	FromProcess = "process"
	FromHost    = "host"
)

// Source is where one guarded signal comes from.
type Source struct {
	// From is FromCgroup, FromProcess or FromHost; "" when the signal has
	// no source.
	From string
	// Text describes the source for people, such as
	// "cgroup v2 /sys/fs/cgroup/kubepods/pod1 (cpu.max 2 cores)", or says
	// why there is none ("none: …").
	Text string
}

// Usable reports whether the signal has a source, and so can be steered on.
func (s Source) Usable() bool { return s.From != "" }

// Sources are the sources of the three guarded signals.
type Sources struct {
	CPU, Memory, CPUPressure Source
}

// Sources returns where r's guarded signals come from.
func (r *Resources) Sources() Sources {
	return Sources{
		CPU:         Source{From: r.CPUFrom, Text: r.CPUSource},
		Memory:      Source{From: r.MemoryFrom, Text: r.MemorySource},
		CPUPressure: Source{From: r.CPUPressureFrom, Text: r.CPUPressureSource},
	}
}

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

// Process is the watched process: SamplerParams.PID, or this process.
type Process struct {
	PID int
	// CPUs is the number of CPUs the process may run on (its affinity,
	// which a cpuset narrows: Cpus_allowed_list in /proc/<pid>/status),
	// else the host's; 0 when neither is known.
	CPUs int
	// CPU is the process's CPU time since the previous sample as a share of
	// CPUs.
	CPU Signal
	// RSS is its resident set size in bytes.
	RSS Signal
}

// Cgroup holds the figures of the cgroups the guarded signals are read from,
// cgroup v2 or v1. CPU and memory may come from different cgroups (a CPU
// limit set on a pod, a memory limit on its container), and on cgroup v1
// from different hierarchies; PSI only exists on cgroup v2. A figure with no
// such cgroup is unknown and says why.
type Cgroup struct {
	// CPUDir is the cgroup directory CPU, CPULimit and Throttled are read
	// from (on cgroup v1, in the cpu hierarchy), "" when none.
	CPUDir string
	// CPU is the cgroup's CPU usage since the previous sample against
	// CPULimit.
	CPU Signal
	// CPULimit is in cores: the smaller of the CFS quota/period (cpu.max;
	// cpu.cfs_quota_us and cpu.cfs_period_us on v1) and the size of the
	// effective cpuset when that is less than the host's CPUs.
	CPULimit Signal
	// Throttled is the share of CFS enforcement periods since the previous
	// sample in which the cgroup ran out of quota (cpu.stat nr_throttled /
	// nr_periods); 0 when no period elapsed.
	Throttled Signal

	// MemoryDir is the cgroup directory the memory figures are read from,
	// "" when none.
	MemoryDir string
	// Memory is MemoryWorkingSet / MemoryLimit.
	Memory Signal
	// MemoryWorkingSet is the memory charged to the cgroup less the page
	// cache the kernel can drop (memory.current less memory.stat's
	// inactive_file; on v1 memory.usage_in_bytes less total_inactive_file),
	// in bytes, as the kubelet counts it for eviction.
	MemoryWorkingSet Signal
	// MemoryLimit is memory.max (memory.limit_in_bytes on v1) in bytes.
	MemoryLimit Signal

	// PressureDir is the cgroup v2 directory Pressure is read from, "" when
	// none.
	PressureDir string
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
