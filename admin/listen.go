package admin

import (
	"net"
	"os"
	"strings"

	"github.com/sluicehq/sluice/internal/listen"
)

// hostSet is the DNS-rebinding guard: the host names that the Host header
// may carry.
type hostSet struct {
	any   bool // a unix socket: no browser reaches it
	open  bool // off loopback: IP literals are fine too
	names map[string]bool
}

func newHostSet(addr string, extra []string, r listen.Reach) hostSet {
	hs := hostSet{any: r == listen.Unix, open: r == listen.Open, names: map[string]bool{"localhost": true}}
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
		hs.names[normHost(host)] = true
	}
	for _, h := range extra {
		hs.names[normHost(h)] = true
	}
	if r == listen.Open {
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
