package probe

import (
	"os"
	"path/filepath"
	"time"
)

// cgroupState is the Sampler's view of the watched cgroup v2: its directory
// (or why there is none), the files read from it with the reasons to give
// when they are missing, and the previous counters for rates.
type cgroupState struct {
	dir   string // "" when no cgroup is watched
	why   string // why dir is "", for every cgroup figure
	retry bool   // look for the cgroup again at the next sample

	cpuStat, cpuMax, cpuset, memCurrent, memMax, memStat   *pseudoFile
	noCPUStat, noCPUMax, noMemCurrent, noMemMax, noMemStat string
	noUsage, noPeriods, noInactive                         string
	psi                                                    psiSources

	usage, periods, throttled rate
}

// Reasons given when a signal has no value for want of a limit.
const (
	noQuota    = "no CPU limit: cpu.max is max and the cpuset has every CPU"
	noMemLimit = "memory.max is max (no limit)"
	notEnabled = ": no such file (controller not enabled for this cgroup, or the root cgroup)"
)

// found makes dir the watched cgroup, opening its files in files (emptied
// first). Finding the same directory again keeps the rates going.
func (c *cgroupState) found(dir string, files *fileSet) {
	files.forget()
	open := func(name string) *pseudoFile { return files.open(filepath.Join(dir, name)) }
	keep := c.dir == dir
	prev := *c
	*c = cgroupState{
		dir:        dir,
		cpuStat:    open("cpu.stat"),
		cpuMax:     open("cpu.max"),
		cpuset:     open("cpuset.cpus.effective"),
		memCurrent: open("memory.current"),
		memMax:     open("memory.max"),
		memStat:    open("memory.stat"),
		psi:        newPSISources(open("cpu.pressure"), open("memory.pressure")),
	}
	if keep {
		c.usage, c.periods, c.throttled = prev.usage, prev.periods, prev.throttled
	}
	c.noCPUStat = c.cpuStat.path + ": no such file"
	c.noCPUMax = "no CPU limit: " + c.cpuMax.path + notEnabled
	c.noMemCurrent = c.memCurrent.path + notEnabled
	c.noMemMax = c.memMax.path + notEnabled
	c.noMemStat = c.memStat.path + notEnabled
	c.noUsage = "usage_usec not in " + c.cpuStat.path
	c.noPeriods = "nr_periods not in " + c.cpuStat.path + " (cpu controller not enabled)"
	c.noInactive = "inactive_file not in " + c.memStat.path
}

func (c *cgroupState) lost(why string, retry bool, files *fileSet) {
	files.forget()
	*c = cgroupState{why: why, retry: retry}
}

// sample reads the cgroup's files. cpus is the host's CPU count, 0 when
// unknown (cpusWhy says why).
func (c *cgroupState) sample(rd *fileReader, files *fileSet, now time.Time, cpus int, cpusWhy string) Cgroup {
	if c.dir == "" {
		u := unknown(c.why)
		return Cgroup{CPU: u, CPULimit: u, Throttled: u, Memory: u, MemoryWorkingSet: u, MemoryLimit: u,
			Pressure: Pressure{u, u, u, u}}
	}
	g := Cgroup{Dir: c.dir}
	g.CPULimit = c.cpuLimit(rd, cpus)
	c.sampleCPU(rd, now, &g, cpus, cpusWhy)
	if g.CPU.Reason == c.noCPUStat {
		if _, err := os.Stat(c.dir); err != nil {
			// The cgroup is gone (the service restarted into a new one):
			// look for it again at the next sample.
			c.lost("cgroup "+c.dir+" no longer exists", true, files)
			return c.sample(rd, files, now, cpus, cpusWhy)
		}
	}
	c.sampleMemory(rd, &g)
	g.Pressure = c.psi.read(rd)
	return g
}

// cpuLimit returns the cgroup's CPU limit in cores.
func (c *cgroupState) cpuLimit(rd *fileReader, cpus int) Signal {
	limit := unknown(noQuota)
	data, err := rd.readFile(c.cpuMax)
	switch {
	case missing(err):
		limit = unknown(c.noCPUMax)
	case err != nil:
		limit = unknown("no CPU limit: " + err.Error())
	default:
		quota, period, err := parseCPUMax(data)
		if err != nil {
			limit = unknown("no CPU limit: " + c.cpuMax.path + ": " + err.Error())
		} else if quota > 0 {
			limit = known(float64(quota) / float64(period))
		}
	}
	if cpus > 0 {
		if data, err := rd.readFile(c.cpuset); err == nil {
			if n, err := parseCPUList(data); err == nil && n < cpus && (!limit.Known || float64(n) < limit.Value) {
				limit = known(float64(n))
			}
		}
	}
	return limit
}

// sampleCPU sets g.CPU and g.Throttled from cpu.stat.
func (c *cgroupState) sampleCPU(rd *fileReader, now time.Time, g *Cgroup, cpus int, cpusWhy string) {
	var v [3]uint64
	found, why := c.readKeyed(rd, c.cpuStat, c.noCPUStat, cpuStatKeys[:], v[:])
	if why != "" {
		g.CPU, g.Throttled = unknown(why), unknown(why)
		c.usage, c.periods, c.throttled = rate{}, rate{}, rate{}
		return
	}
	if found&1 == 0 {
		g.CPU = unknown(c.noUsage)
		c.usage = rate{}
	} else if d, dt, why := c.usage.since(now, float64(v[0])); why != "" {
		g.CPU = unknown(why)
	} else {
		cores := g.CPULimit.Value
		if !g.CPULimit.Known {
			cores = float64(cpus)
		}
		if cores <= 0 {
			g.CPU = unknown(cpusWhy)
		} else {
			g.CPU = ratio(d / 1e6 / dt.Seconds() / cores)
		}
	}
	if found&6 != 6 {
		g.Throttled = unknown(c.noPeriods)
		c.periods, c.throttled = rate{}, rate{}
		return
	}
	dp, _, why1 := c.periods.since(now, float64(v[1]))
	dt, _, why2 := c.throttled.since(now, float64(v[2]))
	switch {
	case why1 != "":
		g.Throttled = unknown(why1)
	case why2 != "":
		g.Throttled = unknown(why2)
	case dp == 0:
		g.Throttled = known(0)
	default:
		g.Throttled = ratio(dt / dp)
	}
}

var (
	cpuStatKeys = [...]string{"usage_usec", "nr_periods", "nr_throttled"}
	memStatKeys = [...]string{"inactive_file"}
)

// sampleMemory sets the memory figures from memory.current, memory.stat and
// memory.max.
func (c *cgroupState) sampleMemory(rd *fileReader, g *Cgroup) {
	g.MemoryLimit = c.memoryLimit(rd)
	g.MemoryWorkingSet = c.workingSet(rd)
	switch {
	case !g.MemoryLimit.Known:
		g.Memory = g.MemoryLimit
	case !g.MemoryWorkingSet.Known:
		g.Memory = g.MemoryWorkingSet
	default:
		g.Memory = ratio(g.MemoryWorkingSet.Value / g.MemoryLimit.Value)
	}
}

func (c *cgroupState) memoryLimit(rd *fileReader) Signal {
	data, err := rd.readFile(c.memMax)
	if err != nil {
		if missing(err) {
			return unknown(c.noMemMax)
		}
		return unknown(err.Error())
	}
	v, unlimited, err := parseSingle(data)
	switch {
	case err != nil:
		return unknown(c.memMax.path + ": " + err.Error())
	case unlimited:
		return unknown(noMemLimit)
	case v == 0:
		return unknown(c.memMax.path + ": limit is 0")
	}
	return known(float64(v))
}

// workingSet returns memory.current less inactive_file, the kubelet's
// container_memory_working_set_bytes.
func (c *cgroupState) workingSet(rd *fileReader) Signal {
	data, err := rd.readFile(c.memCurrent)
	if err != nil {
		if missing(err) {
			return unknown(c.noMemCurrent)
		}
		return unknown(err.Error())
	}
	current, unlimited, err := parseSingle(data)
	if err == nil && unlimited {
		err = errNotANumber
	}
	if err != nil {
		return unknown(c.memCurrent.path + ": " + err.Error())
	}
	var inactive [1]uint64
	found, why := c.readKeyed(rd, c.memStat, c.noMemStat, memStatKeys[:], inactive[:])
	if why != "" {
		return unknown(why)
	}
	if found == 0 {
		return unknown(c.noInactive)
	}
	return known(float64(current - min(inactive[0], current)))
}

// readKeyed reads a flat-keyed file, returning a reason instead of an error.
func (c *cgroupState) readKeyed(rd *fileReader, f *pseudoFile, noFile string, keys []string, out []uint64) (uint64, string) {
	data, err := rd.readFile(f)
	if err != nil {
		if missing(err) {
			return 0, noFile
		}
		return 0, err.Error()
	}
	found, err := parseKeyed(data, keys, out)
	if err != nil {
		return 0, f.path + ": " + err.Error()
	}
	return found, ""
}
