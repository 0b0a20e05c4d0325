package probe

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// want is what one Signal of a Resources should be: a float64 is a known
// value, a string is an unknown one whose reason contains it.
type want map[string]any

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// TestSamplerTrees samples each fake tree in testdata twice, 1 s apart, with
// the CPU counters of NAME.next/ in between, and checks what every signal
// reports. Figures follow from the trees' files (see testdata/README.md):
// e.g. the limited cgroup used 0.75 s of CPU in 1 s against a 1.5-core quota
// (0.5), and its working set is 384 MiB − 128 MiB inactive file of 512 MiB.
func TestSamplerTrees(t *testing.T) {
	host := want{ // the same host in every tree
		"Host.CPU": 0.75, "Host.Memory": 0.75, "Host.MemoryTotal": 16000000 * 1024.0,
		"Process.CPU": 0.25, "Process.RSS": 500 * float64(os.Getpagesize()),
	}
	hostPSI := want{
		"Host.Pressure.CPUSome": 0.05, "Host.Pressure.CPUFull": 0.0,
		"Host.Pressure.MemorySome": 0.02, "Host.Pressure.MemoryFull": 0.01,
	}
	cgroupPSI := want{
		"Cgroup.Pressure.CPUSome": 0.125, "Cgroup.Pressure.CPUFull": 0.03,
		"Cgroup.Pressure.MemorySome": 0.01, "Cgroup.Pressure.MemoryFull": 0.005,
	}
	cgroupMem := want{"Cgroup.MemoryWorkingSet": float64(256 << 20), "Cgroup.MemoryLimit": float64(512 << 20), "Cgroup.Memory": 0.5}
	cases := []struct {
		tree          string
		first, second []want
		from          [2]string // CPUFrom, MemoryFrom
	}{
		{
			tree: "limited",
			first: []want{hostPSI, cgroupPSI, cgroupMem, {
				"CPU": warmingUp, "Host.CPU": warmingUp, "Process.CPU": warmingUp,
				"Cgroup.CPU": warmingUp, "Cgroup.Throttled": warmingUp,
				"Cgroup.CPULimit": 1.5, "Memory": 0.5,
			}},
			second: []want{host, hostPSI, cgroupPSI, cgroupMem, {
				"CPU": 0.5, "Memory": 0.5, "Cgroup.CPU": 0.5, "Cgroup.CPULimit": 1.5, "Cgroup.Throttled": 0.5,
			}},
			from: [2]string{"cgroup", "cgroup"},
		},
		{
			tree:  "unlimited",
			first: []want{{"Memory": 0.75, "Cgroup.CPULimit": noQuota, "Cgroup.MemoryLimit": noMemLimit, "Cgroup.Memory": noMemLimit}},
			second: []want{host, hostPSI, cgroupPSI, {
				"CPU": 0.75, "Memory": 0.75,
				"Cgroup.CPU":      0.1875, // 0.75 s of 4 CPUs' second
				"Cgroup.CPULimit": noQuota, "Cgroup.MemoryWorkingSet": float64(256 << 20),
				"Cgroup.MemoryLimit": "memory.max is max (no limit)", "Cgroup.Memory": "memory.max is max",
			}},
			from: [2]string{"host", "host"},
		},
		{
			tree: "cpuset",
			second: []want{host, {
				"CPU": 0.375, "Cgroup.CPU": 0.375, "Cgroup.CPULimit": 2.0, // 0.75 s over 2 CPUs
				"Memory": 0.75, "Cgroup.MemoryLimit": noMemLimit,
			}},
			from: [2]string{"cgroup", "host"},
		},
		{
			tree: "nopsi",
			second: []want{host, cgroupMem, {
				"CPU": 0.5, "Memory": 0.5,
				"Host.Pressure.CPUSome":      "PSI not available: ",
				"Host.Pressure.MemoryFull":   "proc/pressure/memory: no such file",
				"Cgroup.Pressure.CPUFull":    "kubepods/pod1/c1/cpu.pressure: no such file",
				"Cgroup.Pressure.MemorySome": "PSI not available: ",
			}},
			from: [2]string{"cgroup", "cgroup"},
		},
		{
			tree: "v1",
			second: []want{host, hostPSI, {
				"CPU": 0.75, "Memory": 0.75,
				"Cgroup.CPU":              "cgroup v2 not in use: no 0:: line",
				"Cgroup.CPULimit":         "a cgroup v1 host?",
				"Cgroup.Memory":           "cgroup v2 not in use",
				"Cgroup.Pressure.CPUSome": "cgroup v2 not in use",
			}},
			from: [2]string{"host", "host"},
		},
		{
			tree: "hybrid",
			second: []want{host, hostPSI, cgroupPSI, {
				"CPU": 0.75, "Memory": 0.75,
				"Cgroup.CPU":              0.1875,
				"Cgroup.CPULimit":         "unified/cpu.max: no such file (controller not enabled",
				"Cgroup.Throttled":        "nr_periods not in ",
				"Cgroup.MemoryWorkingSet": "unified/memory.current: no such file",
				"Cgroup.Memory":           "unified/memory.max: no such file",
			}},
			from: [2]string{"host", "host"},
		},
		{
			tree: "outside",
			second: []want{host, {
				"CPU": 0.75, "Cgroup.CPU": "cgroup /../sibling/c2 is outside this process's cgroup namespace",
			}},
			from: [2]string{"host", "host"},
		},
		{
			tree: "malformed",
			first: []want{{
				"Host.CPU":                   `host CPU: no cpu line in /proc/stat`,
				"Host.Memory":                `host memory: strconv.ParseUint: parsing "lots"`,
				"Process.CPU":                "process 4242: gopsutil panicked on malformed input",
				"Process.RSS":                "process 4242: ",
				"Cgroup.CPULimit":            `cpu.max: not a number: "abc"`,
				"Cgroup.CPU":                 `bad/cpu.stat: line 1: want "key value"`,
				"Cgroup.MemoryLimit":         `bad/memory.max: not a number: "-5"`,
				"Cgroup.MemoryWorkingSet":    `memory.current: not a number: "12abc"`,
				"Cgroup.Pressure.CPUSome":    `cpu.pressure: line 1: avg10: not a number: "bogus"`,
				"Cgroup.Pressure.MemoryFull": `memory.pressure: line 1: want "some" or "full"`,
				"Host.Pressure.CPUSome":      "avg10 500 is over 100%",
				"Host.Pressure.MemorySome":   `no "some" line`,
				"CPU":                        "host CPU: ", "Memory": "host memory: ",
			}},
			second: []want{{
				"Cgroup.CPU": `bad/cpu.stat: line 1: usage_usec: not a number: "12x"`,
			}},
			from: [2]string{"host", "host"},
		},
	}
	for _, c := range cases {
		t.Run(c.tree, func(t *testing.T) {
			root := t.TempDir()
			copyTree(t, filepath.Join("testdata", c.tree), root)
			s, err := NewSampler(SamplerParams{Root: root, PID: 4242})
			if err != nil {
				t.Fatal(err)
			}
			r := s.Sample(t0)
			checkInvariants(t, r)
			checkWants(t, "first sample", r, c.first)

			copyTree(t, filepath.Join("testdata", c.tree+".next"), root)
			r = s.Sample(t0.Add(time.Second))
			checkInvariants(t, r)
			checkWants(t, "second sample", r, c.second)
			if got := [2]string{r.CPUFrom, r.MemoryFrom}; got != c.from {
				t.Errorf("CPUFrom, MemoryFrom = %q, want %q", got, c.from)
			}
			if r.Time != t0.Add(time.Second) || r.Process.PID != 4242 || r.Host.CPUs != 4 && c.tree != "malformed" {
				t.Errorf("time %v pid %d cpus %d", r.Time, r.Process.PID, r.Host.CPUs)
			}
		})
	}
}

// TestSamplerExplicitCgroup watches a cgroup given by path rather than
// found through the process.
func TestSamplerExplicitCgroup(t *testing.T) {
	root := t.TempDir()
	copyTree(t, "testdata/limited", root)
	s, err := NewSampler(SamplerParams{Root: root, Cgroup: "/sys/fs/cgroup/kubepods/pod1/c1"})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Sample(t0)
	checkWants(t, "explicit cgroup", r, []want{{
		"Cgroup.CPULimit": 1.5, "Memory": 0.5,
		"Process.RSS": "not found", // this test's own PID has no files in the tree
	}})
	if want := filepath.Join(root, "sys/fs/cgroup/kubepods/pod1/c1"); r.Cgroup.Dir != want {
		t.Errorf("Dir = %q, want %q", r.Cgroup.Dir, want)
	}

	s, err = NewSampler(SamplerParams{Root: root, Cgroup: "/proc"})
	if err != nil {
		t.Fatal(err)
	}
	checkWants(t, "not a cgroup", s.Sample(t0), []want{{"Cgroup.Memory": "is not a cgroup v2 directory (no cgroup.controllers)"}})
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
	checkWants(t, "no such process", s.Sample(t0), []want{{
		"Process.CPU": "process 5000 not found", "Cgroup.CPULimit": "cannot find the cgroup",
	}})
	writeFile(t, filepath.Join(root, "proc/5000/cgroup"), "0::/kubepods/pod1/c1\n")
	checkWants(t, "process appeared", s.Sample(t0.Add(time.Second)), []want{{"Cgroup.CPULimit": 1.5}})

	// A removed cgroup's open files fail to read on a real cgroupfs, and the
	// Sampler looks again at once. Plain files in a fake tree stay readable
	// through their open descriptors, so here it is the minutely refresh
	// that notices.
	dir := filepath.Join(root, "sys/fs/cgroup/kubepods/pod1/c1")
	if err := os.Rename(dir, dir+".gone"); err != nil {
		t.Fatal(err)
	}
	checkWants(t, "cgroup removed", s.Sample(t0.Add(time.Second+refreshEvery)), []want{{
		"Cgroup.Memory": "kubepods/pod1/c1 is not a cgroup v2 directory",
	}})
	if err := os.Rename(dir+".gone", dir); err != nil {
		t.Fatal(err)
	}
	r := s.Sample(t0.Add(2*time.Second + refreshEvery))
	checkWants(t, "cgroup back", r, []want{{"Cgroup.Memory": 0.5, "Cgroup.CPU": warmingUp}})
	r = s.Sample(t0.Add(3*time.Second + refreshEvery))
	checkWants(t, "cgroup back, second sample", r, []want{{"Cgroup.CPU": 0.0}})
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
	syscall.Close(f.fd)
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
		writeFile(t, filepath.Join(dst, rel), string(data))
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
		if f.fd >= 0 {
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
		if f.fd >= 0 {
			t.Fatalf("%s still open after Close", f.path)
		}
	}
	r := s.Sample(t0.Add(time.Second))
	checkInvariants(t, r)
	checkWants(t, "closed", r, []want{{"CPU": "sampler closed", "Host.Memory": "sampler closed", "Cgroup.Pressure.CPUSome": "sampler closed"}})
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
