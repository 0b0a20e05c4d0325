package probe

import (
	"path/filepath"
	"time"
)

// cgroupCPU reads one cgroup's CPU limit, usage and throttling, v2 or v1.
// The reasons it gives are built once, when it is made.
type cgroupCPU struct {
	dir string // "" when there is none; why says why
	why string
	v1  bool

	// v2: cpu.max, and cpu.stat for usage and throttling.
	// v1: cpu.cfs_quota_us and cpu.cfs_period_us, cpu.stat for
	// throttling, cpuacct.usage (in the cpuacct hierarchy) for usage.
	quota, period, stat, usage *pseudoFile
	// cpuset is cpuset.cpus.effective (v1: cpuset.effective_cpus in the
	// cpuset hierarchy), nil when not read.
	cpuset *pseudoFile

	noLimit, noStat, noUsage, noPeriods, noUsageFile string

	usageRate, periods, throttled rate
}

// cgroupDirs are the directories of one cgroup for each controller: all
// the same on v2; on v1 each in its hierarchy ("" where the cgroup is not
// there).
type cgroupDirs [numControllers]string

// newCgroupCPU opens the CPU files of the cgroup in dirs, in files.
func newCgroupCPU(dirs cgroupDirs, v1 bool, files *fileSet) cgroupCPU {
	open := func(c controller, name string) *pseudoFile {
		if dirs[c] == "" {
			return nil
		}
		return files.open(filepath.Join(dirs[c], name))
	}
	c := cgroupCPU{dir: dirs[ctrlCPU], v1: v1}
	if v1 {
		c.quota, c.period = open(ctrlCPU, "cpu.cfs_quota_us"), open(ctrlCPU, "cpu.cfs_period_us")
		c.usage = open(ctrlCPUAcct, "cpuacct.usage")
		c.cpuset = open(ctrlCPUSet, "cpuset.effective_cpus")
		c.noUsage = "no CPU usage: " + dirs[ctrlCPU] + " is not in the cpuacct hierarchy at the same path"
		if c.usage != nil {
			c.noUsageFile = c.usage.path + ": no such file"
		}
	} else {
		c.quota = open(ctrlCPU, "cpu.max")
		c.cpuset = open(ctrlCPUSet, "cpuset.cpus.effective")
		c.noUsage = "usage_usec not in " + filepath.Join(c.dir, "cpu.stat")
	}
	c.stat = open(ctrlCPU, "cpu.stat")
	c.noLimit = "no CPU limit: " + c.quota.path + notEnabled
	c.noStat = c.stat.path + ": no such file"
	c.noPeriods = "nr_periods not in " + c.stat.path + " (cpu controller not enabled)"
	return c
}

// Reasons given when a signal has no value for want of a limit.
const (
	noQuota    = "no CPU limit: no CFS quota and the cpuset has every CPU"
	noMemLimit = "no memory limit"
	notEnabled = ": no such file (controller not enabled for this cgroup, or the root cgroup)"
)

// limit returns the cgroup's CPU limit in cores; cpus is the host's CPU
// count, 0 when unknown.
func (c *cgroupCPU) limit(rd *fileReader, cpus int) Signal {
	limit := unknown(noQuota)
	quota, period, why := c.readQuota(rd)
	switch {
	case why != "":
		limit = unknown(why)
	case quota > 0:
		limit = known(float64(quota) / float64(period))
	}
	if cpus > 0 && c.cpuset != nil {
		if data, err := rd.readFile(c.cpuset); err == nil {
			if n, err := parseCPUList(data); err == nil && n < cpus && (!limit.Known || float64(n) < limit.Value) {
				limit = known(float64(n))
			}
		}
	}
	return limit
}

// readQuota returns the CFS quota and period in microseconds, quota 0 for
// none, or why they cannot be read.
func (c *cgroupCPU) readQuota(rd *fileReader) (quota, period uint64, why string) {
	data, err := rd.readFile(c.quota)
	if err != nil {
		if missing(err) {
			return 0, 0, c.noLimit
		}
		return 0, 0, "no CPU limit: " + err.Error()
	}
	if !c.v1 {
		quota, period, err = parseCPUMax(data)
		if err != nil {
			return 0, 0, "no CPU limit: " + c.quota.path + ": " + err.Error()
		}
		return quota, period, ""
	}
	if quota, err = parseCFSQuota(data); err != nil {
		return 0, 0, "no CPU limit: " + c.quota.path + ": " + err.Error()
	}
	if quota == 0 {
		return 0, 0, ""
	}
	data, err = rd.readFile(c.period)
	if err != nil {
		return 0, 0, "no CPU limit: " + err.Error()
	}
	period, unlimited, err := parseSingle(data)
	if err == nil && (unlimited || period == 0) {
		err = errNotANumber
	}
	if err != nil {
		return 0, 0, "no CPU limit: " + c.period.path + ": " + err.Error()
	}
	return quota, period, ""
}

// sample sets g's CPU figures. cpus is the host's CPU count, 0 when unknown.
func (c *cgroupCPU) sample(rd *fileReader, now time.Time, g *Cgroup, cpus int) {
	if c.dir == "" {
		u := unknown(c.why)
		g.CPU, g.CPULimit, g.Throttled = u, u, u
		return
	}
	g.CPUDir = c.dir
	g.CPULimit = c.limit(rd, cpus)
	var v [3]uint64
	found, why := readKeyed(rd, c.stat, c.noStat, cpuStatKeys[:], v[:])
	c.sampleUsage(rd, now, g, found, v[0], why)
	switch {
	case why != "":
		g.Throttled = unknown(why)
		c.periods, c.throttled = rate{}, rate{}
	case found&6 != 6:
		g.Throttled = unknown(c.noPeriods)
		c.periods, c.throttled = rate{}, rate{}
	default:
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
}

// sampleUsage sets g.CPU from the usage counter: cpu.stat's usage_usec
// (found bit 0, value usec) on v2, cpuacct.usage in nanoseconds on v1.
func (c *cgroupCPU) sampleUsage(rd *fileReader, now time.Time, g *Cgroup, found, usec uint64, statWhy string) {
	var secs float64
	switch {
	case c.v1 && c.usage == nil:
		g.CPU = unknown(c.noUsage)
		return
	case c.v1:
		data, why := rd.readOr(c.usage, c.noUsageFile)
		if why != "" {
			c.usageRate = rate{}
			g.CPU = unknown(why)
			return
		}
		ns, unlimited, err := parseSingle(data)
		if err == nil && unlimited {
			err = errNotANumber
		}
		if err != nil {
			c.usageRate = rate{}
			g.CPU = unknown(c.usage.path + ": " + err.Error())
			return
		}
		secs = float64(ns) / 1e9
	case statWhy != "":
		c.usageRate = rate{}
		g.CPU = unknown(statWhy)
		return
	case found&1 == 0:
		c.usageRate = rate{}
		g.CPU = unknown(c.noUsage)
		return
	default:
		secs = float64(usec) / 1e6
	}
	d, dt, why := c.usageRate.since(now, secs)
	switch {
	case why != "":
		g.CPU = unknown(why)
	case !g.CPULimit.Known:
		g.CPU = g.CPULimit
	default:
		g.CPU = ratio(d / dt.Seconds() / g.CPULimit.Value)
	}
}

var (
	cpuStatKeys = [...]string{"usage_usec", "nr_periods", "nr_throttled"}
	memStatKeys = [...]string{"inactive_file", "total_inactive_file"}
)

// cgroupMemory reads one cgroup's memory limit and working set, v2 or v1.
type cgroupMemory struct {
	dir string // "" when there is none; why says why
	why string
	v1  bool

	// v2: memory.max, memory.current, memory.stat.
	// v1: memory.limit_in_bytes, memory.usage_in_bytes, memory.stat.
	limitFile, usage, stat *pseudoFile

	noLimitFile, noUsage, noStat, noInactive string
}

func newCgroupMemory(dir string, v1 bool, files *fileSet) cgroupMemory {
	open := func(name string) *pseudoFile { return files.open(filepath.Join(dir, name)) }
	m := cgroupMemory{dir: dir, v1: v1}
	if v1 {
		m.limitFile, m.usage = open("memory.limit_in_bytes"), open("memory.usage_in_bytes")
	} else {
		m.limitFile, m.usage = open("memory.max"), open("memory.current")
	}
	m.stat = open("memory.stat")
	m.noLimitFile = m.limitFile.path + notEnabled
	m.noUsage = m.usage.path + notEnabled
	m.noStat = m.stat.path + notEnabled
	m.noInactive = "inactive_file not in " + m.stat.path
	return m
}

// v1Unlimited is where cgroup v1's memory.limit_in_bytes means no limit: the
// kernel shows "no limit" as the largest page count in bytes, just under
// 2⁶³.
const v1Unlimited = 1 << 62

// limit returns the cgroup's memory limit in bytes.
func (m *cgroupMemory) limit(rd *fileReader) Signal {
	data, why := rd.readOr(m.limitFile, m.noLimitFile)
	if why != "" {
		return unknown(why)
	}
	v, unlimited, err := parseSingle(data)
	switch {
	case err != nil:
		return unknown(m.limitFile.path + ": " + err.Error())
	case unlimited || m.v1 && v >= v1Unlimited:
		return unknown(noMemLimit)
	case v == 0:
		return unknown(m.limitFile.path + ": limit is 0")
	}
	return known(float64(v))
}

// sample sets g's memory figures.
func (m *cgroupMemory) sample(rd *fileReader, g *Cgroup) {
	if m.dir == "" {
		u := unknown(m.why)
		g.Memory, g.MemoryWorkingSet, g.MemoryLimit = u, u, u
		return
	}
	g.MemoryDir = m.dir
	g.MemoryLimit = m.limit(rd)
	g.MemoryWorkingSet = m.workingSet(rd)
	switch {
	case !g.MemoryLimit.Known:
		g.Memory = g.MemoryLimit
	case !g.MemoryWorkingSet.Known:
		g.Memory = g.MemoryWorkingSet
	default:
		g.Memory = ratio(g.MemoryWorkingSet.Value / g.MemoryLimit.Value)
	}
}

// workingSet returns the usage less the inactive file cache, the kubelet's
// container_memory_working_set_bytes. On v1 usage_in_bytes counts the
// cgroup's descendants, and so does total_inactive_file.
func (m *cgroupMemory) workingSet(rd *fileReader) Signal {
	data, why := rd.readOr(m.usage, m.noUsage)
	if why != "" {
		return unknown(why)
	}
	current, unlimited, err := parseSingle(data)
	if err == nil && unlimited {
		err = errNotANumber
	}
	if err != nil {
		return unknown(m.usage.path + ": " + err.Error())
	}
	var inactive [2]uint64
	found, why := readKeyed(rd, m.stat, m.noStat, memStatKeys[:], inactive[:])
	if why != "" {
		return unknown(why)
	}
	i := inactive[0]
	switch {
	case m.v1 && found&2 != 0:
		i = inactive[1]
	case found&1 == 0:
		return unknown(m.noInactive)
	}
	return known(float64(current - min(i, current)))
}

// readKeyed reads a flat-keyed file, returning a reason instead of an error.
func readKeyed(rd *fileReader, f *pseudoFile, noFile string, keys []string, out []uint64) (uint64, string) {
	data, why := rd.readOr(f, noFile)
	if why != "" {
		return 0, why
	}
	found, err := parseKeyed(data, keys, out)
	if err != nil {
		return 0, f.path + ": " + err.Error()
	}
	return found, ""
}
