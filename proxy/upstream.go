package proxy

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// upstream is where the proxy sends requests.
type upstream struct {
	network string // "tcp" or "unix"
	addr    string // host:port, or the socket path
	host    string // Host to send when the client gave none, and the h2c URL host
	prefix  string // path prefix without a trailing slash; "" for none
}

// parseUpstream parses "http://host[:port][/prefix]" or "unix:///path/to.sock".
func parseUpstream(s string) (upstream, error) {
	if s == "" {
		return upstream{}, fmt.Errorf("proxy: upstream is required")
	}
	u, err := url.Parse(s)
	if err != nil {
		return upstream{}, fmt.Errorf("proxy: upstream %q: %v", s, err)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return upstream{}, fmt.Errorf("proxy: upstream %q must not have user info, a query or a fragment", s)
	}
	switch u.Scheme {
	case "http":
		if u.Host == "" {
			return upstream{}, fmt.Errorf("proxy: upstream %q has no host", s)
		}
		addr := u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "80")
		}
		if host, port, err := net.SplitHostPort(addr); err != nil || host == "" || port == "" {
			return upstream{}, fmt.Errorf("proxy: upstream %q: bad host %q", s, u.Host)
		}
		return upstream{network: "tcp", addr: addr, host: u.Host, prefix: strings.TrimRight(u.EscapedPath(), "/")}, nil
	case "unix":
		path := u.Path
		if u.Host != "" || path == "" {
			return upstream{}, fmt.Errorf("proxy: upstream %q: want unix:///absolute/path", s)
		}
		return upstream{network: "unix", addr: path, host: "localhost"}, nil
	case "https":
		return upstream{}, fmt.Errorf("proxy: upstream %q: TLS to the upstream is not supported; use http:// or unix://", s)
	}
	return upstream{}, fmt.Errorf("proxy: upstream %q: scheme must be http or unix", s)
}
