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
type SamplerParams struct {
	// Root is the directory under which proc/ and sys/ are read, for
	// sluice's own parsers and for gopsutil alike. Default "/". Tests point
	// it at fake trees; a sidecar that mounts the host's /proc and /sys
	// elsewhere may too.
	Root string
	// Cgroup is the cgroup v2 directory to watch, an absolute path such as
	// "/sys/fs/cgroup/app.slice", read under Root. Default: the cgroup PID
	// is in, from /proc/<pid>/cgroup and the cgroup2 mount in
	// /proc/self/mountinfo.
	Cgroup string
	// PID is the process to watch. Default: this process. Its cgroup is
	// resolved in this process's cgroup namespace, so a process in another
	// container is only found when the namespaces agree.
	PID int
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
	return errors.Join(errs...)
}

// Sampler reads the resources sluice guards. Construct it with NewSampler and
// call Sample once per control-loop tick; CPU figures are rates between two
// samples, so the first reports them unknown ("warming up"). Sample is safe
// for concurrent use (a mutex serialises callers), never panics on malformed
// files, and its allocations per call do not grow with time.
type Sampler struct {
	mu sync.Mutex

	ctx      context.Context // carries Root to gopsutil
	root     string
	pid      int
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
	hostPSI     psiSources

	cg        cgroupState
	files     *openFiles
	refreshed time.Time // when files were last reopened and the cgroup looked up
	started   bool      // whether Sample has run
	closed    bool
}

// refreshEvery is how often, in the time given to Sample, the Sampler
// reopens its files and looks up its cgroup again, so that a file replaced
// behind an open descriptor, or a process moved to another cgroup, is
// noticed within a minute. A removed cgroup is noticed at once: reads of its
// open files fail.
const refreshEvery = time.Minute

// openFiles are the Sampler's open pseudoFiles: the host's and the cgroup's.
type openFiles struct{ host, cgroup fileSet }

func (f *openFiles) closeAll() {
	f.host.closeAll()
	f.cgroup.closeAll()
}

var enableBootTimeCache sync.Once

// NewSampler returns a Sampler configured by p. It does not fail for want of
// a cgroup, a process or PSI: what cannot be read is reported as unknown by
// Sample, whose first call finds the cgroup to watch. Call Close to release
// the files it keeps open.
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
	pid := p.PID
	if pid == 0 {
		pid = os.Getpid()
	}
	s := &Sampler{
		ctx: context.WithValue(context.Background(), common.EnvKey, common.EnvMap{
			common.HostProcEnvKey: filepath.Join(root, "proc"),
			common.HostSysEnvKey:  filepath.Join(root, "sys"),
		}),
		root: root,
		pid:  pid,
		proc: &process.Process{Pid: int32(pid)},
	}
	if p.Cgroup != "" {
		s.explicit = filepath.Join(root, p.Cgroup)
	}
	s.procMissing = "process " + strconv.Itoa(pid) + " not found"
	s.procCgroup = filepath.Join(root, "proc", strconv.Itoa(pid), "cgroup")
	if p.PID == 0 {
		s.procCgroup = filepath.Join(root, "proc", "self", "cgroup")
	}
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
		Time: now, CPU: u, Memory: u,
		Host:    Host{CPU: u, Memory: u, MemoryTotal: u, Pressure: p},
		Process: Process{CPU: u, RSS: u},
		Cgroup:  Cgroup{CPU: u, CPULimit: u, Throttled: u, Memory: u, MemoryWorkingSet: u, MemoryLimit: u, Pressure: p},
	}
}

// discover finds the cgroup directory to watch and sets s.cg.
func (s *Sampler) discover() {
	if s.explicit != "" {
		if err := checkCgroupDir(s.explicit); err != nil {
			s.lost(err.Error(), missing(err))
			return
		}
		s.cg.found(s.explicit, &s.files.cgroup)
		return
	}
	cgFile := s.procCgroup
	data, err := s.rd.read(cgFile)
	if err != nil {
		// The process may not have started yet: try again next sample.
		s.lost("cannot find the cgroup: "+err.Error(), missing(err))
		return
	}
	path, err := parseProcCgroup(data)
	if err != nil {
		if errors.Is(err, errNoV2Entry) {
			s.lost("cgroup v2 not in use: no 0:: line in "+cgFile+" (a cgroup v1 host?)", false)
			return
		}
		s.lost(cgFile+": "+err.Error(), false)
		return
	}
	mountinfo := filepath.Join(s.root, "proc", "self", "mountinfo")
	data, err = s.rd.read(mountinfo)
	if err != nil {
		s.lost("cannot find the cgroup2 mount: "+err.Error(), false)
		return
	}
	mounts, err := parseMountinfo(data)
	if err != nil {
		s.lost(mountinfo+": "+err.Error(), false)
		return
	}
	dir, err := cgroupDir(s.root, path, mounts)
	if err != nil {
		// A cgroup directory that does not exist yet may appear (a service
		// restarting): look again at every sample.
		s.lost(err.Error(), missing(err))
		return
	}
	s.cg.found(dir, &s.files.cgroup)
}

func (s *Sampler) lost(why string, retry bool) { s.cg.lost(why, retry, &s.files.cgroup) }

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
		s.started, s.refreshed = true, now
		s.files.closeAll()
		s.discover()
	} else if s.cg.retry {
		s.discover()
	}
	r := Resources{Time: now, Runtime: s.rt.read()}
	r.Host = s.sampleHost(now)
	r.Process = s.sampleProcess(now)
	r.Cgroup = s.cg.sample(&s.rd, &s.files.cgroup, now, s.cpus, s.cpusWhy)

	r.CPU, r.CPUFrom = r.Host.CPU, FromHost
	if r.Cgroup.CPULimit.Known {
		r.CPU, r.CPUFrom = r.Cgroup.CPU, FromCgroup
	}
	r.Memory, r.MemoryFrom = r.Host.Memory, FromHost
	if r.Cgroup.MemoryLimit.Known {
		r.Memory, r.MemoryFrom = r.Cgroup.Memory, FromCgroup
	}
	return r
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
	p := Process{PID: s.pid}
	if secs, err := processCPU(s.ctx, s.proc); err != nil {
		p.CPU = unknown(s.processReason(err))
		s.procCPU = rate{}
	} else if d, dt, why := s.procCPU.since(now, secs); why != "" {
		p.CPU = unknown(why)
	} else if s.cpus == 0 {
		p.CPU = unknown(s.cpusWhy)
	} else {
		p.CPU = ratio(d / dt.Seconds() / float64(s.cpus))
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
