package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v3/common"
	"github.com/shirou/gopsutil/v3/host"
	"github.com/shirou/gopsutil/v3/process"
)

// SamplerParams configures a Sampler. The zero value of every field means
// its default.
//
// The guarded signals (Resources.CPU, Memory, CPUPressure) are those of the
// guarded workload, chosen in this order:
//
//  1. Cgroup, when set: CPU and memory against that cgroup's own limits,
//     CPU pressure from its PSI.
//  2. PID, when set: for CPU and for memory, the nearest cgroup from the
//     process's own up that carries a limit; without one, the process's own
//     CPU time against the CPUs it may run on (its affinity, which its
//     cpuset narrows, else the host's) and its RSS against the host's
//     memory. CPU pressure from the PSI of the cgroup of the CPU limit,
//     else of the memory limit, else the process's own.
//  3. Neither: the nearest cgroup around this process that carries a
//     limit, leaving out its own cgroup unless that holds other processes
//     too (in Kubernetes each container has a cgroup of its own, and only
//     the pod-level one above it is shared with the service; a sidecar's
//     own limits are not the service's). A private cgroup namespace hides
//     the cgroups above a container's: the reasons then say so.
//  4. Host: the host's CPU, memory and /proc/pressure/cpu, only when asked.
//
// Without a source a signal is unknown at every sample, and Resources says
// why. The host is never a fallback: a neighbour's load is not something a
// concurrency limit can move. cgroup v2 and v1 (and systemd's hybrid of
// both) are read; PSI exists only on v2.
type SamplerParams struct {
	// Root is the directory under which proc/ and sys/ are read, for
	// sluice's own parsers and for gopsutil alike. Default "/". Tests point
	// it at fake trees; a sidecar that mounts the host's /proc and /sys
	// elsewhere may too.
	Root string
	// Cgroup is the cgroup directory to watch, an absolute path such as
	// "/sys/fs/cgroup/app.slice" (on cgroup v1 the directory in any one
	// controller's hierarchy, such as "/sys/fs/cgroup/memory/app": the same
	// cgroup path is read in the others), read under Root.
	Cgroup string
	// PID is the process to watch. Default: this process. Its cgroup is
	// resolved in this process's cgroup namespace, so a process in another
	// container is only found when the namespaces agree.
	PID int
	// Host makes the host's CPU, memory and CPU pressure the guarded
	// signals. Not with Cgroup or PID.
	Host bool
}

// Validate reports every problem with p.
func (p SamplerParams) Validate() error {
	var errs []error
	if p.PID < 0 {
		errs = append(errs, fmt.Errorf("probe: pid must be positive, got %d", p.PID))
	}
	if p.Cgroup != "" && !filepath.IsAbs(p.Cgroup) {
		errs = append(errs, fmt.Errorf("probe: cgroup must be an absolute path, got %q", p.Cgroup))
	}
	if p.Root != "" && !filepath.IsAbs(p.Root) {
		errs = append(errs, fmt.Errorf("probe: root must be an absolute path, got %q", p.Root))
	}
	if p.Host && (p.Cgroup != "" || p.PID != 0) {
		errs = append(errs, errors.New("probe: host measures the whole host: not with a cgroup or a pid"))
	}
	return errors.Join(errs...)
}

// Sampler reads the resources sluice guards. Construct it with NewSampler and
// call Sample once per control-loop tick; CPU figures are rates between two
// samples, so the first reports them unknown ("warming up"). Sample and
// Sources are safe for concurrent use (a mutex serialises callers), never
// panic on malformed files, and the allocations of Sample do not grow with
// time.
type Sampler struct {
	mu sync.Mutex

	ctx      context.Context // carries Root to gopsutil
	root     string
	pid      int  // the process watched
	self     int  // this process
	watched  bool // pid was given: a service, not sluice itself
	host     bool
	explicit string // SamplerParams.Cgroup under Root, "" when discovered
	proc     *process.Process
	cpus     int    // host logical CPUs, 0 when unknown
	cpusWhy  string // why cpus is unknown
	rd       fileReader
	rt       goRuntime

	hostCPU     hostCPU
	procCPU     rate
	procMissing string
	procCgroup  string // /proc/<pid>/cgroup, or /proc/self/cgroup
	procStatus  string // /proc/<pid>/status, or /proc/self/status
	procCPUs    int    // CPUs the process may run on, 0 when unknown
	procFound   bool   // its status file was there at the last discovery
	hostPSI     psiSources

	plan      plan
	planned   bool // discover has run
	files     *openFiles
	refreshed time.Time // when files were last reopened and the sources chosen
	started   bool      // whether Sample has run
	closed    bool
}

// refreshEvery is how often, in the time given to Sample, the Sampler
// reopens its files and chooses its sources again, so that a file replaced
// behind an open descriptor, a process moved to another cgroup, or a limit
// set or lifted, is noticed within a minute. A removed cgroup is noticed at
// once: reads of its open files fail.
const refreshEvery = time.Minute

// openFiles are the Sampler's open pseudoFiles: the host's and the cgroups'
// (and those opened only while choosing).
type openFiles struct{ host, cgroup, scratch fileSet }

func (f *openFiles) closeAll() {
	f.host.closeAll()
	f.cgroup.closeAll()
	f.scratch.closeAll()
}

var enableBootTimeCache sync.Once

// NewSampler returns a Sampler configured by p. It does not fail for want of
// a cgroup, a process or PSI: what cannot be read is reported as unknown by
// Sample, whose first call chooses the sources. Call Close to release the
// files it keeps open.
func NewSampler(p SamplerParams) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// gopsutil reads the boot time on every process CPU reading unless
	// this process-wide cache is on; it never changes while we run.
	enableBootTimeCache.Do(func() {
		host.EnableBootTimeCache(true)
		process.EnableBootTimeCache(true)
	})
	root := p.Root
	if root == "" {
		root = "/"
	}
	self := os.Getpid()
	pid := p.PID
	if pid == 0 {
		pid = self
	}
	s := &Sampler{
		ctx: context.WithValue(context.Background(), common.EnvKey, common.EnvMap{
			common.HostProcEnvKey: filepath.Join(root, "proc"),
			common.HostSysEnvKey:  filepath.Join(root, "sys"),
		}),
		root:    root,
		pid:     pid,
		self:    self,
		watched: p.PID != 0,
		host:    p.Host,
		proc:    &process.Process{Pid: int32(pid)},
	}
	if p.Cgroup != "" {
		s.explicit = filepath.Join(root, p.Cgroup)
	}
	s.procMissing = "process " + strconv.Itoa(pid) + " not found"
	procDir := filepath.Join(root, "proc", strconv.Itoa(pid))
	if !s.watched {
		procDir = filepath.Join(root, "proc", "self")
	}
	s.procCgroup = filepath.Join(procDir, "cgroup")
	s.procStatus = filepath.Join(procDir, "status")
	s.rt.init()
	s.files = &openFiles{}
	runtime.AddCleanup(s, (*openFiles).closeAll, s.files)
	s.hostPSI = newPSISources(
		s.files.host.open(filepath.Join(root, "proc", "pressure", "cpu")),
		s.files.host.open(filepath.Join(root, "proc", "pressure", "memory")))
	if n, err := hostCPUCount(s.ctx); err != nil || n <= 0 {
		s.cpusWhy = "host CPU count unknown"
		if err != nil {
			s.cpusWhy += ": " + err.Error()
		}
	} else {
		s.cpus = n
	}
	return s, nil
}

// closedResources is what a closed Sampler reports.
func closedResources(now time.Time) Resources {
	u := unknown("sampler closed")
	p := Pressure{u, u, u, u}
	return Resources{
		Time: now, CPU: u, Memory: u, CPUPressure: u,
		CPUSource: u.Reason, MemorySource: u.Reason, CPUPressureSource: u.Reason,
		Host:    Host{CPU: u, Memory: u, MemoryTotal: u, Pressure: p},
		Process: Process{CPU: u, RSS: u},
		Cgroup:  Cgroup{CPU: u, CPULimit: u, Throttled: u, Memory: u, MemoryWorkingSet: u, MemoryLimit: u, Pressure: p},
	}
}

// Sources returns where the guarded signals come from, choosing them if no
// Sample has yet: for the startup log, and to tell which targets can be
// steered on before the first sample.
func (s *Sampler) Sources() Sources {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		u := noSource("sampler closed")
		return Sources{u, u, u}
	}
	if !s.planned {
		s.discover()
		s.planned = true
	}
	return Sources{CPU: s.plan.cpuSrc, Memory: s.plan.memSrc, CPUPressure: s.plan.psiSrc}
}

// Close releases the files the Sampler keeps open. A closed Sampler reports
// every signal unknown. Close is idempotent.
func (s *Sampler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.files.closeAll()
	return nil
}

// Sample reads every source once. now is the instant of the reading: CPU
// rates divide by the time between two samples' now, so pass the real time
// (time.Now()) in production and chosen instants in tests.
func (s *Sampler) Sample(now time.Time) Resources {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return closedResources(now)
	}
	if !s.started || now.Sub(s.refreshed) >= refreshEvery || now.Before(s.refreshed) {
		s.started, s.planned, s.refreshed = true, true, now
		s.files.closeAll()
		s.discover()
	} else if s.plan.retry {
		s.discover()
	}
	r := Resources{Time: now, Runtime: s.rt.read()}
	r.Host = s.sampleHost(now)
	r.Process = s.sampleProcess(now)
	s.sampleCgroup(now, &r.Cgroup)
	if s.cgroupGone(&r.Cgroup) {
		// The service restarted into a new cgroup: look for it at once.
		s.discover()
		r.Cgroup = Cgroup{}
		s.sampleCgroup(now, &r.Cgroup)
	}
	s.pick(&r)
	return r
}

func (s *Sampler) sampleCgroup(now time.Time, g *Cgroup) {
	p := &s.plan
	p.cpu.sample(&s.rd, now, g, s.cpus)
	p.mem.sample(&s.rd, g)
	p.psi.sample(&s.rd, g)
}

// cgroupGone reports whether a cgroup read from has been removed, as the
// reasons of g's figures show.
func (s *Sampler) cgroupGone(g *Cgroup) bool {
	p := &s.plan
	gone := func(dir string) bool {
		_, err := os.Stat(dir)
		return missing(err)
	}
	return p.cpu.dir != "" && g.CPU.Reason == p.cpu.noStat && gone(p.cpu.dir) ||
		p.mem.dir != "" && g.MemoryWorkingSet.Reason == p.mem.noUsage && gone(p.mem.dir)
}

// pick sets r's guarded signals from their sources, and asks for the
// sources to be chosen again at the next sample when a limit they were
// chosen for has changed or gone.
func (s *Sampler) pick(r *Resources) {
	p := &s.plan
	r.CPUFrom, r.CPUSource = p.cpuSrc.From, p.cpuSrc.Text
	switch p.cpuSrc.From {
	case FromCgroup:
		r.CPU = r.Cgroup.CPU
		if !r.Cgroup.CPULimit.Known || r.Cgroup.CPULimit.Value != p.cpuLimit {
			p.retry = true
		}
	case FromProcess:
		r.CPU = r.Process.CPU
	case FromHost:
		r.CPU = r.Host.CPU
	default:
		r.CPU = unknown(p.cpuSrc.Text)
	}

	r.MemoryFrom, r.MemorySource = p.memSrc.From, p.memSrc.Text
	switch p.memSrc.From {
	case FromCgroup:
		r.Memory = r.Cgroup.Memory
		if !r.Cgroup.MemoryLimit.Known {
			p.retry = true
		}
	case FromProcess:
		switch {
		case !r.Process.RSS.Known:
			r.Memory = r.Process.RSS
		case !r.Host.MemoryTotal.Known:
			r.Memory = r.Host.MemoryTotal
		default:
			r.Memory = ratio(r.Process.RSS.Value / r.Host.MemoryTotal.Value)
		}
	case FromHost:
		r.Memory = r.Host.Memory
	default:
		r.Memory = unknown(p.memSrc.Text)
	}

	r.CPUPressureFrom, r.CPUPressureSource = p.psiSrc.From, p.psiSrc.Text
	switch p.psiSrc.From {
	case FromCgroup:
		r.CPUPressure = r.Cgroup.Pressure.CPUSome
	case FromHost:
		r.CPUPressure = r.Host.Pressure.CPUSome
	default:
		r.CPUPressure = unknown(p.psiSrc.Text)
	}
}

func (s *Sampler) sampleHost(now time.Time) Host {
	h := Host{CPUs: s.cpus}
	if busy, total, err := hostCPUTimes(s.ctx); err != nil {
		h.CPU = unknown("host CPU: " + err.Error())
		s.hostCPU = hostCPU{}
	} else {
		// A ratio of busy to total CPU time, both from /proc/stat: the
		// wall clock does not enter into it.
		prev := s.hostCPU
		s.hostCPU = hostCPU{ok: true, busy: busy, total: total}
		switch {
		case !prev.ok:
			h.CPU = unknown(warmingUp)
		case busy < prev.busy || total < prev.total:
			h.CPU = unknown("counter went backwards (restarted?); starting again")
		case total == prev.total:
			h.CPU = unknown("no CPU time elapsed since the previous sample")
		default:
			h.CPU = ratio((busy - prev.busy) / (total - prev.total))
		}
	}
	if avail, total, err := hostMemory(s.ctx); err != nil {
		h.Memory = unknown("host memory: " + err.Error())
		h.MemoryTotal = h.Memory
	} else {
		h.Memory = ratio(1 - float64(avail)/float64(total))
		h.MemoryTotal = known(float64(total))
	}
	h.Pressure = s.hostPSI.read(&s.rd)
	return h
}

func (s *Sampler) sampleProcess(now time.Time) Process {
	p := Process{PID: s.pid, CPUs: s.procCores()}
	if secs, err := processCPU(s.ctx, s.proc); err != nil {
		p.CPU = unknown(s.processReason(err))
		s.procCPU = rate{}
	} else if d, dt, why := s.procCPU.since(now, secs); why != "" {
		p.CPU = unknown(why)
	} else if p.CPUs == 0 {
		p.CPU = unknown(s.cpusWhy)
	} else {
		p.CPU = ratio(d / dt.Seconds() / float64(p.CPUs))
	}
	if rss, err := processRSS(s.ctx, s.proc); err != nil {
		p.RSS = unknown(s.processReason(err))
	} else {
		p.RSS = known(float64(rss))
	}
	return p
}

// hostCPU is the previous reading of /proc/stat's CPU times, in seconds.
type hostCPU struct {
	ok          bool
	busy, total float64
}

func (s *Sampler) processReason(err error) string {
	if missing(err) {
		return s.procMissing
	}
	return "process " + strconv.Itoa(s.pid) + ": " + err.Error()
}
