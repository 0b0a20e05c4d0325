package listen

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
)

// DefaultSocketMode is the file mode of a unix socket when none is given:
// read and write (connect) for its owner and group.
const DefaultSocketMode fs.FileMode = 0o660

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
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, mode.Perm()); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
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
