package probe

import (
	"math"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// plan is what discovery decided: where each guarded signal is read, and how
// to say so. It is rebuilt at every discovery (once a minute, and when a
// source goes away), and read without allocating by every Sample.
type plan struct {
	cpu cgroupCPU
	mem cgroupMemory
	psi cgroupPSI

	cpuSrc, memSrc, psiSrc Source
	// cpuLimit is the CPU limit cpuSrc.Text names, to notice a change.
	cpuLimit float64
	// retry: discover again at the next sample (a process or cgroup that
	// may yet appear, a limit that went away).
	retry bool
}

// cgroupPSI is the cgroup v2 whose pressure files are read.
type cgroupPSI struct {
	dir, why string // dir "" when none; why says why
	files    psiSources
}

func (c *cgroupPSI) sample(rd *fileReader, g *Cgroup) {
	if c.dir == "" {
		u := unknown(c.why)
		g.Pressure = Pressure{u, u, u, u}
		return
	}
	g.PressureDir = c.dir
	g.Pressure = c.files.read(rd)
}

// noSource is a Source for a signal that has none, and why.
func noSource(why string) Source { return Source{Text: "none: " + why} }

// hint is what an operator can do about a guarded signal without a source.
const hint = `: name the guarded service with probe.pid_file or probe.cgroup, or measure the whole host with probe.source = "host"`

// discover chooses the sources of the guarded signals and opens their files.
func (s *Sampler) discover() {
	prev := s.plan
	s.files.cgroup.forget()
	s.readAffinity()
	p := s.choose()
	if p.cpu.dir != "" && p.cpu.dir == prev.cpu.dir {
		// The same cgroup found again: its rates go on.
		p.cpu.usageRate, p.cpu.periods, p.cpu.throttled = prev.cpu.usageRate, prev.cpu.periods, prev.cpu.throttled
	}
	s.plan = p
}

// choose builds the plan, in the order of SamplerParams's documentation.
func (s *Sampler) choose() plan {
	if s.host {
		return s.hostPlan()
	}
	mountinfo := filepath.Join(s.root, "proc", "self", "mountinfo")
	data, err := s.rd.read(mountinfo)
	if err != nil {
		return s.nonePlan("cannot find the cgroup mounts: "+err.Error(), false)
	}
	mounts, err := parseMountinfo(data)
	if err != nil {
		return s.nonePlan(mountinfo+": "+err.Error(), false)
	}
	if len(mounts) == 0 {
		return s.nonePlan("no cgroup filesystem mounted (no cgroup or cgroup2 in "+mountinfo+")", false)
	}
	var w walk
	w.ctrl, w.v2 = hierarchies(mounts)
	if s.explicit != "" {
		return s.explicitPlan(&w, mounts)
	}
	data, err = s.rd.read(s.procCgroup)
	if err != nil {
		// The process may not have started yet: try again next sample.
		return s.nonePlan("cannot find the cgroup: "+err.Error(), missing(err))
	}
	pc, err := parseProcCgroup(data)
	if err != nil {
		return s.nonePlan(s.procCgroup+": "+err.Error(), false)
	}
	w.pc = pc
	return s.walkPlan(&w)
}

// walk is what choosing a plan needs to know of the cgroups.
type walk struct {
	ctrl [numControllers]hierarchy
	v2   hierarchy
	pc   procCgroups
}

// start returns the path of the process's cgroup in controller c's
// hierarchy, and whether it is listed.
func (w *walk) start(c controller) (string, bool) {
	if w.ctrl[c].v2 {
		return w.pc.v2, w.pc.hasV2
	}
	p := w.pc.v1[c]
	return p, p != ""
}

// dirs returns the directories of the cgroup at cgroupPath for the CPU
// reader: the cpu hierarchy's (cpuDir), and on v1 the cpuacct and cpuset
// hierarchies' at the same path. With ofProcess, those only where the
// process is at the same path in them as in the cpu hierarchy: else the
// usage, or the cpuset, of that cgroup is not that of the same processes.
func (w *walk) dirs(fsRoot, cgroupPath, cpuDir string, ofProcess bool) cgroupDirs {
	var d cgroupDirs
	d[ctrlCPU] = cpuDir
	cpu := w.ctrl[ctrlCPU]
	for _, c := range [...]controller{ctrlCPUAcct, ctrlCPUSet} {
		h := w.ctrl[c]
		if h.v2 != cpu.v2 {
			continue
		}
		if cpu.v2 {
			d[c] = cpuDir
			continue
		}
		if ofProcess {
			start, _ := w.start(c)
			cpuStart, _ := w.start(ctrlCPU)
			if start != cpuStart {
				continue
			}
		}
		if dir, _, err := h.dir(fsRoot, cgroupPath); err == nil && checkCgroupDir(dir) == nil {
			d[c] = dir
		}
	}
	return d
}

func version(h hierarchy) string {
	if h.v2 {
		return "cgroup v2 "
	}
	return "cgroup v1 "
}

// walkPlan finds the sources of a process's guarded signals (SamplerParams.PID,
// or this process): for CPU and memory, the nearest cgroup from the process's
// own up that carries a limit; for this process, its own cgroup only when
// it holds other processes too.
func (s *Sampler) walkPlan(w *walk) plan {
	var p plan
	var cpuPath, memPath string
	own := "sluice's cgroup"
	if s.watched {
		own = "process " + strconv.Itoa(s.pid) + "'s cgroup"
	}

	// CPU.
	cpuChain, why, retry := s.chain(w, ctrlCPU)
	p.retry = retry
	cpuV1 := !w.ctrl[ctrlCPU].v2
	i, lim, none := s.search(cpuChain, "CPU", own, why, func(l level) (Signal, bool) {
		c := newCgroupCPU(w.dirs(s.root, l.path, l.dir, true), cpuV1, &s.files.scratch)
		lim := c.limit(&s.rd, s.cpus)
		return lim, lim.Reason == noQuota || lim.Reason == c.noLimit
	})
	if i >= 0 {
		l := cpuChain.levels[i]
		p.cpu = newCgroupCPU(w.dirs(s.root, l.path, l.dir, true), cpuV1, &s.files.cgroup)
		p.cpuLimit = lim.Value
		p.cpuSrc = Source{From: FromCgroup, Text: version(w.ctrl[ctrlCPU]) + s.show(l.dir) + " (" + s.describeCPULimit(&p.cpu, lim.Value) + ")" + above(i, own, cpuChain)}
		cpuPath = l.path
	} else {
		p.cpu.why = none
		if s.watched {
			p.cpuSrc = s.processCPUSource(none)
		} else {
			p.cpuSrc = noSource(none + ": CPU utilisation has no allotment to be measured against (cpu_pressure needs none)" + hint)
		}
	}

	// Memory.
	memChain, why, retry := s.chain(w, ctrlMemory)
	p.retry = p.retry || retry
	memV1 := !w.ctrl[ctrlMemory].v2
	i, lim, none = s.search(memChain, "memory", own, why, func(l level) (Signal, bool) {
		m := newCgroupMemory(l.dir, memV1, &s.files.scratch)
		lim := m.limit(&s.rd)
		return lim, lim.Reason == noMemLimit || lim.Reason == m.noLimitFile
	})
	if i >= 0 {
		l := memChain.levels[i]
		p.mem = newCgroupMemory(l.dir, memV1, &s.files.cgroup)
		p.memSrc = Source{From: FromCgroup, Text: version(w.ctrl[ctrlMemory]) + s.show(l.dir) + " (working set of " + p.mem.limitFile.name() + " " + bytesText(lim.Value) + ")" + above(i, own, memChain)}
		memPath = l.path
	} else {
		p.mem.why = none
		if s.watched {
			p.memSrc = s.processMemorySource(none)
		} else {
			p.memSrc = noSource(none + hint)
		}
	}

	// CPU pressure: the cgroup v2 of the CPU limit, else of the memory
	// limit, else the process's own (this process's only when it holds
	// others).
	var cands []string
	for _, cp := range []string{cpuPath, memPath} {
		if cp != "" {
			cands = append(cands, cp)
		}
	}
	var ownWhy string
	switch {
	case !w.v2.mounted():
		ownWhy = "cgroup v2 is not mounted, and only cgroup v2 has pressure (PSI) files"
	case !w.pc.hasV2:
		ownWhy = "no cgroup v2 line in " + s.procCgroup
	default:
		c, why, _ := s.chainIn(w.v2, w.pc.v2, true, "cgroup v2")
		switch {
		case why != "":
			ownWhy = why
		case len(c.levels) > 0 && !c.alone:
			cands = append(cands, c.levels[0].path)
		case c.alone:
			ownWhy = "no cgroup around sluice carries a CPU or memory limit, and its own, " + path.Clean(c.start) + ", holds only sluice"
		default:
			ownWhy = own + " is the root cgroup v2, whose pressure is the host's"
		}
		if ownWhy != "" {
			ownWhy += s.hiddenNote(c)
		}
	}
	if w.v2.mounted() {
		p.psi, p.psiSrc = s.choosePSI(w, cands, p.cpuSrc.From != FromCgroup)
	}
	if p.psiSrc.Text == "" {
		if ownWhy == "" {
			ownWhy = "no cgroup v2 with pressure files around " + own
		}
		p.psi.why = ownWhy
		p.psiSrc = noSource(ownWhy + hint)
	}
	if s.watched && !s.procFound {
		p.retry = true // the process may start later, in its cgroup
	}

	return p
}

// chain returns the cgroups to search for controller c's limit, nearest
// first, or why there are none, and whether to look again at the next
// sample (the cgroup is not there, yet or any more). For this process its
// own cgroup is left out unless it holds other processes: a sidecar's own
// limit (a Kubernetes container's) is not the service's.
func (s *Sampler) chain(w *walk, c controller) (chain, string, bool) {
	start, ok := w.start(c)
	return s.chainIn(w.ctrl[c], start, ok, controllerNames[c])
}

// chainIn is chain for the cgroup at start in h, named name in reasons; ok
// is false when the process is not listed in h.
func (s *Sampler) chainIn(h hierarchy, start string, ok bool, name string) (chain, string, bool) {
	switch {
	case !h.mounted():
		return chain{}, "no " + name + " hierarchy mounted", false
	case !ok:
		return chain{}, "no " + name + " line in " + s.procCgroup, false
	}
	ch, err := h.ancestors(s.root, start)
	if err != nil {
		return chain{}, err.Error(), missing(err)
	}
	if !s.watched && len(ch.levels) > 0 && !s.holdsOthers(ch.levels[0].dir) {
		ch.levels = ch.levels[1:]
		ch.alone = true
	}
	ch.start = start
	return ch, "", false
}

// search returns the index in c of the nearest cgroup that carries a limit,
// and that limit; or -1 and why there is none (why, when it is given
// already). limit reads a cgroup's limit through files it opens in the
// scratch set, and says whether a limit that is not known is merely absent
// (rather than unreadable, which the reason then mentions).
func (s *Sampler) search(c chain, what, own, why string, limit func(level) (Signal, bool)) (int, Signal, string) {
	if why != "" {
		return -1, Signal{}, why
	}
	odd := ""
	for i, l := range c.levels {
		lim, absent := limit(l)
		s.files.scratch.forget()
		if lim.Known {
			return i, lim, ""
		}
		if !absent && odd == "" {
			odd = " (" + lim.Reason + ")"
		}
	}
	return -1, Signal{}, s.searched(what, own, c) + odd
}

// processCPUSource and processMemorySource are the watched process's own
// figures as a source, with why its cgroups give none.
func (s *Sampler) processCPUSource(why string) Source {
	return Source{From: FromProcess, Text: "process " + strconv.Itoa(s.pid) + " (its CPU time of the " + s.procCoresText() + "; " + why + ")"}
}

func (s *Sampler) processMemorySource(why string) Source {
	return Source{From: FromProcess, Text: "process " + strconv.Itoa(s.pid) + " RSS of " + s.hostMemoryText() + " (" + why + ")"}
}

// holdsOthers reports whether the cgroup in dir holds a process besides
// this one.
func (s *Sampler) holdsOthers(dir string) bool {
	data, err := s.rd.read(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	others, err := parseHoldsOthers(data, s.self)
	return err == nil && others
}

// searched says where no limit was found.
func (s *Sampler) searched(what, own string, c chain) string {
	var t string
	switch {
	case c.top == "":
		t = "no " + what + " limit found"
	case len(c.levels) == 0 && !c.alone:
		t = own + " is the root cgroup " + s.show(c.top) + ", the whole host"
	case c.alone:
		t = "no " + what + " limit on the cgroups above " + own + " " + path.Clean(c.start) + ", which holds only sluice"
	default:
		t = "no " + what + " limit on " + own + " " + s.show(c.levels[0].dir) + " or above"
	}
	return t + s.hiddenNote(c)
}

// hiddenNote says so when the cgroups above c are hidden.
func (s *Sampler) hiddenNote(c chain) string {
	if !c.hidden {
		return ""
	}
	return "; the cgroups above " + s.show(c.top) + " are hidden from sluice (a private cgroup namespace?), a pod-level cgroup among them"
}

// above says, for a limit found i levels up a chain, whose cgroup it is
// above.
func above(i int, own string, c chain) string {
	if i == 0 && !c.alone {
		return ""
	}
	return ", above " + own + " " + path.Clean(c.start)
}

// choosePSI takes the first of the cgroup paths cands that has a
// cpu.pressure file in the cgroup v2 hierarchy.
func (s *Sampler) choosePSI(w *walk, cands []string, noCPULimit bool) (cgroupPSI, Source) {
	why := ""
	for _, cp := range cands {
		dir, _, err := w.v2.dir(s.root, cp)
		if err == nil {
			err = checkCgroupDir(dir)
		}
		if err != nil {
			why = "no cgroup v2 at " + cp + ": " + err.Error()
			continue
		}
		if isRootCgroup(dir, true) {
			continue
		}
		cpu := filepath.Join(dir, "cpu.pressure")
		if !exists(cpu) {
			why = "no " + s.show(cpu) + " (a kernel without PSI, or booted with psi=0?)"
			continue
		}
		c := cgroupPSI{dir: dir, files: newPSISources(s.files.cgroup.open(cpu), s.files.cgroup.open(filepath.Join(dir, "memory.pressure")))}
		text := "psi some avg10 of cgroup v2 " + s.show(dir)
		if noCPULimit {
			text += " (no cpu limit)"
		}
		return c, Source{From: FromCgroup, Text: text}
	}
	if why == "" {
		return cgroupPSI{}, Source{}
	}
	return cgroupPSI{why: why}, noSource(why)
}

// explicitPlan reads the cgroup SamplerParams.Cgroup names, whatever its
// limits: CPU and memory utilisation against its own limits, CPU pressure
// from its PSI. On cgroup v1 the same cgroup path is read in each
// controller's hierarchy.
func (s *Sampler) explicitPlan(w *walk, mounts []mount) plan {
	if err := checkCgroupDir(s.explicit); err != nil {
		return s.nonePlan(err.Error(), missing(err))
	}
	cp, _, err := cgroupOf(s.root, s.explicit, mounts)
	if err != nil {
		return s.nonePlan(err.Error(), false)
	}
	var p plan
	dirOf := func(c controller) (string, string) {
		h := w.ctrl[c]
		dir, _, err := h.dir(s.root, cp)
		if err == nil {
			err = checkCgroupDir(dir)
		}
		if err != nil {
			return "", "no " + controllerNames[c] + " cgroup: " + err.Error()
		}
		return dir, ""
	}
	if dir, why := dirOf(ctrlCPU); why != "" {
		p.cpu.why, p.cpuSrc = why, noSource(why)
	} else {
		c := newCgroupCPU(w.dirs(s.root, cp, dir, false), !w.ctrl[ctrlCPU].v2, &s.files.cgroup)
		if lim := c.limit(&s.rd, s.cpus); lim.Known {
			p.cpu, p.cpuLimit = c, lim.Value
			p.cpuSrc = Source{From: FromCgroup, Text: version(w.ctrl[ctrlCPU]) + s.show(dir) + " (" + s.describeCPULimit(&c, lim.Value) + ")"}
		} else {
			why := "cgroup " + s.show(dir) + " has " + lowerFirst(lim.Reason) + ": CPU utilisation has no allotment to be measured against (cpu_pressure needs none)"
			p.cpu.why, p.cpuSrc = why, noSource(why)
		}
	}
	if dir, why := dirOf(ctrlMemory); why != "" {
		p.mem.why, p.memSrc = why, noSource(why)
	} else {
		m := newCgroupMemory(dir, !w.ctrl[ctrlMemory].v2, &s.files.cgroup)
		if lim := m.limit(&s.rd); lim.Known {
			p.mem = m
			p.memSrc = Source{From: FromCgroup, Text: version(w.ctrl[ctrlMemory]) + s.show(dir) + " (working set of " + m.limitFile.name() + " " + bytesText(lim.Value) + ")"}
		} else {
			why := "cgroup " + s.show(dir) + ": " + lim.Reason
			p.mem.why, p.memSrc = why, noSource(why)
		}
	}
	if !w.v2.mounted() {
		why := "cgroup v2 is not mounted, and only cgroup v2 has pressure (PSI) files"
		p.psi.why, p.psiSrc = why, noSource(why)
	} else {
		p.psi, p.psiSrc = s.choosePSI(w, []string{cp}, p.cpuSrc.From == "")
		if p.psiSrc.Text == "" {
			why := "cgroup " + cp + " is the root cgroup v2, whose pressure is the host's"
			p.psi.why, p.psiSrc = why, noSource(why)
		}
	}
	return p
}

// hostPlan measures the whole host, as SamplerParams.Host asks.
func (s *Sampler) hostPlan() plan {
	var p plan
	const why = `probe.source = "host": the host is measured, not a cgroup`
	p.cpu.why, p.mem.why, p.psi.why = why, why, why
	cpus := "its CPUs"
	if s.cpus > 0 {
		cpus = "its " + strconv.Itoa(s.cpus) + " CPUs"
	}
	p.cpuSrc = Source{From: FromHost, Text: `host (probe.source = "host"): the busy share of ` + cpus}
	p.memSrc = Source{From: FromHost, Text: `host (probe.source = "host"): 1 − MemAvailable/MemTotal of ` + s.hostMemoryText()}
	if f := s.hostPSI.cpu.file.path; exists(f) {
		p.psiSrc = Source{From: FromHost, Text: `host (probe.source = "host"): psi some avg10 of ` + s.show(f)}
	} else {
		p.psiSrc = noSource("no " + s.show(f) + " (a kernel without PSI, or booted with psi=0?)")
	}
	return p
}

// nonePlan is a plan without sources, for why; with retry, discovery runs
// again at the next sample.
func (s *Sampler) nonePlan(why string, retry bool) plan {
	p := plan{retry: retry}
	p.cpu.why, p.mem.why, p.psi.why = why, why, why
	if s.watched {
		p.cpuSrc, p.memSrc = s.processCPUSource(why), s.processMemorySource(why)
	} else {
		p.cpuSrc, p.memSrc = noSource(why), noSource(why)
	}
	p.psiSrc = noSource(why)
	return p
}

// describeCPULimit says what sets a cgroup's CPU limit of cores.
func (s *Sampler) describeCPULimit(c *cgroupCPU, cores float64) string {
	quota, period, why := c.readQuota(&s.rd)
	if why == "" && quota > 0 && float64(quota)/float64(period) == cores {
		if c.v1 {
			return "cfs quota " + coresText(cores)
		}
		return "cpu.max " + coresText(cores)
	}
	return "cpuset " + strconv.FormatFloat(cores, 'f', -1, 64) + " CPUs"
}

// readAffinity reads how many CPUs the watched process may run on.
func (s *Sampler) readAffinity() {
	s.procCPUs, s.procFound = 0, true
	data, err := s.rd.read(s.procStatus)
	if err != nil {
		s.procFound = !missing(err)
		return
	}
	if n, err := parseStatusCPUs(data); err == nil && n > 0 {
		s.procCPUs = n
	}
}

// procCores returns the CPUs the watched process may run on: its affinity,
// else the host's.
func (s *Sampler) procCores() int {
	if s.procCPUs > 0 {
		return s.procCPUs
	}
	return s.cpus
}

func (s *Sampler) procCoresText() string {
	switch {
	case s.procCPUs > 0 && s.procCPUs < s.cpus:
		return strconv.Itoa(s.procCPUs) + " CPUs it may run on (its affinity)"
	case s.cpus > 0:
		return "host's " + strconv.Itoa(s.cpus) + " CPUs"
	}
	return "host's CPUs (how many is unknown)"
}

func (s *Sampler) hostMemoryText() string {
	if _, total, err := hostMemory(s.ctx); err == nil {
		return "the host's " + bytesText(float64(total))
	}
	return "the host's memory"
}

// coresText is "1 core", "1.5 cores".
func coresText(c float64) string {
	t := strconv.FormatFloat(c, 'f', -1, 64)
	if c == 1 {
		return t + " core"
	}
	return t + " cores"
}

// bytesText is b in binary units, "512 MiB", "15.3 GiB".
func bytesText(b float64) string {
	units := [...]string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return strconv.FormatFloat(math.Round(b*10)/10, 'f', -1, 64) + " " + units[i]
}

func lowerFirst(s string) string {
	if s != "" && s[0] >= 'A' && s[0] <= 'Z' {
		return string(s[0]+'a'-'A') + s[1:]
	}
	return s
}

// show returns a path read under SamplerParams.Root as the path it stands
// for, for people.
func (s *Sampler) show(p string) string {
	rel, err := filepath.Rel(s.root, p)
	if s.root == "/" || err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return p
	}
	return "/" + rel
}
