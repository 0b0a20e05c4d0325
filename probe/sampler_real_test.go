//go:build unix

package probe

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSamplerOnThisMachine runs the real sampler against "/", watching this
// process, a process by PID, and the host, and asserts only what holds on
// any Linux machine: host memory and CPU count are known, the process is
// found, CPU figures are unknown on the first sample, a guarded signal
// without a source says why, and every known figure is well-formed. It logs
// the rest, which depends on the machine (on the build machine: a hybrid
// cgroup layout with the process in root cgroups and no limit anywhere, so
// that watching sluice itself finds no source; watching a PID finds its
// process figures).
func TestSamplerOnThisMachine(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	for _, c := range []struct {
		name string
		p    SamplerParams
	}{
		{"self", SamplerParams{}},
		{"pid", SamplerParams{PID: os.Getpid()}},
		{"host", SamplerParams{Host: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewSampler(c.p)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			start := time.Now()
			r := s.Sample(start)
			checkInvariants(t, r)
			checkGuarded(t, "first sample", r)
			if !r.Host.Memory.Known || !r.Host.MemoryTotal.Known || r.Host.MemoryTotal.Value <= 0 {
				t.Errorf("host memory unknown: %v / %v", r.Host.Memory, r.Host.MemoryTotal)
			}
			if r.Host.CPUs <= 0 || r.Process.CPUs <= 0 || r.Process.CPUs > r.Host.CPUs {
				t.Errorf("host CPUs %d, process CPUs %d", r.Host.CPUs, r.Process.CPUs)
			}
			if !r.Process.RSS.Known || r.Process.RSS.Value <= 0 || r.Process.PID != os.Getpid() {
				t.Errorf("own process: pid %d RSS %v", r.Process.PID, r.Process.RSS)
			}
			for name, sig := range map[string]Signal{"Host.CPU": r.Host.CPU, "Process.CPU": r.Process.CPU} {
				if sig.Known || sig.Reason != warmingUp {
					t.Errorf("first sample: %s = %v, want unknown (%s)", name, sig, warmingUp)
				}
			}
			if r.CPUFrom != "" && r.CPU.Reason != warmingUp {
				t.Errorf("first sample: CPU from %q = %v, want unknown (%s)", r.CPUFrom, r.CPU, warmingUp)
			}
			switch {
			case c.p.Host && (r.CPUFrom != FromHost || r.MemoryFrom != FromHost):
				t.Errorf("host: CPU from %q, memory from %q", r.CPUFrom, r.MemoryFrom)
			case c.p.PID != 0 && (r.CPUFrom == "" || r.MemoryFrom == ""):
				t.Errorf("a watched process always has a source: CPU from %q, memory from %q", r.CPUFrom, r.MemoryFrom)
			}
			if r.Runtime.Goroutines <= 0 || r.Runtime.HeapBytes == 0 || r.Runtime.HeapGoal == 0 {
				t.Errorf("runtime figures: %+v", r.Runtime)
			}

			burn(t, 50*time.Millisecond) // 5 clock ticks of CPU, for the counters to move
			r = s.Sample(time.Now())
			checkInvariants(t, r)
			checkGuarded(t, "second sample", r)
			if !r.Process.CPU.Known || r.Process.CPU.Value <= 0 {
				t.Errorf("second sample: our process used CPU, got %v", r.Process.CPU)
			}
			if r.Host.CPU.Known == (r.Host.CPU.Reason != "") {
				t.Errorf("host CPU: %v", r.Host.CPU)
			}
			if r.CPUFrom == FromProcess && r.CPU != r.Process.CPU {
				t.Errorf("CPU from the process is %v, the process's %v", r.CPU, r.Process.CPU)
			}
			t.Logf("cpu %v: %s", r.CPU, r.CPUSource)
			t.Logf("memory %v: %s", r.Memory, r.MemorySource)
			t.Logf("cpu pressure %v: %s", r.CPUPressure, r.CPUPressureSource)
			t.Logf("host %+v", r.Host)
			t.Logf("process %+v", r.Process)
			t.Logf("cgroup %+v", r.Cgroup)
		})
	}
}

// checkGuarded checks that each guarded signal has a source description,
// and that one without a source is unknown and says why.
func checkGuarded(t *testing.T, when string, r Resources) {
	t.Helper()
	for _, g := range []struct {
		name string
		sig  Signal
		src  Source
	}{{"CPU", r.CPU, Source{r.CPUFrom, r.CPUSource}}, {"Memory", r.Memory, Source{r.MemoryFrom, r.MemorySource}},
		{"CPUPressure", r.CPUPressure, Source{r.CPUPressureFrom, r.CPUPressureSource}}} {
		switch {
		case g.src.Text == "":
			t.Errorf("%s: %s has no source description", when, g.name)
		case !g.src.Usable() && (g.sig.Known || g.sig.Reason != g.src.Text || !strings.HasPrefix(g.src.Text, "none: ")):
			t.Errorf("%s: %s has no source (%q) but is %v", when, g.name, g.src.Text, g.sig)
		}
	}
}

// TestSamplerRealCgroupV1 puts a busy process into cgroups this test makes
// on the machine's own cgroup v1 hierarchies (cpu with a CFS quota of half
// a core, cpuacct, memory with a 64 MiB limit) and, where cgroup v2 is
// mounted, a v2 cgroup for its pressure, then watches it by PID as
// probe.pid_file does: the sampler must pick those cgroups and read them.
// It needs root and cgroup v1 controllers (the build machine's hybrid
// layout); elsewhere it is skipped, saying why.
func TestSamplerRealCgroupV1(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a busy process")
	}
	made := makeCgroups(t, "sluice-probe-test-"+strconv.Itoa(os.Getpid()))
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(made["cpu"], "cpu.cfs_period_us"), "100000")
	write(filepath.Join(made["cpu"], "cpu.cfs_quota_us"), "50000")
	write(filepath.Join(made["memory"], "memory.limit_in_bytes"), strconv.Itoa(64<<20))

	// The busy process: this test binary, in TestHelperBusy. A process
	// moved into a v1 memory cgroup leaves the pages it has charged where
	// they were, so it touches its memory once it is in.
	spin := exec.Command(os.Args[0], "-test.run=^TestHelperBusy$")
	spin.Env = append(os.Environ(), "SLUICE_PROBE_BUSY=1")
	in, err := spin.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := spin.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the cgroups are removed: cleanups run last first
		spin.Process.Kill()
		spin.Wait()
	})
	pid := strconv.Itoa(spin.Process.Pid)
	for _, dir := range made {
		write(filepath.Join(dir, "cgroup.procs"), pid)
	}
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("busy process: %q, %v", line, err)
	}

	s, err := NewSampler(SamplerParams{PID: spin.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.Sample(time.Now())
	checkInvariants(t, r)
	if r.CPUFrom != FromCgroup || r.CPUSource != "cgroup v1 "+made["cpu"]+" (cfs quota 0.5 cores)" {
		t.Fatalf("CPU from %q: %s", r.CPUFrom, r.CPUSource)
	}
	if r.MemoryFrom != FromCgroup || r.MemorySource != "cgroup v1 "+made["memory"]+" (working set of memory.limit_in_bytes 64 MiB)" {
		t.Fatalf("memory from %q: %s", r.MemoryFrom, r.MemorySource)
	}
	if dir := made["unified"]; dir != "" && (r.CPUPressureFrom != FromCgroup || r.CPUPressureSource != "psi some avg10 of cgroup v2 "+dir) {
		t.Errorf("CPU pressure from %q: %s", r.CPUPressureFrom, r.CPUPressureSource)
	}
	// It holds 16 MiB of the 64.
	if !r.Cgroup.CPULimit.Known || r.Cgroup.CPULimit.Value != 0.5 || !r.Memory.Known || r.Memory.Value < 0.25 ||
		r.Cgroup.MemoryLimit.Value != 64<<20 {
		t.Errorf("limit %v, memory %v of %v", r.Cgroup.CPULimit, r.Memory, r.Cgroup.MemoryLimit)
	}

	// Wait for the process to use 50 ms of CPU in its cgroup, as the
	// kernel counts it: an event, not a time.
	usage := func() uint64 {
		b, err := os.ReadFile(filepath.Join(made["cpuacct"], "cpuacct.usage"))
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for end := usage() + 50e6; usage() < end; {
		syscall.Select(0, nil, nil, nil, &syscall.Timeval{Usec: 10000}) // yield the CPU to it between reads
	}
	r = s.Sample(time.Now())
	checkInvariants(t, r)
	if !r.CPU.Known || r.CPU.Value <= 0 || !r.Cgroup.Throttled.Known {
		t.Errorf("second sample: CPU %v, throttled %v", r.CPU, r.Cgroup.Throttled)
	}
	if made["unified"] != "" && !r.CPUPressure.Known {
		t.Errorf("CPU pressure %v", r.CPUPressure)
	}
	t.Logf("cpu %v: %s (throttled %v)", r.CPU, r.CPUSource, r.Cgroup.Throttled)
	t.Logf("memory %v: %s", r.Memory, r.MemorySource)
	t.Logf("cpu pressure %v: %s", r.CPUPressure, r.CPUPressureSource)
}

// makeCgroups makes a cgroup called name in the cgroup v1 cpu, cpuacct and
// memory hierarchies and, where it is mounted, in cgroup v2 ("unified"),
// removed when t ends, and returns the directory made in each; it skips t
// where it cannot.
func makeCgroups(t *testing.T, name string) map[string]string {
	t.Helper()
	made := map[string]string{} // hierarchy → directory made
	for _, h := range []string{"cpu", "cpuacct", "memory", "unified"} {
		mp := "/sys/fs/cgroup/" + h
		if _, err := os.Stat(filepath.Join(mp, "cgroup.procs")); err != nil {
			if h == "unified" {
				continue // PSI is optional
			}
			t.Skipf("no cgroup v1 %s hierarchy at %s: %v", h, mp, err)
		}
		if h == "cpu" {
			if _, err := os.Stat(filepath.Join(mp, "cpu.cfs_quota_us")); err != nil {
				t.Skipf("%s is not a cgroup v1 cpu hierarchy: %v", mp, err)
			}
		}
		dir := filepath.Join(mp, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Skipf("cannot make a cgroup (not root?): %v", err)
		}
		made[h] = dir
		t.Cleanup(func() {
			if err := os.Remove(dir); err != nil {
				t.Errorf("removing %s: %v", dir, err)
			}
		})
	}
	return made
}

// TestHelperBusy is the busy process of TestSamplerRealCgroupV1, run as a
// child with SLUICE_PROBE_BUSY set: at a line on stdin it touches 16 MiB,
// says "ready" and spins until killed.
func TestHelperBusy(t *testing.T) {
	if os.Getenv("SLUICE_PROBE_BUSY") == "" {
		t.Skip("the child of TestSamplerRealCgroupV1")
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	mem := make([]byte, 16<<20)
	for i := range mem {
		mem[i] = byte(i)
	}
	os.Stdout.WriteString("ready\n")
	for x := 0; ; x++ {
		mem[x%len(mem)]++
	}
}

// burn spins until this process has used at least d more CPU time, as the
// kernel accounts it (getrusage), so that /proc/self/stat's tick-granular
// counters are sure to move however loaded the machine is. The spinning is
// the point: it waits for no event.
func burn(t *testing.T, d time.Duration) {
	cpuTime := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	x := 0
	for end := cpuTime() + d; cpuTime() < end; {
		for i := range 100000 {
			x += i
		}
	}
	_ = x
}
