package probe

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// The cgroup controllers the Sampler reads. On cgroup v2 they all live in
// the one unified hierarchy; on v1 (and in systemd's hybrid layout, where
// the v2 hierarchy carries none of them) each is a hierarchy of its own, or
// shares one with others ("cpu,cpuacct").
type controller uint8

const (
	ctrlCPU     controller = iota // CFS quota and throttling
	ctrlCPUAcct                   // CPU usage (v1)
	ctrlCPUSet                    // the CPUs a cgroup may run on
	ctrlMemory
	numControllers
)

var controllerNames = [numControllers]string{"cpu", "cpuacct", "cpuset", "memory"}

// procCgroups is where a process is, from /proc/<pid>/cgroup: its cgroup v2
// path, and its path in the v1 hierarchy of each controller ("" when not
// listed).
type procCgroups struct {
	v2    string
	hasV2 bool
	v1    [numControllers]string
}

// parseProcCgroup parses /proc/<pid>/cgroup, whose lines are
// "hierarchy-ID:controller-list:cgroup-path" (cgroups(7)): the v2 line has
// ID 0 and no controllers; a v1 line lists its hierarchy's controllers,
// comma-separated ("name=systemd" for a named hierarchy without any).
func parseProcCgroup(data []byte) (procCgroups, error) {
	var pc procCgroups
	for n, line := range lines(data) {
		id, rest, ok1 := bytes.Cut(line, []byte{':'})
		ctrls, p, ok2 := bytes.Cut(rest, []byte{':'})
		if !ok1 || !ok2 {
			return procCgroups{}, fmt.Errorf("line %d: want \"id:controllers:path\", got %.40q", n, line)
		}
		if len(p) == 0 || p[0] != '/' {
			return procCgroups{}, fmt.Errorf("line %d: cgroup path %.40q is not absolute", n, p)
		}
		if string(id) == "0" && len(ctrls) == 0 {
			pc.v2, pc.hasV2 = string(p), true
			continue
		}
		for len(ctrls) > 0 {
			var c []byte
			c, ctrls, _ = bytes.Cut(ctrls, []byte{','})
			for i, name := range controllerNames {
				if string(c) == name {
					pc.v1[i] = string(p)
				}
			}
		}
	}
	return pc, nil
}

// mount is a mounted cgroup hierarchy: the cgroup path it shows at its mount
// point (root) and that point; v2 for cgroup2, else the v1 controllers it
// carries, one bit per controller.
type mount struct {
	root, point string
	v2          bool
	ctrls       uint8
}

func (m mount) has(c controller) bool { return m.ctrls&(1<<c) != 0 }

// parseMountinfo returns the cgroup and cgroup2 mounts listed in
// /proc/<pid>/mountinfo, whose lines are, per proc(5):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
//
// the fourth and fifth fields being the root and the mount point (with
// spaces and the like escaped as \ooo), and the filesystem type, the source
// and the super options following the lone "-". A v1 hierarchy's
// controllers are among its super options ("rw,cpu,cpuacct").
func parseMountinfo(data []byte) ([]mount, error) {
	var out []mount
	for n, line := range lines(data) {
		f := strings.Fields(string(line))
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) {
			return nil, fmt.Errorf("line %d: malformed mountinfo line %.60q", n, line)
		}
		m := mount{v2: f[sep+1] == "cgroup2"}
		if !m.v2 && f[sep+1] != "cgroup" {
			continue
		}
		if !m.v2 && sep+3 < len(f) {
			for _, opt := range strings.Split(f[sep+3], ",") {
				for i, name := range controllerNames {
					if opt == name {
						m.ctrls |= 1 << i
					}
				}
			}
		}
		if !m.v2 && m.ctrls == 0 {
			continue // a named hierarchy (name=systemd) or one we do not read
		}
		root, err1 := unescapeOctal(f[3])
		point, err2 := unescapeOctal(f[4])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		m.root, m.point = root, point
		out = append(out, m)
	}
	return out, nil
}

// unescapeOctal undoes the \ooo escapes of mountinfo paths.
func unescapeOctal(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("truncated escape in %.60q", s)
		}
		v := 0
		for _, c := range s[i+1 : i+4] {
			if c < '0' || c > '7' {
				return "", fmt.Errorf("bad escape in %.60q", s)
			}
			v = v*8 + int(c-'0')
		}
		if v > 0xff {
			return "", fmt.Errorf("bad escape in %.60q", s)
		}
		b.WriteByte(byte(v))
		i += 3
	}
	return b.String(), nil
}

// hierarchy is where one controller's cgroups are: the mounts of the v1
// hierarchy that carries it, or of cgroup v2 when none does.
type hierarchy struct {
	mounts []mount
	v2     bool
}

// mounted reports whether the hierarchy is mounted at all.
func (h hierarchy) mounted() bool { return len(h.mounts) > 0 }

// hierarchies sorts mounts by controller: on a v1 or hybrid host a
// controller is in the v1 hierarchy that lists it; else in cgroup v2. The
// v2 hierarchy itself is returned too: PSI is only there.
func hierarchies(mounts []mount) (ctrl [numControllers]hierarchy, v2 hierarchy) {
	v2.v2 = true
	for _, m := range mounts {
		if m.v2 {
			v2.mounts = append(v2.mounts, m)
		}
	}
	for c := range numControllers {
		for _, m := range mounts {
			if !m.v2 && m.has(c) {
				ctrl[c].mounts = append(ctrl[c].mounts, m)
			}
		}
		if !ctrl[c].mounted() {
			ctrl[c] = v2
		}
	}
	return ctrl, v2
}

// errOutside is the error for a cgroup path outside the reader's cgroup
// namespace, which the kernel shows with leading "/.." components.
func errOutside(p string) error {
	return fmt.Errorf("cgroup %s is outside this process's cgroup namespace", p)
}

// dir returns the directory of the cgroup at cgroupPath in h, under fsRoot:
// the mount whose root is the longest prefix of the path (usually "/", the
// whole hierarchy or, in a container with its own cgroup namespace, the
// container's cgroup) joined with the rest of the path. The mount is
// returned too.
func (h hierarchy) dir(fsRoot, cgroupPath string) (string, mount, error) {
	if !h.mounted() {
		return "", mount{}, errors.New("cgroup v2 not mounted (no cgroup2 in mountinfo: a cgroup v1 host?)")
	}
	// path.Clean would silently drop the leading "/.." of a path outside
	// our namespace.
	if cgroupPath == "/.." || strings.HasPrefix(cgroupPath, "/../") {
		return "", mount{}, errOutside(cgroupPath)
	}
	cgroupPath = path.Clean(cgroupPath)
	best := -1
	for i, m := range h.mounts {
		if r := path.Clean(m.root); isUnder(cgroupPath, r) && (best < 0 || len(r) > len(path.Clean(h.mounts[best].root))) {
			best = i
		}
	}
	if best < 0 {
		return "", mount{}, fmt.Errorf("cgroup %s is under no mount of its hierarchy", cgroupPath)
	}
	m := h.mounts[best]
	rel := strings.TrimPrefix(cgroupPath, path.Clean(m.root))
	return filepath.Join(fsRoot, m.point, rel), m, nil
}

// isUnder reports whether p is dir or inside it (both clean and absolute).
func isUnder(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// level is one cgroup of a chain: its path in its hierarchy and its
// directory.
type level struct{ path, dir string }

// chain is a cgroup and its ancestors, nearest first, as far up as this
// process sees them. The hierarchy's root cgroup is left out: it is the
// whole host and carries no limit. hidden is set when the top level seen is
// not that root: the cgroups above it are hidden, by a private cgroup
// namespace or a mount of a subtree only.
type chain struct {
	levels []level
	hidden bool
	top    string // the directory of the highest cgroup seen
	// start is the path of the cgroup the chain starts from; alone is set
	// when that cgroup is left out of levels, for holding only sluice.
	start string
	alone bool
}

// ancestors returns the chain of the cgroup at cgroupPath in h.
func (h hierarchy) ancestors(fsRoot, cgroupPath string) (chain, error) {
	dir, m, err := h.dir(fsRoot, cgroupPath)
	if err != nil {
		return chain{}, err
	}
	if err := checkCgroupDir(dir); err != nil {
		return chain{}, err
	}
	var c chain
	p, stop := path.Clean(cgroupPath), path.Clean(m.root)
	for {
		c.top = dir
		if p == stop {
			c.hidden = !isRootCgroup(dir, h.v2)
			if c.hidden {
				c.levels = append(c.levels, level{p, dir})
			}
			return c, nil
		}
		c.levels = append(c.levels, level{p, dir})
		p, dir = path.Dir(p), filepath.Dir(dir)
	}
}

// isRootCgroup reports whether dir is the root cgroup of its hierarchy, not
// merely the top one a cgroup namespace lets us see: on v2 only non-root
// cgroups have cgroup.type; on v1 only the root has release_agent.
func isRootCgroup(dir string, v2 bool) bool {
	if v2 {
		return !exists(filepath.Join(dir, "cgroup.type"))
	}
	return exists(filepath.Join(dir, "release_agent"))
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// checkCgroupDir checks that dir is a cgroup directory: every one, v1 or
// v2, has a cgroup.procs file.
func checkCgroupDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return notCgroupDir(dir)
		}
		return err
	}
	return nil
}

// notCgroupDir is the error for a path that is not (or no longer) a cgroup
// directory. It is an fs.ErrNotExist: the cgroup may yet appear.
type notCgroupDir string

func (d notCgroupDir) Error() string {
	return string(d) + " is not a cgroup directory (no cgroup.procs)"
}

func (notCgroupDir) Unwrap() error { return fs.ErrNotExist }

// cgroupOf maps a directory given by path (SamplerParams.Cgroup, under
// fsRoot) to its hierarchy and its cgroup path there.
func cgroupOf(fsRoot, dir string, mounts []mount) (cgroupPath string, m mount, err error) {
	best := -1
	for i, mt := range mounts {
		point := filepath.Join(fsRoot, mt.point)
		if (dir == point || strings.HasPrefix(dir, point+"/")) && (best < 0 || len(mt.point) > len(mounts[best].point)) {
			best = i
		}
	}
	if best < 0 {
		return "", mount{}, fmt.Errorf("%s is under no cgroup mount", dir)
	}
	m = mounts[best]
	rel := strings.TrimPrefix(dir, filepath.Join(fsRoot, m.point))
	return path.Join(m.root, "/"+rel), m, nil
}
