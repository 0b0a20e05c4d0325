package admin

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
)

// mode is who can reach the listener, which decides what needs the token.
type mode uint8

const (
	modeLoopback mode = iota // this machine only: a loopback address
	modeUnix                 // a unix socket: its file mode decides
	modeOpen                 // other machines: everything needs the token
)

// modeOf reads the mode of a listen address as configured. A host name
// other than "localhost" counts as open: what it resolves to can change.
func modeOf(listen string) (mode, error) {
	if path, ok := strings.CutPrefix(listen, "unix://"); ok {
		if !strings.HasPrefix(path, "/") {
			return 0, fmt.Errorf("admin: listen %q: a unix socket is unix:// and an absolute path", listen)
		}
		return modeUnix, nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return 0, fmt.Errorf("admin: listen %q: want \"host:port\" or \"unix:///path.sock\": %w", listen, err)
	}
	if strings.EqualFold(host, "localhost") {
		return modeLoopback, nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return modeLoopback, nil
	}
	return modeOpen, nil
}

// modeOfAddr reads the mode of an address actually bound.
func modeOfAddr(a net.Addr) mode {
	switch a := a.(type) {
	case *net.UnixAddr:
		return modeUnix
	case *net.TCPAddr:
		if a.IP.IsLoopback() {
			return modeLoopback
		}
	}
	return modeOpen
}

// listen opens a TCP address or a unix socket.
func listen(addr string) (net.Listener, error) {
	path, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		return net.Listen("tcp", addr)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o660); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// removeStaleSocket removes the socket file at path when nothing listens on
// it any more (a daemon that died without cleaning up). A live socket, or a
// file that is not a socket, is left alone and reported.
func removeStaleSocket(path string) error {
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

// hostSet is the DNS-rebinding guard: the host names that the Host header
// may carry.
type hostSet struct {
	any   bool // a unix socket: no browser reaches it
	open  bool // off loopback: IP literals are fine too
	names map[string]bool
}

func newHostSet(listen string, extra []string, m mode) hostSet {
	hs := hostSet{any: m == modeUnix, open: m == modeOpen, names: map[string]bool{"localhost": true}}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		hs.names[normHost(host)] = true
	}
	for _, h := range extra {
		hs.names[normHost(h)] = true
	}
	if m == modeOpen {
		if h, err := os.Hostname(); err == nil && h != "" {
			hs.names[normHost(h)] = true
		}
	}
	return hs
}

// allows reports whether a request's Host header names this listener.
// The port is not compared: a rebinding attack differs in the name.
func (hs hostSet) allows(hostHeader string) bool {
	if hs.any {
		return true
	}
	if hostHeader == "" {
		return false
	}
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	host = normHost(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if hs.names[host] {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	return ip.IsLoopback() || hs.open
}

func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }
