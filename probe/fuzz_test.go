package probe

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Fuzz targets for every parser of outside input. Each checks that the
// parser never panics and that what it accepts is consistent. The seeds are
// real files and near misses; `go test` runs them, `go test -fuzz` explores.

func FuzzParseSingle(f *testing.F) {
	for _, s := range []string{"536870912\n", "max\n", "", "-5", "18446744073709551616", "1\n2"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, unlimited, err := parseSingle(data)
		if err != nil && (v != 0 || unlimited) {
			t.Fatalf("error %v with value %d unlimited %v", err, v, unlimited)
		}
	})
}

func FuzzParseCPUMax(f *testing.F) {
	for _, s := range []string{"150000 100000\n", "max 100000\n", "max\n", "0 0", "1 2 3", "\t7\t8\t\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q, p, err := parseCPUMax(data)
		if err == nil && p == 0 {
			t.Fatalf("accepted %q with period 0 (quota %d)", data, q)
		}
	})
}

func FuzzParseKeyed(f *testing.F) {
	for _, s := range []string{
		"usage_usec 1000000\nuser_usec 600000\nsystem_usec 400000\nnr_periods 100\nnr_throttled 10\n",
		"anon 201326592\ninactive_file 134217728\n", "usage_usec\n", "a b c\n", "\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out [3]uint64
		found, err := parseKeyed(data, cpuStatKeys[:], out[:])
		if found>>3 != 0 || err != nil && found != 0 {
			t.Fatalf("found %b, err %v", found, err)
		}
	})
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-3\n", "0-3,8,10-11", "3-1", "", "0-1048575", ",", "1-2-3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if n, err := parseCPUList(data); err == nil && n <= 0 {
			t.Fatalf("accepted %q as %d CPUs", data, n)
		}
	})
}

func FuzzParsePSI(f *testing.F) {
	for _, s := range []string{
		"some avg10=12.50 avg60=1.00 avg300=0.50 total=123\nfull avg10=3.00 avg60=0.00 avg300=0.00 total=7\n",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "some avg10=100.01", "full avg10=1", "some avg10=.5", "some =",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parsePSI(data)
		if err == nil && (p.some < 0 || p.some > 1 || p.full < 0 || p.full > 1) {
			t.Fatalf("accepted %q as %+v", data, p)
		}
	})
}

func FuzzParseProcCgroup(f *testing.F) {
	for _, s := range []string{"0::/kubepods/pod1/c1\n", "12:memory:/x\n0::/\n", "0::/../x", "garbage", "0::", ":::",
		"11:cpu,cpuacct:/a\n3:cpuset:/\n1:name=systemd:/b\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pc, err := parseProcCgroup(data)
		if err != nil {
			if pc != (procCgroups{}) {
				t.Fatalf("error %v with %+v", err, pc)
			}
			return
		}
		if pc.hasV2 != (pc.v2 != "") || pc.hasV2 && pc.v2[0] != '/' {
			t.Fatalf("accepted %q as v2 path %q", data, pc.v2)
		}
		for c, p := range pc.v1 {
			if p != "" && p[0] != '/' {
				t.Fatalf("accepted %q as %s path %q", data, controllerNames[c], p)
			}
		}
	})
}

func FuzzParseMountinfo(f *testing.F) {
	if real, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		f.Add(real)
	}
	for _, s := range []string{
		"31 23 0:28 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
		`41 31 0:38 /a\040b /x\134y rw - cgroup2 cgroup2 rw`, "1 2 3 4 5 6 -", `1 2 3 \ \0 6 - cgroup2`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := parseMountinfo(data)
		if err != nil && ms != nil {
			t.Fatalf("error %v with mounts %+v", err, ms)
		}
		for _, m := range ms {
			if m.v2 == (m.ctrls != 0) || m.ctrls>>numControllers != 0 {
				t.Fatalf("mount %+v: a v2 mount has no v1 controllers, a v1 one has some", m)
			}
		}
	})
}

func FuzzParseCFSQuota(f *testing.F) {
	for _, s := range []string{"50000\n", "-1\n", "0", "-2", "", "1\n2", " 7 "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := parseCFSQuota(data)
		if err != nil && q != 0 {
			t.Fatalf("error %v with quota %d", err, q)
		}
		if err == nil && q == 0 && string(bytes.TrimSpace(data)) != "-1" {
			t.Fatalf("accepted %q as no quota", data)
		}
	})
}

func FuzzParseStatusCPUs(f *testing.F) {
	if real, err := os.ReadFile("/proc/self/status"); err == nil {
		f.Add(real)
	}
	for _, s := range []string{"Cpus_allowed_list:\t0-3\n", "Name:\tx\nCpus_allowed_list:\t0,2-3\n", "Cpus_allowed_list:", "Cpus_allowed_list:\t3-1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if n, err := parseStatusCPUs(data); err == nil && n <= 0 || err != nil && n != 0 {
			t.Fatalf("parseStatusCPUs(%q) = %d, %v", data, n, err)
		}
	})
}

func FuzzParseHoldsOthers(f *testing.F) {
	for _, s := range []string{"77\n", "77\n78\n", "", "\n\n", "x", "18446744073709551616"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		others, err := parseHoldsOthers(data, 77)
		if err != nil && others {
			t.Fatalf("error %v and others", err)
		}
		if err == nil && !others {
			for _, l := range bytes.Fields(data) {
				if n, err := strconv.ParseUint(string(l), 10, 64); err != nil || n != 77 {
					t.Fatalf("%q holds %q but not others", data, l)
				}
			}
		}
	})
}

// FuzzSampleFiles writes fuzzed contents into the files of a fake tree that
// gopsutil parses for us (/proc/stat, /proc/meminfo, /proc/<pid>/stat and
// statm), and a cgroup file of ours, and samples it: nothing may panic, and
// every signal must stay well-formed.
func FuzzSampleFiles(f *testing.F) {
	seed, err := os.ReadFile("testdata/limited/proc/4242/stat")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed, []byte("cpu  1 2 3 4 5 6 7 8 9 10\n"), []byte("MemTotal: 10 kB\n"), []byte("1 2 3 4 5 6 7\n"))
	f.Add([]byte("4242 (a) b"), []byte("cpu"), []byte("MemTotal:"), []byte(""))
	f.Add([]byte(")"), []byte("cpu  1 2"), []byte("MemAvailable: 5 kB\nMemTotal: x kB"), []byte("1"))
	base := f.TempDir()
	copyTree(f, "testdata/limited", base)
	f.Fuzz(func(t *testing.T, pidStat, procStat, meminfo, statm []byte) {
		for path, data := range map[string][]byte{
			"proc/4242/stat": pidStat, "proc/stat": procStat, "proc/meminfo": meminfo, "proc/4242/statm": statm,
			"sys/fs/cgroup/kubepods/pod1/c1/cpu.stat": procStat,
		} {
			if err := os.WriteFile(filepath.Join(base, path), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s, err := NewSampler(SamplerParams{Root: base, PID: 4242})
		if err != nil {
			t.Fatal(err)
		}
		s.Sample(t0)
		checkInvariants(t, s.Sample(t0.Add(time.Second)))
	})
}
