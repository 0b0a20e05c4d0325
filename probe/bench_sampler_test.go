package probe

import (
	"testing"
	"time"
)

// BenchmarkSample is one resource sample from every source: host CPU and
// memory, the process, the cgroups' files, host PSI and the Go runtime.
// "real" reads this machine's / for sluice itself (on the build machine: no
// cgroup with a limit, so no cgroup file); "tree" reads the limited fake
// tree, a cgroup v2 with every file (8); "tree-v1" the hybrid fake tree,
// cgroup v1 limits (8 files in 3 hierarchies) and v2 PSI (2).
func BenchmarkSample(b *testing.B) {
	root, hybrid := b.TempDir(), b.TempDir()
	copyTree(b, "testdata/limited", root)
	copyTree(b, "testdata/hybrid", hybrid)
	for _, c := range []struct {
		name string
		p    SamplerParams
	}{
		{"real", SamplerParams{}},
		{"tree", SamplerParams{Root: root, PID: 4242}},
		{"tree-v1", SamplerParams{Root: hybrid, PID: 4242}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := NewSampler(c.p)
			if err != nil {
				b.Fatal(err)
			}
			now := time.Unix(0, 0)
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(250 * time.Millisecond)
				s.Sample(now)
			}
		})
	}
}

// BenchmarkSampleSources splits the real sample by source, to show where
// its time goes: gopsutil's four /proc reads (opened anew each time) and our
// kept-open cgroup and PSI files.
func BenchmarkSampleSources(b *testing.B) {
	s, err := NewSampler(SamplerParams{})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	s.Sample(now)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"host-cpu/gopsutil", func() { hostCPUTimes(s.ctx) }},
		{"host-memory/gopsutil", func() { hostMemory(s.ctx) }},
		{"process-cpu/gopsutil", func() { processCPU(s.ctx, s.proc) }},
		{"process-rss/gopsutil", func() { processRSS(s.ctx, s.proc) }},
		{"host-psi", func() { s.hostPSI.read(&s.rd) }},
		{"cgroup", func() { var g Cgroup; s.sampleCgroup(now, &g) }},
		{"go-runtime", func() { s.rt.read() }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(250 * time.Millisecond)
				c.f()
			}
		})
	}
}
