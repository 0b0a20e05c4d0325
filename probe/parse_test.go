package probe

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParseSingle(t *testing.T) {
	for _, c := range []struct {
		in        string
		v         uint64
		unlimited bool
		err       string
	}{
		{in: "536870912\n", v: 536870912},
		{in: "max\n", unlimited: true},
		{in: "  42  ", v: 42},
		{in: "0\n", v: 0},
		{in: "18446744073709551615\n", v: math.MaxUint64},
		{in: "18446744073709551616\n", err: "out of range"},
		{in: "", err: "empty file"},
		{in: "\n", err: "empty file"},
		{in: "-5\n", err: `not a number: "-5"`},
		{in: "12abc", err: "not a number"},
		{in: "1\n2\n", err: "more than one line"},
		{in: "1 2\n", err: "not a number"},
	} {
		v, unl, err := parseSingle([]byte(c.in))
		if !errMatches(err, c.err) || err == nil && (v != c.v || unl != c.unlimited) {
			t.Errorf("parseSingle(%q) = %d, %v, %v; want %d, %v, error %q", c.in, v, unl, err, c.v, c.unlimited, c.err)
		}
	}
}

func TestParseCPUMax(t *testing.T) {
	for _, c := range []struct {
		in            string
		quota, period uint64
		err           string
	}{
		{in: "150000 100000\n", quota: 150000, period: 100000},
		{in: "max 100000\n", quota: 0, period: 100000},
		{in: "50000 1000000", quota: 50000, period: 1000000},
		{in: "max\n", err: `want "$MAX $PERIOD"`},
		{in: "max 0\n", err: "period is 0"},
		{in: "0 100000\n", err: "quota is 0"},
		{in: "abc 100000\n", err: `not a number: "abc"`},
		{in: "1 2 3\n", err: `want "$MAX $PERIOD"`},
		{in: "", err: "empty file"},
		{in: "1 2\n3 4\n", err: "more than one line"},
	} {
		q, p, err := parseCPUMax([]byte(c.in))
		if !errMatches(err, c.err) || err == nil && (q != c.quota || p != c.period) {
			t.Errorf("parseCPUMax(%q) = %d, %d, %v; want %d, %d, error %q", c.in, q, p, err, c.quota, c.period, c.err)
		}
	}
}

func TestParseKeyed(t *testing.T) {
	keys := []string{"usage_usec", "nr_periods", "nr_throttled"}
	for _, c := range []struct {
		in    string
		found uint64
		out   [3]uint64
		err   string
	}{
		{in: "usage_usec 10\nuser_usec 5\nnr_periods 3\nnr_throttled 1\n", found: 7, out: [3]uint64{10, 3, 1}},
		{in: "usage_usec 10\nuser_usec 5\n", found: 1, out: [3]uint64{10}},
		{in: "\n\nusage_usec\t10\n\n", found: 1, out: [3]uint64{10}},
		{in: "", found: 0},
		{in: "anon 1\nfile x\n", found: 0}, // values of keys not asked for are not parsed
		{in: "usage_usec\n", err: `line 1: want "key value"`},
		{in: "usage_usec 1 2\n", err: `line 1: want "key value"`},
		{in: "user_usec 1\nusage_usec -1\n", err: `line 2: usage_usec: not a number`},
	} {
		var out [3]uint64
		found, err := parseKeyed([]byte(c.in), keys, out[:])
		if !errMatches(err, c.err) || err == nil && (found != c.found || out != c.out) {
			t.Errorf("parseKeyed(%q) = %b, %v, %v; want %b, %v, error %q", c.in, found, out, err, c.found, c.out, c.err)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in  string
		n   int
		err string
	}{
		{in: "0-3\n", n: 4},
		{in: "0-3,8,10-11\n", n: 7},
		{in: "5\n", n: 1},
		{in: "\n", err: "empty file"},
		{in: "3-1\n", err: `bad CPU range "3-1"`},
		{in: "0-\n", err: "empty number"},
		{in: "0,,1\n", err: "empty number"},
		{in: "0-2000000\n", err: "bad CPU range"},
		{in: "a-b\n", err: "not a number"},
	} {
		n, err := parseCPUList([]byte(c.in))
		if !errMatches(err, c.err) || err == nil && n != c.n {
			t.Errorf("parseCPUList(%q) = %d, %v; want %d, error %q", c.in, n, err, c.n, c.err)
		}
	}
}

func TestParsePSI(t *testing.T) {
	for _, c := range []struct {
		in   string
		want psi
		err  string
	}{
		{in: "some avg10=12.50 avg60=1.00 avg300=0.50 total=123\nfull avg10=3.00 avg60=0.00 avg300=0.00 total=7\n",
			want: psi{some: 0.125, full: 0.03, hasFull: true}},
		{in: "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", want: psi{}},
		{in: "some avg10=100.00 avg60=0 avg300=0 total=0\n", want: psi{some: 1}},
		{in: "some avg60=1.00 avg10=7\n", want: psi{some: 0.07}},
		{in: "full avg10=1.00\n", err: `no "some" line`},
		{in: "", err: `no "some" line`},
		{in: "some avg10=100.01\n", err: "over 100%"},
		{in: "some avg10=1e5\n", err: "not a number"},
		{in: "some avg60=1.00\n", err: "no avg10"},
		{in: "some avg10\n", err: "want key=value"},
		{in: "most avg10=1.00\n", err: `want "some" or "full"`},
	} {
		got, err := parsePSI([]byte(c.in))
		if !errMatches(err, c.err) || err == nil && math.Abs(got.some-c.want.some)+math.Abs(got.full-c.want.full) > 1e-12 || got.hasFull != c.want.hasFull {
			t.Errorf("parsePSI(%q) = %+v, %v; want %+v, error %q", c.in, got, err, c.want, c.err)
		}
	}
}

func TestParseProcCgroup(t *testing.T) {
	v1 := func(cpu, cpuacct, cpuset, memory string) [numControllers]string {
		return [numControllers]string{cpu, cpuacct, cpuset, memory}
	}
	for _, c := range []struct {
		in   string
		want procCgroups
		err  string
	}{
		{in: "0::/kubepods/pod1/c1\n", want: procCgroups{v2: "/kubepods/pod1/c1", hasV2: true}},
		{in: "12:memory:/x\n1:name=systemd:/y\n0::/\n", want: procCgroups{v2: "/", hasV2: true, v1: v1("", "", "", "/x")}},
		{in: "0::/a:b\n", want: procCgroups{v2: "/a:b", hasV2: true}},
		{in: "0::/../sibling\n", want: procCgroups{v2: "/../sibling", hasV2: true}},
		// cgroup v1 only, with co-mounted controllers.
		{in: "12:memory:/x\n11:cpu,cpuacct:/y\n3:cpuset:/z\n2:blkio:/w\n", want: procCgroups{v1: v1("/y", "/y", "/z", "/x")}},
		{in: "", want: procCgroups{}},
		{in: "garbage\n", err: `line 1: want "id:controllers:path"`},
		{in: "0::relative\n", err: "is not absolute"},
		{in: "4:memory:\n", err: "is not absolute"},
	} {
		got, err := parseProcCgroup([]byte(c.in))
		if !errMatches(err, c.err) || err == nil && got != c.want {
			t.Errorf("parseProcCgroup(%q) = %+v, %v; want %+v, error %q", c.in, got, err, c.want, c.err)
		}
	}
}

func TestParseMountinfo(t *testing.T) {
	in := `22 27 0:21 / /proc rw,relatime - proc proc rw
31 23 0:28 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate
41 31 0:38 /docker/abc /sys/fs/cgroup/with\040space rw - cgroup2 cgroup2 rw
42 31 0:39 / /sys/fs/cgroup/cpu,cpuacct rw master:1 shared:2 - cgroup cgroup rw,cpu,cpuacct
43 31 0:40 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd
44 31 0:41 /kubepods /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
`
	got, err := parseMountinfo([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []mount{
		{root: "/", point: "/sys/fs/cgroup", v2: true},
		{root: "/docker/abc", point: "/sys/fs/cgroup/with space", v2: true},
		{root: "/", point: "/sys/fs/cgroup/cpu,cpuacct", ctrls: 1<<ctrlCPU | 1<<ctrlCPUAcct},
		{root: "/kubepods", point: "/sys/fs/cgroup/memory", ctrls: 1 << ctrlMemory},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseMountinfo = %+v, want %+v", got, want)
	}
	for _, c := range []struct{ in, err string }{
		{in: "1 2 3\n", err: "malformed mountinfo line"},
		{in: "1 2 0:1 / /x rw - \n", err: "malformed mountinfo line"},
		{in: `1 2 0:1 / /x\04 rw - cgroup2 c rw` + "\n", err: "truncated escape"},
		{in: `1 2 0:1 / /x\9zz rw - cgroup2 c rw` + "\n", err: "bad escape"},
		{in: `1 2 0:1 / /x\777 rw - cgroup2 c rw` + "\n", err: "bad escape"},
	} {
		if _, err := parseMountinfo([]byte(c.in)); !errMatches(err, c.err) {
			t.Errorf("parseMountinfo(%q) error %v, want %q", c.in, err, c.err)
		}
	}
}

func TestHierarchyDir(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"sys/fs/cgroup/kubepods/c1", "sys/fs/cgroup/unified", "ns"} {
		writeFile(t, root+"/"+d+"/cgroup.procs", "")
	}
	m := func(root, point string) mount { return mount{root: root, point: point, v2: true} }
	for _, c := range []struct {
		path   string
		mounts []mount
		want   string
		err    string
	}{
		{"/kubepods/c1", []mount{m("/", "/sys/fs/cgroup")}, "/sys/fs/cgroup/kubepods/c1", ""},
		{"/", []mount{m("/", "/sys/fs/cgroup/unified")}, "/sys/fs/cgroup/unified", ""},
		// A mount of a sub-hierarchy (a container's view) wins over the root.
		{"/kubepods/c1", []mount{m("/", "/sys/fs/cgroup"), m("/kubepods/c1", "/ns")}, "/ns", ""},
		{"/kubepods/c1", nil, "", "cgroup v2 not mounted"},
		{"/other", []mount{m("/kubepods", "/ns")}, "", "under no mount of its hierarchy"},
		{"/../x", []mount{m("/", "/sys/fs/cgroup")}, "", "outside this process's cgroup namespace"},
	} {
		got, _, err := hierarchy{mounts: c.mounts, v2: true}.dir(root, c.path)
		if c.want != "" {
			c.want = root + c.want
		}
		if !errMatches(err, c.err) || got != c.want {
			t.Errorf("dir(%q, %v) = %q, %v; want %q, error %q", c.path, c.mounts, got, err, c.want, c.err)
		}
	}
	if _, err := (hierarchy{mounts: []mount{m("/", "/sys/fs/cgroup")}, v2: true}).ancestors(root, "/missing"); !errMatches(err, "is not a cgroup directory") {
		t.Errorf("ancestors of a missing cgroup: %v", err)
	}
}

func TestParseCFSQuota(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		err  string
	}{
		{in: "50000\n", want: 50000},
		{in: "-1\n", want: 0},
		{in: "0\n", err: "quota is 0"},
		{in: "-2\n", err: "not a number"},
		{in: "", err: "empty"},
		{in: "1\n2\n", err: "more than one line"},
	} {
		got, err := parseCFSQuota([]byte(c.in))
		if !errMatches(err, c.err) || got != c.want {
			t.Errorf("parseCFSQuota(%q) = %d, %v; want %d, error %q", c.in, got, err, c.want, c.err)
		}
	}
}

func TestParseStatusCPUs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		err  string
	}{
		{in: "Name:\tapp\nCpus_allowed:\tf\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t0\n", want: 4},
		{in: "Cpus_allowed_list:\t1,3\n", want: 2},
		{in: "Name:\tapp\n", err: "no Cpus_allowed_list"},
		{in: "Cpus_allowed_list:\t\n", err: "empty"},
	} {
		got, err := parseStatusCPUs([]byte(c.in))
		if !errMatches(err, c.err) || got != c.want {
			t.Errorf("parseStatusCPUs(%q) = %d, %v; want %d, error %q", c.in, got, err, c.want, c.err)
		}
	}
}

func TestParseHoldsOthers(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
		err  string
	}{
		{in: "77\n", want: false},
		{in: "", want: false},
		{in: "77\n78\n", want: true},
		{in: "1\n", want: true},
		{in: "x\n", err: "line 1: not a number"},
	} {
		got, err := parseHoldsOthers([]byte(c.in), 77)
		if !errMatches(err, c.err) || got != c.want {
			t.Errorf("parseHoldsOthers(%q) = %v, %v; want %v, error %q", c.in, got, err, c.want, c.err)
		}
	}
}

// TestParsersDoNotAllocate: the parsers run on every sample, so on valid
// input they must not allocate.
func TestParsersDoNotAllocate(t *testing.T) {
	cpuStat := []byte("usage_usec 10\nuser_usec 5\nnr_periods 3\nnr_throttled 1\n")
	pressure := []byte("some avg10=12.50 avg60=1.00 avg300=0.50 total=123\nfull avg10=3.00 avg60=0.00 avg300=0.00 total=7\n")
	cpuMax, memMax, cpuset, quota := []byte("150000 100000\n"), []byte("536870912\n"), []byte("0-3,8\n"), []byte("50000\n")
	var out [3]uint64
	if a := testing.AllocsPerRun(100, func() {
		parseKeyed(cpuStat, cpuStatKeys[:], out[:])
		parsePSI(pressure)
		parseCPUMax(cpuMax)
		parseSingle(memMax)
		parseCPUList(cpuset)
		parseCFSQuota(quota)
	}); a != 0 {
		t.Fatalf("parsers allocate %v times per sample", a)
	}
}

// errMatches reports whether err is nil when want is "" and otherwise
// contains want.
func errMatches(err error, want string) bool {
	if want == "" {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), want)
}
