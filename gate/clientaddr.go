package gate

import (
	"net/netip"
	"strings"

	"github.com/sluicehq/sluice/gate/spec"
)

// TrustedProxies is the set of peers whose forwarding fields (X-Forwarded-For
// and the like) are believed: Config.TrustedProxies. A nil or empty set
// trusts nobody. The proxy and the gate's "ip" keys read the same set (see
// Gate.TrustedProxies), so that the address the upstream is told and the one
// a quota counts are the same.
//
// Immutable once built; safe for concurrent use. Its methods do not allocate
// but to spell an address that a trusted hop wrote in a non-canonical form.
type TrustedProxies struct {
	prefixes []netip.Prefix
	unix     bool // peers without an address: a unix-socket listener's clients
}

// ParseTrustedProxies builds the set of Config.TrustedProxies entries (see
// spec.ParseTrustedProxy); the first bad entry is the error. An empty list
// gives nil, which trusts nobody.
func ParseTrustedProxies(list []string) (*TrustedProxies, error) {
	if len(list) == 0 {
		return nil, nil
	}
	t := &TrustedProxies{}
	for _, s := range list {
		p, unix, err := spec.ParseTrustedProxy(s)
		if err != nil {
			return nil, err
		}
		if unix {
			t.unix = true
		} else {
			t.prefixes = append(t.prefixes, p)
		}
	}
	return t, nil
}

// contains reports whether a (unmapped) is in the set.
func (t *TrustedProxies) contains(a netip.Addr) bool {
	for _, p := range t.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Peer returns the address of the connection's peer, from a net/http
// RemoteAddr (see PeerAddr), and whether the set trusts that peer. A peer
// without an address (a unix socket's) is trusted if the set holds "unix".
func (t *TrustedProxies) Peer(remoteAddr string) (addr string, trusted bool) {
	addr, a := peerAddr(remoteAddr)
	if t == nil {
		return addr, false
	}
	if addr == "" {
		return "", t.unix
	}
	if len(t.prefixes) == 0 {
		return addr, false
	}
	return addr, t.contains(a)
}

// ClientAddr returns the client's address for a request from remoteAddr
// (http.Request.RemoteAddr) whose X-Forwarded-For field lines are xff: the
// peer's address if the set does not trust the peer; else, walking
// X-Forwarded-For from its right end (the element the trusted peer added), the
// first address that the set does not trust. When every address is trusted
// the left-most is the client; an element that is not an IP address (with or
// without a port) ends the walk, and the last address walked is the client,
// so that no junk a client wrote becomes a key. This is nginx's realip with
// real_ip_recursive on. Addresses are returned in canonical form
// (netip.Addr.String, IPv4-mapped IPv6 as IPv4), so that one client has one
// key however a hop spells it.
func (t *TrustedProxies) ClientAddr(remoteAddr string, xff []string) string {
	client, trusted := t.Peer(remoteAddr)
	if !trusted {
		return client
	}
	for i := len(xff) - 1; i >= 0; i-- {
		for v := xff[i]; v != ""; {
			var el string
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				el, v = v[j+1:], v[:j]
			} else {
				el, v = v, ""
			}
			el = strings.Trim(el, " \t")
			if el == "" {
				continue
			}
			a, ok := forwardedAddr(el)
			if !ok {
				return client
			}
			client = canonical(a, el)
			if !t.contains(a) {
				return client
			}
		}
	}
	return client
}

// forwardedAddr reads one X-Forwarded-For element: an address, an IPv4
// address with a port, or a bracketed address with or without a port (a port
// is decimal digits). The address comes back unmapped; zones are refused.
func forwardedAddr(el string) (netip.Addr, bool) {
	host, port := el, ""
	switch {
	case el[0] == '[':
		end := strings.IndexByte(el, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		host, port = el[1:end], el[end+1:]
		if port != "" {
			if port[0] != ':' {
				return netip.Addr{}, false
			}
			port = port[1:]
			if port == "" {
				return netip.Addr{}, false
			}
		}
	case strings.Count(el, ":") == 1:
		i := strings.IndexByte(el, ':')
		host, port = el[:i], el[i+1:]
		if port == "" {
			return netip.Addr{}, false
		}
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return netip.Addr{}, false
		}
	}
	a, err := netip.ParseAddr(host)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// canonical returns a's canonical spelling: s itself when s already is it
// (no allocation), else a new string.
func canonical(a netip.Addr, s string) string {
	var buf [64]byte
	b := a.AppendTo(buf[:0])
	if string(b) == s {
		return s
	}
	return string(b)
}

// PeerAddr returns the address part of a net/http RemoteAddr ("1.2.3.4:5678",
// "[::1]:5678", or an address without a port), without brackets or zone, or
// "" when it holds no IP address (a unix socket's peer), in canonical form
// (see ClientAddr). It returns a substring of remoteAddr: no allocation, but
// for a form that is not canonical (an IPv6 zone, an IPv4-mapped address).
func PeerAddr(remoteAddr string) string {
	addr, _ := peerAddr(remoteAddr)
	return addr
}

// peerAddr is PeerAddr, with the address parsed (unmapped, without zone; the
// zero Addr with "").
func peerAddr(remoteAddr string) (string, netip.Addr) {
	host := remoteAddr
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return "", netip.Addr{}
		}
		host = host[1:end]
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host, ':') == i {
		host = host[:i] // "1.2.3.4:80"; a bare IPv6 address keeps its colons
	}
	if host == "" || !isHex(host[0]) && host[0] != ':' {
		return "", netip.Addr{} // a unix socket's "" or "@": spared ParseAddr's error value
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return "", netip.Addr{}
	}
	a = a.WithZone("").Unmap()
	return canonical(a, host), a
}
