// Package probe measures what sluice's control loop steers by: request
// latency over a sliding window, and the CPU, memory and pressure of what
// sluice guards (a cgroup v2, a process, the host).
//
// # Latency
//
// A Recorder takes one Record(d) per finished request on the hot path and one
// Snapshot(now) per control-loop tick. Record costs a few atomic adds to a
// per-P stripe (see procpin.go): no clock read, no lock, no allocation. Snapshot
// drains the stripes into the current sub-window, slides the window by the
// time passed in, and returns a Snapshot value: counts, throughput, max
// in-flight, min/max/mean, P50/P90/P95/P99/P99.9 and the min RTT over a
// longer window; Recorder.Quantile answers any other quantile.
//
// Durations go into a log-linear histogram of our own (internal/hist, which
// adaptive/sim's probe model shares, so simulated laws read the same figures): 64
// buckets per power of two from 128 ns to 68.7 s, below that one per
// nanosecond, so any reported quantile is within 1/128 (0.78 %) of a recorded
// value. HdrHistogram-go and DataDog's sketches-go were considered and not
// used: neither is safe for concurrent use (HdrHistogram-go's RecordValue does
// a plain += on its bucket and on a total count shared by every value), so
// sharing one would put a lock on every Record, which the hot path must not
// take; one per stripe would still leave us writing the striping, draining
// and sliding window around them, and DDSketch's Add also maps a float64
// through its index mapping and grows (allocates) its store as new ranges
// appear. A fixed log-linear array of atomic counters is what both reduce to
// for durations, at 16 KiB a stripe.
//
// # Resources
//
// A Sampler reads, on each Sample(now): host CPU (from /proc/stat deltas) and
// memory (available against total), a process's CPU and RSS (gopsutil v3);
// the CPU usage of a cgroup against its quota or cpuset, its throttling, its
// memory working set (usage less inactive file cache, as the kubelet counts
// it) against its memory limit, on cgroup v2 (cpu.max, cpu.stat,
// memory.max, memory.current) and v1 (cpu.cfs_quota_us, cpuacct.usage,
// memory.limit_in_bytes, memory.usage_in_bytes), and PSI avg10 of CPU and
// memory for the host and a cgroup v2 (our own parsers: gopsutil v3.24.5
// reads cgroup v1 only in part, and no PSI); and the Go runtime's heap,
// goroutines and GC pauses. Every figure is a Signal: a value, a Known flag,
// and when unknown a Reason for the admin API. Nothing unreadable is ever
// reported as 0.
//
// Resources.CPU, Memory and CPUPressure are the guarded signals the control
// laws steer on: those of the guarded workload, never the host's unless
// asked (SamplerParams.Host), since a neighbour's load is not something a
// concurrency limit can move. SamplerParams says in which order the sources
// are tried: a cgroup given by path, a process given by PID (its nearest
// cgroup with a limit, else its own figures), the nearest cgroup around
// sluice that carries a limit (in Kubernetes, the pod's, not sluice's own
// container's). CPU utilisation needs an allotment to be measured against;
// CPU pressure does not, and is the signal where there is no CPU limit. Each
// guarded signal says where it comes from, or why it has no source
// (Resources.CPUFrom, CPUSource, …; Sampler.Sources before the first
// sample).
//
// The cgroup and PSI files stay open between samples and are re-read with
// pread (pseudofile.go): opening a cgroup file costs several times more than
// reading it. A Sampler therefore has a Close method. Once a minute of
// sample time it reopens them and chooses its sources again; at once when a
// cgroup it reads is removed or a limit it was chosen for changes.
//
// probe does not log and imports nothing of sluice's.
package probe
