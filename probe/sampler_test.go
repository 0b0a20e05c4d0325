package probe

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// want is what one Signal of a Resources should be: a float64 is a known
// value, a string is an unknown one whose reason contains it.
type want map[string]any

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// The figures the fake trees of TestSamplerTrees share.
var (
	hostWant = want{ // the same host in every tree
		"Host.CPU": 0.75, "Host.Memory": 0.75, "Host.MemoryTotal": 16000000 * 1024.0,
	}
	svc     = want{"Process.RSS": 500 * float64(os.Getpagesize())} // the service's
	hostPSI = want{
		"Host.Pressure.CPUSome": 0.05, "Host.Pressure.CPUFull": 0.0,
		"Host.Pressure.MemorySome": 0.02, "Host.Pressure.MemoryFull": 0.01,
	}
	cgroupPSIs = want{
		"CPUPressure":             0.125,
		"Cgroup.Pressure.CPUSome": 0.125, "Cgroup.Pressure.CPUFull": 0.03,
		"Cgroup.Pressure.MemorySome": 0.01, "Cgroup.Pressure.MemoryFull": 0.005,
	}
	cgroupMem = want{"Cgroup.MemoryWorkingSet": float64(256 << 20), "Cgroup.MemoryLimit": float64(512 << 20), "Cgroup.Memory": 0.5}
	// The share of the host's memory the process's RSS is.
	rssShare = 500 * float64(os.Getpagesize()) / (16000000 * 1024)
)

// The PIDs TestSamplerTrees watches: the service's (as probe.pid_file
// says) and sluice's own.
const service, sluice = 4242, 0

// samplerTree is a case of TestSamplerTrees.
type samplerTree struct {
	name, tree    string
	p             SamplerParams
	edit          map[string]string // files written over the tree before sampling
	first, second []want
	from          [3]string // CPUFrom, MemoryFrom, CPUPressureFrom
	source        [3]string // in CPUSource, MemorySource, CPUPressureSource
}

// samplerTrees are the cases of TestSamplerTrees.
var samplerTrees = []samplerTree{
	{
		name: "limited", tree: "limited", p: SamplerParams{PID: service},
		first: []want{hostPSI, cgroupPSIs, cgroupMem, {
			"CPU": warmingUp, "Host.CPU": warmingUp, "Process.CPU": warmingUp,
			"Cgroup.CPU": warmingUp, "Cgroup.Throttled": warmingUp,
			"Cgroup.CPULimit": 1.5, "Memory": 0.5,
		}},
		second: []want{hostWant, hostPSI, cgroupPSIs, cgroupMem, {
			"CPU": 0.5, "Memory": 0.5, "Cgroup.CPU": 0.5, "Cgroup.CPULimit": 1.5, "Cgroup.Throttled": 0.5,
			"Process.CPU": 0.25,
		}},
		from: [3]string{"cgroup", "cgroup", "cgroup"},
		source: [3]string{"cgroup v2 /sys/fs/cgroup/kubepods/pod1/c1 (cpu.max 1.5 cores)",
			"cgroup v2 /sys/fs/cgroup/kubepods/pod1/c1 (working set of memory.max 512 MiB)",
			"psi some avg10 of cgroup v2 /sys/fs/cgroup/kubepods/pod1/c1"},
	},
	{
		// sluice in the service's container: its cgroup holds the
		// service too, and is the guarded one.
		name: "limited/shared", tree: "limited", p: SamplerParams{PID: sluice},
		second: []want{hostWant, cgroupPSIs, cgroupMem, {"CPU": 0.5, "Memory": 0.5}},
		from:   [3]string{"cgroup", "cgroup", "cgroup"},
		source: [3]string{"/kubepods/pod1/c1 (cpu.max 1.5 cores)", "/kubepods/pod1/c1 (working set of memory.max 512 MiB)", "/kubepods/pod1/c1"},
	},
	{
		// A systemd service without limits: its own CPU of the host's
		// cores, its RSS of the host's memory, its cgroup's pressure.
		name: "unlimited", tree: "unlimited", p: SamplerParams{PID: service},
		first: []want{{"Memory": rssShare, "Cgroup.CPULimit": "no CPU limit on process 4242's cgroup", "Cgroup.MemoryLimit": "no memory limit on"}},
		second: []want{hostWant, hostPSI, cgroupPSIs, {
			"CPU": 0.25, "Process.CPU": 0.25, "Memory": rssShare,
			"Cgroup.CPU":    "no CPU limit on process 4242's cgroup /sys/fs/cgroup/system.slice/app.service or above",
			"Cgroup.Memory": "no memory limit on process 4242's cgroup",
		}},
		from: [3]string{"process", "process", "cgroup"},
		source: [3]string{"process 4242 (its CPU time of the host's 4 CPUs; no CPU limit on process 4242's cgroup /sys/fs/cgroup/system.slice/app.service or above)",
			"process 4242 RSS of the host's 15.3 GiB (no memory limit on",
			"psi some avg10 of cgroup v2 /sys/fs/cgroup/system.slice/app.service (no cpu limit)"},
	},
	{
		// sluice in that service's cgroup: no limit, so no CPU or memory
		// utilisation, but the cgroup's pressure.
		name: "unlimited/shared", tree: "unlimited", p: SamplerParams{PID: sluice},
		second: []want{hostWant, cgroupPSIs, {
			"CPU":    "none: no CPU limit on sluice's cgroup /sys/fs/cgroup/system.slice/app.service or above: CPU utilisation has no allotment",
			"Memory": "none: no memory limit on sluice's cgroup",
		}},
		from: [3]string{"", "", "cgroup"},
		source: [3]string{"none: no CPU limit on sluice's cgroup", `or measure the whole host with probe.source = "host"`,
			"app.service (no cpu limit)"},
	},
	{
		name: "cpuset", tree: "cpuset", p: SamplerParams{PID: service},
		second: []want{hostWant, {
			"CPU": 0.375, "Cgroup.CPU": 0.375, "Cgroup.CPULimit": 2.0, // 0.75 s over 2 CPUs
			"Process.CPU": 0.5, // 1 s over the 2 CPUs of its affinity
			"Memory":      rssShare, "Cgroup.MemoryLimit": "no memory limit",
		}},
		from:   [3]string{"cgroup", "process", "cgroup"},
		source: [3]string{"/sys/fs/cgroup/pinned (cpuset 2 CPUs)", "process 4242 RSS", "pinned"},
	},
	{
		name: "nopsi", tree: "nopsi", p: SamplerParams{PID: service},
		second: []want{hostWant, cgroupMem, {
			"CPU": 0.5, "Memory": 0.5,
			"CPUPressure":                "kubepods/pod1/c1/cpu.pressure (a kernel without PSI",
			"Host.Pressure.CPUSome":      "PSI not available: ",
			"Host.Pressure.MemoryFull":   "proc/pressure/memory: no such file",
			"Cgroup.Pressure.CPUFull":    "kubepods/pod1/c1/cpu.pressure (a kernel without PSI",
			"Cgroup.Pressure.MemorySome": "a kernel without PSI",
		}},
		from:   [3]string{"cgroup", "cgroup", ""},
		source: [3]string{"c1 (cpu.max 1.5 cores)", "c1 (working set", "none: no "},
	},
	{
		// cgroup v1: CFS quota 2 cores, 0.75 s used; 512 MiB used less
		// 128 MiB inactive file of 1 GiB; no PSI without cgroup v2.
		name: "v1", tree: "v1", p: SamplerParams{PID: service},
		second: []want{hostWant, hostPSI, {
			"CPU": 0.375, "Cgroup.CPU": 0.375, "Cgroup.CPULimit": 2.0, "Cgroup.Throttled": 0.2,
			"Memory": 0.375, "Cgroup.Memory": 0.375, "Cgroup.MemoryLimit": float64(1 << 30), "Cgroup.MemoryWorkingSet": float64(384 << 20),
			"CPUPressure": "cgroup v2 is not mounted", "Cgroup.Pressure.CPUSome": "only cgroup v2 has pressure",
		}},
		from: [3]string{"cgroup", "cgroup", ""},
		source: [3]string{"cgroup v1 /sys/fs/cgroup/cpu,cpuacct/user.slice (cfs quota 2 cores)",
			"cgroup v1 /sys/fs/cgroup/memory/user.slice (working set of memory.limit_in_bytes 1 GiB)", "none: cgroup v2 is not mounted"},
	},
	{
		// The build machine's layout: v1 controllers each in a
		// hierarchy of its own, PSI from the v2 cgroup of the same path.
		name: "hybrid", tree: "hybrid", p: SamplerParams{PID: service},
		second: []want{hostWant, hostPSI, cgroupPSIs, {
			"CPU": 0.5, "Cgroup.CPULimit": 0.5, "Cgroup.Throttled": 0.5,
			"Memory": 0.5, "Cgroup.MemoryWorkingSet": float64(128 << 20), "Cgroup.MemoryLimit": float64(256 << 20),
		}},
		from: [3]string{"cgroup", "cgroup", "cgroup"},
		source: [3]string{"cgroup v1 /sys/fs/cgroup/cpu/app (cfs quota 0.5 cores)",
			"cgroup v1 /sys/fs/cgroup/memory/app (working set of memory.limit_in_bytes 256 MiB)",
			"psi some avg10 of cgroup v2 /sys/fs/cgroup/unified/app"},
	},
	{
		// sluice in the root cgroups (as on the build machine): the
		// host, which is measured only when asked.
		name: "hybrid/root", tree: "hybrid", p: SamplerParams{PID: sluice},
		second: []want{hostWant, hostPSI, {
			"CPU":         "none: sluice's cgroup is the root cgroup ",
			"Memory":      "none: sluice's cgroup is the root cgroup ",
			"CPUPressure": "none: sluice's cgroup is the root cgroup v2, whose pressure is the host's",
			"Cgroup.CPU":  "sluice's cgroup is the root cgroup ",
		}},
		from: [3]string{"", "", ""},
		source: [3]string{"sluice's cgroup is the root cgroup " + "/sys/fs/cgroup/cpu, the whole host",
			"sluice's cgroup is the root cgroup /sys/fs/cgroup/memory", "root cgroup v2"},
	},
	{
		// Kubernetes: sluice's container has its own limits (not the
		// service's) and holds only sluice; the pod's cgroup above is
		// shared with the service and carries 2 cores and 1 GiB.
		name: "pod", tree: "pod", p: SamplerParams{PID: sluice},
		second: []want{hostWant, cgroupPSIs, {
			"CPU": 0.75, "Cgroup.CPULimit": 2.0, "Memory": 0.5, "Cgroup.MemoryLimit": float64(1 << 30),
		}},
		from: [3]string{"cgroup", "cgroup", "cgroup"},
		source: [3]string{"cgroup v2 /sys/fs/cgroup/kubepods/pod1 (cpu.max 2 cores), above sluice's cgroup /kubepods/pod1/sluice",
			"cgroup v2 /sys/fs/cgroup/kubepods/pod1 (working set of memory.max 1 GiB), above sluice's cgroup /kubepods/pod1/sluice",
			"psi some avg10 of cgroup v2 /sys/fs/cgroup/kubepods/pod1"},
	},
	{
		name: "pod/service", tree: "pod", p: SamplerParams{PID: service},
		second: []want{hostWant, cgroupPSIs, {"CPU": 0.75, "Memory": 0.5}},
		from:   [3]string{"cgroup", "cgroup", "cgroup"},
		source: [3]string{"/kubepods/pod1 (cpu.max 2 cores), above process 4242's cgroup /kubepods/pod1/app", "above process 4242's cgroup", "kubepods/pod1"},
	},
	{
		// A pod without a CPU limit: no CPU utilisation, the pod's
		// pressure instead.
		name: "pod/no cpu limit", tree: "pod", p: SamplerParams{PID: sluice},
		edit: map[string]string{"sys/fs/cgroup/kubepods/pod1/cpu.max": "max 100000\n"},
		second: []want{hostWant, cgroupPSIs, {
			"CPU":    "none: no CPU limit on the cgroups above sluice's cgroup /kubepods/pod1/sluice, which holds only sluice: CPU utilisation has no allotment to be measured against",
			"Memory": 0.5,
		}},
		from:   [3]string{"", "cgroup", "cgroup"},
		source: [3]string{"which holds only sluice", "kubepods/pod1 (working set of memory.max 1 GiB)", "/sys/fs/cgroup/kubepods/pod1 (no cpu limit)"},
	},
	{
		// sluice and the service in one container: its own limits.
		name: "pod/shared", tree: "pod", p: SamplerParams{PID: sluice},
		edit:   map[string]string{"sys/fs/cgroup/kubepods/pod1/sluice/cgroup.procs": "SELF\n4242\n"},
		second: []want{{"Cgroup.CPULimit": 0.5, "CPU": 1.0, "Memory": 1.0}}, // 1.5 s in 1 s of 0.5 cores; 512 MiB of 64 MiB
		from:   [3]string{"cgroup", "cgroup", "cgroup"},
		source: [3]string{"/kubepods/pod1/sluice (cpu.max 0.5 cores)", "sluice (working set of memory.max 64 MiB)", "kubepods/pod1/sluice"},
	},
	{
		// A private cgroup namespace: sluice's own cgroup looks like
		// the root, holds only sluice, and hides the pod's above it.
		name: "podns", tree: "podns", p: SamplerParams{PID: sluice},
		second: []want{hostWant, {
			"CPU":         "the cgroups above " + "/sys/fs/cgroup are hidden from sluice (a private cgroup namespace?), a pod-level cgroup among them",
			"Memory":      "which holds only sluice; the cgroups above",
			"CPUPressure": "its own, /, holds only sluice; the cgroups above",
		}},
		from:   [3]string{"", "", ""},
		source: [3]string{"none: no CPU limit on the cgroups above sluice's cgroup /, which holds only sluice", "private cgroup namespace", "private cgroup namespace"},
	},
	{
		name: "podns/shared", tree: "podns", p: SamplerParams{PID: sluice},
		edit:   map[string]string{"sys/fs/cgroup/cgroup.procs": "SELF\n4242\n"},
		second: []want{cgroupPSIs, {"CPU": 0.5, "Memory": 0.5}},
		from:   [3]string{"cgroup", "cgroup", "cgroup"},
		source: [3]string{"cgroup v2 /sys/fs/cgroup (cpu.max 0.5 cores)", "(working set of memory.max 64 MiB)", "of cgroup v2 /sys/fs/cgroup"},
	},
	{
		name: "host", tree: "limited", p: SamplerParams{Host: true},
		second: []want{hostWant, hostPSI, {
			"CPU": 0.75, "Memory": 0.75, "CPUPressure": 0.05,
			"Cgroup.CPU": `probe.source = "host"`, "Cgroup.Pressure.CPUSome": `probe.source = "host"`,
		}},
		from: [3]string{"host", "host", "host"},
		source: [3]string{`host (probe.source = "host"): the busy share of its 4 CPUs`,
			`host (probe.source = "host"): 1 − MemAvailable/MemTotal of the host's 15.3 GiB`,
			`host (probe.source = "host"): psi some avg10 of `},
	},
	{
		name: "outside", tree: "outside", p: SamplerParams{PID: service},
		second: []want{hostWant, {
			"CPU": 0.25, "Cgroup.CPU": "cgroup /../sibling/c2 is outside this process's cgroup namespace",
			"CPUPressure": "none: cgroup /../sibling/c2 is outside",
		}},
		from:   [3]string{"process", "process", ""},
		source: [3]string{"process 4242 (its CPU time of the host's 4 CPUs; cgroup /../sibling/c2 is outside", "outside", "outside"},
	},
	{
		name: "malformed", tree: "malformed", p: SamplerParams{PID: service},
		first: []want{{
			"Host.CPU":                   `host CPU: no cpu line in /proc/stat`,
			"Host.Memory":                `host memory: strconv.ParseUint: parsing "lots"`,
			"Process.CPU":                "process 4242: gopsutil panicked on malformed input",
			"Process.RSS":                "process 4242: ",
			"Cgroup.CPULimit":            `/sys/fs/cgroup/bad or above (no CPU limit: `,
			"Cgroup.Throttled":           `bad/cpu.max: not a number: "abc")`,
			"Cgroup.MemoryLimit":         `bad/memory.max: not a number: "-5"`,
			"Cgroup.Pressure.CPUSome":    `cpu.pressure: line 1: avg10: not a number: "bogus"`,
			"Cgroup.Pressure.MemoryFull": `memory.pressure: line 1: want "some" or "full"`,
			"Host.Pressure.CPUSome":      "avg10 500 is over 100%",
			"Host.Pressure.MemorySome":   `no "some" line`,
			"CPU":                        "process 4242: ", "Memory": "process 4242: ",
			"CPUPressure": `cpu.pressure: line 1: avg10: not a number: "bogus"`,
		}},
		from: [3]string{"process", "process", "cgroup"},
	},
	{
		// Valid limits over the malformed counters: these are read now.
		name: "malformed/counters", tree: "malformed", p: SamplerParams{PID: service},
		edit: map[string]string{"sys/fs/cgroup/bad/cpu.max": "100000 100000\n", "sys/fs/cgroup/bad/memory.max": "1048576\n"},
		first: []want{{
			"CPU":              `bad/cpu.stat: line 1: want "key value"`,
			"Cgroup.Throttled": `bad/cpu.stat: line 1: want "key value"`,
			"Memory":           `memory.current: not a number: "12abc"`,
		}},
		second: []want{{
			"Cgroup.CPU": `bad/cpu.stat: line 1: usage_usec: not a number: "12x"`,
		}},
		from: [3]string{"cgroup", "cgroup", "cgroup"},
	},
}

// TestSamplerTrees samples each fake tree in testdata twice, 1 s apart, with
// the CPU counters of NAME.next/ in between, watching the service (PID 4242,
// as probe.pid_file does), sluice itself (PID 0) or the host, and checks
// where each guarded signal comes from and what every signal reports.
// Figures follow from the trees' files (see testdata/README.md): e.g. the
// limited cgroup used 0.75 s of CPU in 1 s against a 1.5-core quota (0.5),
// and its working set is 384 MiB − 128 MiB inactive file of 512 MiB.
func TestSamplerTrees(t *testing.T) {
	for _, c := range samplerTrees {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			copyTree(t, filepath.Join("testdata", c.tree), root)
			for rel, content := range c.edit {
				writeFile(t, filepath.Join(root, rel), selfPID(content))
			}
			c.p.Root = root
			s, err := NewSampler(c.p)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			src := s.Sources()
			r := s.Sample(t0)
			checkInvariants(t, r)
			checkWants(t, "first sample", r, c.first)
			if r.Sources() != src {
				t.Errorf("Sources() = %+v before the first sample, %+v in it", src, r.Sources())
			}

			copyTree(t, filepath.Join("testdata", c.tree+".next"), root)
			r = s.Sample(t0.Add(time.Second))
			checkInvariants(t, r)
			checkWants(t, "second sample", r, c.second)
			if c.p.PID == service && c.tree != "malformed" {
				checkWants(t, "second sample", r, []want{svc})
			}
			if got := [3]string{r.CPUFrom, r.MemoryFrom, r.CPUPressureFrom}; got != c.from {
				t.Errorf("CPUFrom, MemoryFrom, CPUPressureFrom = %q, want %q", got, c.from)
			}
			got := [3]string{r.CPUSource, r.MemorySource, r.CPUPressureSource}
			for i, w := range c.source {
				if !strings.Contains(got[i], w) {
					t.Errorf("source %d = %q, want it to contain %q", i, got[i], w)
				}
			}
			for i, sig := range []Signal{r.CPU, r.Memory, r.CPUPressure} {
				if from := [3]string{r.CPUFrom, r.MemoryFrom, r.CPUPressureFrom}[i]; from == "" && (sig.Known || sig.Reason != got[i]) {
					t.Errorf("signal %d has no source but is %v, want unknown (%s)", i, sig, got[i])
				}
			}
			if pid := map[bool]int{true: 4242, false: os.Getpid()}[c.p.PID != 0]; r.Time != t0.Add(time.Second) || r.Process.PID != pid || r.Host.CPUs != 4 && c.tree != "malformed" {
				t.Errorf("time %v pid %d cpus %d", r.Time, r.Process.PID, r.Host.CPUs)
			}
		})
	}
}

// selfPID puts this process's PID for SELF in a fake cgroup.procs.
func selfPID(content string) string {
	return strings.ReplaceAll(content, "SELF", strconv.Itoa(os.Getpid()))
}

// TestSamplerExplicitCgroup watches a cgroup given by path rather than
// found through the process: its own limits, on v2 and v1.
func TestSamplerExplicitCgroup(t *testing.T) {
	for _, c := range []struct {
		tree, cgroup string
		wants        want
		from         [3]string
		source       [3]string
	}{
		{"limited", "/sys/fs/cgroup/kubepods/pod1/c1",
			want{"Cgroup.CPULimit": 1.5, "Memory": 0.5, "CPUPressure": 0.125, "Process.RSS": "not found"}, // this test's own PID has no files in the tree
			[3]string{"cgroup", "cgroup", "cgroup"},
			[3]string{"cgroup v2 /sys/fs/cgroup/kubepods/pod1/c1 (cpu.max 1.5 cores)", "memory.max 512 MiB", "/kubepods/pod1/c1"}},
		// The pod's limits are on an ancestor; an explicit cgroup is taken
		// as it is.
		{"pod", "/sys/fs/cgroup/kubepods/pod1/app",
			want{"CPU": "none: cgroup ", "Memory": "no memory limit", "CPUPressure": 0.125},
			[3]string{"", "", "cgroup"},
			[3]string{"/kubepods/pod1/app has no CPU limit: no CFS quota and the cpuset has every CPU: CPU utilisation has no allotment",
				"none: cgroup ", "kubepods/pod1/app (no cpu limit)"}},
		// On v1 the same cgroup in the other hierarchies.
		{"v1", "/sys/fs/cgroup/memory/user.slice",
			want{"Cgroup.CPULimit": 2.0, "Memory": 0.375, "CPUPressure": "cgroup v2 is not mounted"},
			[3]string{"cgroup", "cgroup", ""},
			[3]string{"cgroup v1 /sys/fs/cgroup/cpu,cpuacct/user.slice (cfs quota 2 cores)", "memory/user.slice", "none"}},
		{"limited", "/proc",
			want{"Cgroup.Memory": "/proc is not a cgroup directory (no cgroup.procs)", "CPU": "none: "},
			[3]string{"", "", ""}, [3]string{"not a cgroup directory", "not a cgroup directory", "not a cgroup directory"}},
		{"limited", "/sys/fs/cgroup/nonesuch",
			want{"CPU": "nonesuch is not a cgroup directory"},
			[3]string{"", "", ""}, [3]string{"nonesuch", "nonesuch", "nonesuch"}},
	} {
		t.Run(c.tree+c.cgroup, func(t *testing.T) {
			root := t.TempDir()
			copyTree(t, "testdata/"+c.tree, root)
			s, err := NewSampler(SamplerParams{Root: root, Cgroup: c.cgroup})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r := s.Sample(t0)
			checkInvariants(t, r)
			checkWants(t, "explicit cgroup", r, []want{c.wants})
			if got := [3]string{r.CPUFrom, r.MemoryFrom, r.CPUPressureFrom}; got != c.from {
				t.Errorf("from = %q, want %q", got, c.from)
			}
			for i, got := range [3]string{r.CPUSource, r.MemorySource, r.CPUPressureSource} {
				if !strings.Contains(got, c.source[i]) {
					t.Errorf("source %d = %q, want it to contain %q", i, got, c.source[i])
				}
			}
		})
	}
}

// TestSamplerFollowsTheCgroup: a process that starts after the sampler, and
// a cgroup that is removed and comes back, are found again.
func TestSamplerFollowsTheCgroup(t *testing.T) {
	root := t.TempDir()
	copyTree(t, "testdata/limited", root)
	s, err := NewSampler(SamplerParams{Root: root, PID: 5000})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Sample(t0)
	checkWants(t, "no such process", r, []want{{
		"Process.CPU": "process 5000 not found", "Cgroup.CPULimit": "cannot find the cgroup", "CPU": "process 5000 not found",
	}})
	if r.CPUFrom != FromProcess {
		t.Errorf("CPUFrom %q before the process is there, want %q", r.CPUFrom, FromProcess)
	}
	writeFile(t, filepath.Join(root, "proc/5000/cgroup"), "0::/kubepods/pod1/c1\n")
	writeFile(t, filepath.Join(root, "proc/5000/status"), "Cpus_allowed_list:\t0-3\n")
	r = s.Sample(t0.Add(time.Second))
	checkWants(t, "process appeared", r, []want{{"Cgroup.CPULimit": 1.5}})
	if r.CPUFrom != FromCgroup {
		t.Errorf("CPUFrom %q once the process is there, want %q", r.CPUFrom, FromCgroup)
	}

	// A removed cgroup's open files fail to read on a real cgroupfs, and the
	// Sampler looks again at once. Plain files in a fake tree stay readable
	// through their open descriptors, so here it is the minutely refresh
	// that notices.
	dir := filepath.Join(root, "sys/fs/cgroup/kubepods/pod1/c1")
	if err := os.Rename(dir, dir+".gone"); err != nil {
		t.Fatal(err)
	}
	checkWants(t, "cgroup removed", s.Sample(t0.Add(time.Second+refreshEvery)), []want{{
		"Cgroup.Memory": "kubepods/pod1/c1 is not a cgroup directory",
	}})
	if err := os.Rename(dir+".gone", dir); err != nil {
		t.Fatal(err)
	}
	r = s.Sample(t0.Add(2*time.Second + refreshEvery))
	checkWants(t, "cgroup back", r, []want{{"Cgroup.Memory": 0.5, "Cgroup.CPU": warmingUp}})
	r = s.Sample(t0.Add(3*time.Second + refreshEvery))
	checkWants(t, "cgroup back, second sample", r, []want{{"Cgroup.CPU": 0.0}})
}

// TestSamplerFollowsLimits: a limit lifted, set again or changed (kubectl's
// in-place resize, systemctl set-property) moves the source within two
// samples, not a minute.
func TestSamplerFollowsLimits(t *testing.T) {
	root := t.TempDir()
	copyTree(t, "testdata/limited", root)
	s, err := NewSampler(SamplerParams{Root: root, PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c1 := filepath.Join(root, "sys/fs/cgroup/kubepods/pod1/c1")
	now := t0
	sample := func() Resources { now = now.Add(time.Second); return s.Sample(now) }
	if r := sample(); r.CPUFrom != FromCgroup || r.MemoryFrom != FromCgroup {
		t.Fatalf("from %q, %q", r.CPUFrom, r.MemoryFrom)
	}
	writeFile(t, filepath.Join(c1, "cpu.max"), "max 100000\n")
	writeFile(t, filepath.Join(c1, "memory.max"), "max\n")
	sample() // sees the limits gone
	if r := sample(); r.CPUFrom != FromProcess || r.MemoryFrom != FromProcess || !strings.Contains(r.CPUSource, "no CPU limit on process 4242's cgroup") {
		t.Errorf("limits lifted: from %q, %q: %s", r.CPUFrom, r.MemoryFrom, r.CPUSource)
	}
	writeFile(t, filepath.Join(c1, "cpu.max"), "200000 100000\n")
	if r := sample(); r.CPUFrom != FromProcess {
		t.Errorf("a limit set is found at the minutely refresh, not at once: from %q", r.CPUFrom)
	}
	now = now.Add(refreshEvery)
	if r := sample(); r.CPUFrom != FromCgroup || !strings.HasSuffix(r.CPUSource, "c1 (cpu.max 2 cores)") {
		t.Errorf("limit set: from %q: %s", r.CPUFrom, r.CPUSource)
	}
	writeFile(t, filepath.Join(c1, "cpu.max"), "50000 100000\n")
	sample() // sees the new limit, reads against it
	if r := sample(); r.CPUFrom != FromCgroup || !strings.HasSuffix(r.CPUSource, "c1 (cpu.max 0.5 cores)") || r.Cgroup.CPULimit.Value != 0.5 {
		t.Errorf("limit changed: %s, limit %v", r.CPUSource, r.Cgroup.CPULimit)
	}
}

// TestPseudoFileRereads: a kept-open file shows each new content of the same
// file, and a read that fails (here: its descriptor closed behind its back)
// reopens the path.
func TestPseudoFileRereads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.current")
	writeFile(t, path, "1\n")
	var files fileSet
	f := files.open(path)
	defer files.closeAll()
	var buf []byte
	read := func(want string) {
		t.Helper()
		data, err := f.read(&buf)
		if err != nil || string(data) != want {
			t.Fatalf("read = %q, %v; want %q", data, err, want)
		}
	}
	read("1\n")
	writeFile(t, path, "22\n")
	read("22\n")
	closeFile(f.fd) // behind the pseudoFile's back
	read("22\n")
	writeFile(t, path, strings.Repeat("x", 20000)) // larger than the buffer
	read(strings.Repeat("x", 20000))
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	files.closeAll()
	if _, err := f.read(&buf); !missing(err) {
		t.Fatalf("read of a removed file: %v, want not-exist", err)
	}
}

// TestSamplerCountersGoingBackwards: a counter that drops (a cgroup
// recreated under the same name) restarts the rate instead of going negative.
func TestSamplerCountersGoingBackwards(t *testing.T) {
	root := t.TempDir()
	copyTree(t, "testdata/limited", root)
	copyTree(t, "testdata/limited.next", root)
	s, err := NewSampler(SamplerParams{Root: root, PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	s.Sample(t0)
	copyTree(t, "testdata/limited", root)
	checkWants(t, "backwards", s.Sample(t0.Add(time.Second)), []want{{
		"Cgroup.CPU": "counter went backwards", "Process.CPU": "counter went backwards", "Host.CPU": "counter went backwards",
	}})
	checkWants(t, "same time again", s.Sample(t0.Add(time.Second)), []want{{
		"Cgroup.CPU": "no time elapsed", "Host.CPU": "no CPU time elapsed",
	}})
}

func TestSamplerParamsValidate(t *testing.T) {
	err := SamplerParams{PID: -1, Cgroup: "rel/path", Root: "also/rel"}.Validate()
	if err == nil {
		t.Fatal("bad params accepted")
	}
	for _, w := range []string{"probe: pid must be positive", "probe: cgroup must be an absolute path", "probe: root must be an absolute path"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if _, err := NewSampler(SamplerParams{PID: -1}); err == nil {
		t.Error("NewSampler accepted a negative PID")
	}
}

// TestSamplerAllocationsDoNotGrow: the allocations of a Sample are the same
// after 500 samples as after 10: no buffer or history grows with time.
func TestSamplerAllocationsDoNotGrow(t *testing.T) {
	root := t.TempDir()
	copyTree(t, "testdata/limited", root)
	s, err := NewSampler(SamplerParams{Root: root, PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	sample := func() { now = now.Add(time.Second); s.Sample(now) }
	for range 10 {
		sample()
	}
	// Runs of refreshEvery samples, 1 s apart, each hold one refresh.
	runs := int(refreshEvery / time.Second)
	early := testing.AllocsPerRun(runs, sample)
	for range 500 {
		sample()
	}
	if late := testing.AllocsPerRun(runs, sample); late != early {
		t.Fatalf("allocations per sample grew from %v to %v", early, late)
	}
}

// checkWants compares the signals named in wants with r's.
func checkWants(t *testing.T, when string, r Resources, wants []want) {
	t.Helper()
	for _, w := range wants {
		for path, exp := range w {
			got := signalAt(t, r, path)
			switch exp := exp.(type) {
			case float64:
				if !got.Known || math.Abs(got.Value-exp) > 1e-9*max(1, math.Abs(exp)) {
					t.Errorf("%s: %s = %v, want %v", when, path, got, exp)
				}
			case string:
				if got.Known || !strings.Contains(got.Reason, exp) {
					t.Errorf("%s: %s = %v, want unknown with reason containing %q", when, path, got, exp)
				}
			default:
				t.Fatalf("bad want %T", exp)
			}
		}
	}
}

// signalAt returns the Signal at a dotted field path of r.
func signalAt(t *testing.T, r Resources, path string) Signal {
	t.Helper()
	v := reflect.ValueOf(r)
	for _, f := range strings.Split(path, ".") {
		v = v.FieldByName(f)
		if !v.IsValid() {
			t.Fatalf("no field %s", path)
		}
	}
	s, ok := v.Interface().(Signal)
	if !ok {
		t.Fatalf("%s is a %s, not a Signal", path, v.Type())
	}
	return s
}

// checkInvariants checks every Signal in r: a known one has no reason, an
// unknown one has a reason and a zero value, and ratios stay within 0–1.
func checkInvariants(t *testing.T, r Resources) {
	t.Helper()
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		if s, ok := v.Interface().(Signal); ok {
			switch {
			case s.Known && s.Reason != "":
				t.Errorf("%s is known (%v) but has a reason %q", path, s.Value, s.Reason)
			case !s.Known && (s.Reason == "" || s.Value != 0):
				t.Errorf("%s is unknown with value %v and reason %q", path, s.Value, s.Reason)
			case s.Known && !strings.Contains(path, "Limit") && !strings.Contains(path, "Total") &&
				!strings.Contains(path, "RSS") && !strings.Contains(path, "WorkingSet") && (s.Value < 0 || s.Value > 1):
				t.Errorf("ratio %s = %v is outside 0..1", path, s.Value)
			}
			return
		}
		if v.Kind() == reflect.Struct {
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(strings.TrimPrefix(path+"."+v.Type().Field(i).Name, "."), v.Field(i))
				}
			}
		}
	}
	walk("", reflect.ValueOf(r))
}

// copyTree copies the files under src into dst, replacing what is there.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		writeFile(t, filepath.Join(dst, rel), selfPID(string(data)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSamplerClose: Close releases the open files and later samples say so.
func TestSamplerClose(t *testing.T) {
	root := t.TempDir()
	copyTree(t, "testdata/limited", root)
	s, err := NewSampler(SamplerParams{Root: root, PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	s.Sample(t0)
	open := 0
	for _, f := range append(s.files.host.files, s.files.cgroup.files...) {
		if f.fd != noFile {
			open++
		}
	}
	if open != 10 { // 2 host PSI files, 8 cgroup files
		t.Fatalf("%d files open after a sample, want 10", open)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range append(s.files.host.files, s.files.cgroup.files...) {
		if f.fd != noFile {
			t.Fatalf("%s still open after Close", f.path)
		}
	}
	r := s.Sample(t0.Add(time.Second))
	checkInvariants(t, r)
	checkWants(t, "closed", r, []want{{"CPU": "sampler closed", "CPUPressure": "sampler closed", "Host.Memory": "sampler closed", "Cgroup.Pressure.CPUSome": "sampler closed"}})
	if src := s.Sources(); src.CPU.Usable() || !strings.Contains(src.Memory.Text, "sampler closed") {
		t.Errorf("Sources of a closed sampler: %+v", src)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
