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

// errNoV2Entry means /proc/<pid>/cgroup has no cgroup v2 line ("0::/…"):
// the process lives on a cgroup v1 hierarchy only.
var errNoV2Entry = errors.New("no cgroup v2 entry (0::) in the process's cgroup file")

// parseProcCgroup returns the cgroup v2 path of a process from its
// /proc/<pid>/cgroup ("hierarchy-ID:controller-list:cgroup-path" lines, see
// cgroups(7)); the v2 line is the one with ID 0 and no controllers.
func parseProcCgroup(data []byte) (string, error) {
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		id, rest, ok1 := bytes.Cut(line, []byte{':'})
		ctrl, p, ok2 := bytes.Cut(rest, []byte{':'})
		if !ok1 || !ok2 {
			return "", fmt.Errorf("line %d: want \"id:controllers:path\", got %.40q", n, line)
		}
		if string(id) != "0" || len(ctrl) != 0 {
			continue
		}
		if len(p) == 0 || p[0] != '/' {
			return "", fmt.Errorf("line %d: cgroup path %.40q is not absolute", n, p)
		}
		return string(p), nil
	}
	return "", errNoV2Entry
}

// mount is a cgroup2 mount: the directory of the hierarchy it shows (root)
// and where it is mounted (point).
type mount struct{ root, point string }

// parseMountinfo returns the cgroup2 mounts listed in /proc/<pid>/mountinfo,
// whose lines are, per proc(5):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
//
// the fourth and fifth fields being the root and the mount point (with
// spaces and the like escaped as \ooo), and the filesystem type following
// the lone "-".
func parseMountinfo(data []byte) ([]mount, error) {
	var out []mount
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
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
		if f[sep+1] != "cgroup2" {
			continue
		}
		root, err1 := unescapeOctal(f[3])
		point, err2 := unescapeOctal(f[4])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, mount{root: root, point: point})
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

// cgroupDir finds the directory of the cgroup v2 a process is in: the mount
// whose root is the longest prefix of the cgroup path (usually "/", the
// whole hierarchy or, in a container with its own cgroup namespace, the
// container's cgroup) joined with the rest of the path, under fsRoot.
func cgroupDir(fsRoot, cgroupPath string, mounts []mount) (string, error) {
	if len(mounts) == 0 {
		return "", errors.New("cgroup v2 not mounted (no cgroup2 in mountinfo: a cgroup v1 host?)")
	}
	// The kernel shows a cgroup outside the reader's cgroup namespace with
	// leading "/.." components; path.Clean would silently drop them.
	if cgroupPath == "/.." || strings.HasPrefix(cgroupPath, "/../") {
		return "", fmt.Errorf("cgroup %s is outside this process's cgroup namespace", cgroupPath)
	}
	cgroupPath = path.Clean(cgroupPath)
	best := -1
	for i, m := range mounts {
		if r := path.Clean(m.root); isUnder(cgroupPath, r) && (best < 0 || len(r) > len(path.Clean(mounts[best].root))) {
			best = i
		}
	}
	if best < 0 {
		return "", fmt.Errorf("cgroup %s is under no cgroup2 mount", cgroupPath)
	}
	rel := strings.TrimPrefix(cgroupPath, path.Clean(mounts[best].root))
	dir := filepath.Join(fsRoot, mounts[best].point, rel)
	if err := checkCgroupDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// isUnder reports whether p is dir or inside it (both clean and absolute).
func isUnder(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// checkCgroupDir checks that dir is a cgroup v2 directory: every one has a
// cgroup.controllers file, which v1 hierarchies lack.
func checkCgroupDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "cgroup.controllers")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return notCgroupDir(dir)
		}
		return err
	}
	return nil
}

// notCgroupDir is the error for a path that is not (or no longer) a cgroup
// v2 directory. It is an fs.ErrNotExist: the cgroup may yet appear.
type notCgroupDir string

func (d notCgroupDir) Error() string {
	return string(d) + " is not a cgroup v2 directory (no cgroup.controllers)"
}

func (notCgroupDir) Unwrap() error { return fs.ErrNotExist }
