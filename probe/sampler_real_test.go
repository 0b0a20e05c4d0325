package probe

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSamplerOnThisMachine runs the real sampler against "/" and asserts
// only what holds on any Linux machine: host memory and CPU count are known,
// this process is found, CPU figures are unknown on the first sample, and
// every known figure is well-formed. It logs the rest, which depends on the
// machine (on the build machine: a hybrid cgroup layout, the process in the
// unified root, no memory controller there).
func TestSamplerOnThisMachine(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	s, err := NewSampler(SamplerParams{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := s.Sample(start)
	checkInvariants(t, r)
	if !r.Host.Memory.Known || !r.Host.MemoryTotal.Known || r.Host.MemoryTotal.Value <= 0 {
		t.Errorf("host memory unknown: %v / %v", r.Host.Memory, r.Host.MemoryTotal)
	}
	if r.Host.CPUs <= 0 {
		t.Errorf("host CPUs = %d", r.Host.CPUs)
	}
	if !r.Process.RSS.Known || r.Process.RSS.Value <= 0 || r.Process.PID != os.Getpid() {
		t.Errorf("own process: pid %d RSS %v", r.Process.PID, r.Process.RSS)
	}
	for name, sig := range map[string]Signal{"Host.CPU": r.Host.CPU, "Process.CPU": r.Process.CPU, "CPU": r.CPU} {
		if sig.Known || sig.Reason != warmingUp {
			t.Errorf("first sample: %s = %v, want unknown (%s)", name, sig, warmingUp)
		}
	}
	if r.Runtime.Goroutines <= 0 || r.Runtime.HeapBytes == 0 || r.Runtime.HeapGoal == 0 {
		t.Errorf("runtime figures: %+v", r.Runtime)
	}

	burn(t, 50*time.Millisecond) // 5 clock ticks of CPU, for the counters to move
	r = s.Sample(time.Now())
	checkInvariants(t, r)
	if !r.Process.CPU.Known || r.Process.CPU.Value <= 0 {
		t.Errorf("second sample: our process used CPU, got %v", r.Process.CPU)
	}
	if r.Host.CPU.Known == (r.Host.CPU.Reason != "") {
		t.Errorf("host CPU: %v", r.Host.CPU)
	}
	t.Logf("CPU %v from %s, memory %v from %s", r.CPU, r.CPUFrom, r.Memory, r.MemoryFrom)
	t.Logf("host %+v", r.Host)
	t.Logf("process %+v", r.Process)
	t.Logf("cgroup %+v", r.Cgroup)
	t.Logf("runtime %+v", r.Runtime)
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
