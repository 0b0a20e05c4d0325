package listen

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/internal/defaults"
)

// DefaultSocketMode is the file mode of a unix socket when none is given:
// read and write (connect) for its owner and group.
const DefaultSocketMode fs.FileMode = defaults.SocketMode

// Reach is who can connect to a listener.
type Reach uint8

const (
	// Loopback: this machine only, over a loopback address. Any local user
	// can connect.
	Loopback Reach = iota
	// Unix: a unix socket; its file mode and folder decide who connects.
	Unix
	// Open: other machines too.
	Open
)

var reachNames = [...]string{"loopback", "unix", "open"}

// String returns "loopback", "unix" or "open".
func (r Reach) String() string {
	if int(r) < len(reachNames) {
		return reachNames[r]
	}
	return "unknown"
}

// TCP reports whether the reach is that of a TCP listener.
func (r Reach) TCP() bool { return r != Unix }

// Of returns the reach of a configured address. A host name other than
// "localhost" is Open: what it resolves to can change.
func Of(addr string) (Reach, error) {
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		if !strings.HasPrefix(path, "/") {
			return 0, fmt.Errorf("listen %q: a unix socket is unix:// and an absolute path", addr)
		}
		return Unix, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("listen %q: want \"host:port\" or \"unix:///path.sock\": %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return Loopback, nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return Loopback, nil
	}
	return Open, nil
}

// OfAddr returns the reach of a bound address.
func OfAddr(a net.Addr) Reach {
	switch a := a.(type) {
	case *net.UnixAddr:
		return Unix
	case *net.TCPAddr:
		if a.IP.IsLoopback() {
			return Loopback
		}
	}
	return Open
}

// Listen opens addr: a TCP address, or a unix socket created with mode
// (0 means DefaultSocketMode) after a stale socket file at its path is
// removed. Closing the listener of a unix socket removes its file.
func Listen(addr string, mode fs.FileMode) (net.Listener, error) {
	if _, err := Of(addr); err != nil {
		return nil, err
	}
	path, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		return net.Listen("tcp", addr)
	}
	if mode == 0 {
		mode = DefaultSocketMode
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	return listenUnix(path, mode.Perm())
}

// maxSocketPath is the longest path a unix socket may have (sun_path's 108
// bytes less the terminating NUL).
const maxSocketPath = 107

// listenUnix binds a unix socket at path that has mode from its first
// instant: it binds it in a private folder (0700, beside path, so on the
// same file system), sets the mode there, where nobody else can put a
// symlink in its place, and renames it to path, which rename(2) does at
// once. The process's umask never shows (a socket is bound with 0777 less
// the umask), and no chmod follows a name someone else could change.
// Closing the listener removes path.
func listenUnix(path string, mode fs.FileMode) (net.Listener, error) {
	var r [4]byte
	_, _ = rand.Read(r[:]) // never fails (crypto/rand.Read's doc)
	dir := filepath.Join(filepath.Dir(path), ".s"+hex.EncodeToString(r[:]))
	tmp := filepath.Join(dir, "s")
	if len(tmp) > maxSocketPath {
		return nil, fmt.Errorf("listen unix %s: the path is too long to bind it safely (at most %d bytes for its folder, %d given)",
			path, maxSocketPath-len("/.s00000000/s"), len(filepath.Dir(path)))
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	defer os.Remove(dir)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false) // its name moves: unixListener removes path
	if err := os.Chmod(tmp, mode); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, err
	}
	return &unixListener{UnixListener: ln, addr: &net.UnixAddr{Name: path, Net: "unix"}}, nil
}

// unixListener is a unix socket listener bound under another name than
// its socket's: it reports addr and removes it on Close.
type unixListener struct {
	*net.UnixListener
	addr *net.UnixAddr
	once sync.Once
}

func (l *unixListener) Addr() net.Addr { return l.addr }

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() { os.Remove(l.addr.Name) })
	return err
}

// removeStale removes the socket file at path when nothing listens on it
// any more (a process that died without cleaning up). A live socket, or a
// file that is not a socket, is left alone and reported.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return fmt.Errorf("%s: another process listens on it", path)
	}
	return os.Remove(path)
}
