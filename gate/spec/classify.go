package spec

import (
	"fmt"
	"net/netip"
	"net/textproto"
	"strings"

	"github.com/sluicehq/sluice/adaptive"
)

// headerPrefix starts a KeySource or Priority read from a request header.
const headerPrefix = "header:"

// KeySource says which part of a request tells clients apart: "none" (one
// quota for the whole group), "ip" (the client's address: the connection's
// peer or, when that peer is one of Config.TrustedProxies, the right-most
// X-Forwarded-For address not in them), "path" (the URL path, normalised as
// groups match it), or "header:NAME" (KeyHeader; the value of header NAME,
// a request without it shares the quota of the empty key).
// "header:X-Forwarded-For" and "header:Forwarded" are refused (Check): a
// client prepends what it likes to them, which would make a new key per
// request; behind a load balancer, trust it and use "ip".
type KeySource string

// Key sources other than "header:NAME" (see KeyHeader).
const (
	KeyNone KeySource = "none"
	KeyIP   KeySource = "ip"
	KeyPath KeySource = "path"
)

// KeyHeader returns the KeySource "header:NAME".
func KeyHeader(name string) KeySource { return KeySource(headerPrefix + name) }

// Header returns NAME and true for "header:NAME", else "" and false.
// After Group.WithDefaults, NAME is in canonical form (see
// net/textproto.CanonicalMIMEHeaderKey), ready for a direct http.Header
// lookup.
func (k KeySource) Header() (string, bool) { return cutHeader(string(k)) }

// Check reports why k is not a key source, nil when it is one.
func (k KeySource) Check() error {
	switch k {
	case KeyNone, KeyIP, KeyPath:
		return nil
	}
	if name, ok := k.Header(); ok {
		if err := checkSourceHeader(name); err != nil {
			return err
		}
		switch textproto.CanonicalMIMEHeaderKey(name) {
		case "X-Forwarded-For", "Forwarded":
			return fmt.Errorf(`%q is a list every client can prepend to, so each request could bring a key of its own: `+
				`use key = "ip" with the load balancer in server.trusted_proxies, which takes the right-most address not in them`, string(k))
		}
		return nil
	}
	return fmt.Errorf(`must be "none", "ip", "path" or "header:NAME", got %q`, string(k))
}

// Level is a request's priority (adaptive.Priority) by the name a config
// and a priority header give it: one of adaptive.Priority's named levels.
// Under overload the lowest priority present is shed first: sheddable,
// then default, then critical. The names, their order and their priorities
// are adaptive's (adaptive.Priority.String); Level is only their text.
type Level string

// Levels, from most to least important: the names of adaptive.Critical,
// adaptive.Default and adaptive.Sheddable.
const (
	LevelCritical  Level = "critical"
	LevelDefault   Level = "default"
	LevelSheddable Level = "sheddable"
)

// levels are the priorities a Level names, most important first.
var levels = [...]adaptive.Priority{adaptive.Critical, adaptive.Default, adaptive.Sheddable}

// Priority returns the priority l names and true, or adaptive.Default and
// false when l names none.
func (l Level) Priority() (adaptive.Priority, bool) {
	for _, p := range levels {
		if string(l) == p.String() {
			return p, true
		}
	}
	return adaptive.Default, false
}

// Rank orders levels: 0 for critical, 1 for default, 2 for sheddable, and -1
// for anything else. A higher rank is shed earlier.
func (l Level) Rank() int {
	for i, p := range levels {
		if string(l) == p.String() {
			return i
		}
	}
	return -1
}

// ParseLevel reads a level as a client sends it in a priority header,
// ignoring ASCII case. It does not allocate.
func ParseLevel(s string) (Level, bool) {
	for _, p := range levels {
		if strings.EqualFold(s, p.String()) {
			return Level(p.String()), true
		}
	}
	return "", false
}

// Priority is a group's priority: a fixed Level for every request, or
// "header:NAME" (PriorityHeader) to read the level of each request from
// header NAME (with the group's DefaultPriority when missing or unknown).
// Clients can set such a header themselves: strip or overwrite it at your
// edge.
type Priority string

// PriorityHeader returns the Priority "header:NAME".
func PriorityHeader(name string) Priority { return Priority(headerPrefix + name) }

// Header returns NAME and true for "header:NAME", else "" and false.
func (p Priority) Header() (string, bool) { return cutHeader(string(p)) }

// Level returns the fixed level and true, or "" and false for a header
// priority or an invalid one.
func (p Priority) Level() (Level, bool) {
	if Level(p).Rank() < 0 {
		return "", false
	}
	return Level(p), true
}

// Check reports why p is not a priority, nil when it is one.
func (p Priority) Check() error {
	if _, ok := p.Level(); ok {
		return nil
	}
	if name, ok := p.Header(); ok {
		return checkSourceHeader(name)
	}
	return fmt.Errorf(`must be "critical", "default", "sheddable" or "header:NAME", got %q`, string(p))
}

// checkSourceHeader checks the NAME of a "header:NAME" key or priority.
func checkSourceHeader(name string) error {
	if name == "" {
		return fmt.Errorf(`"header:" needs a header name, such as "header:X-Tenant"`)
	}
	return CheckHeaderName(name)
}

func cutHeader(s string) (string, bool) {
	if name, ok := strings.CutPrefix(s, headerPrefix); ok {
		return name, true
	}
	return "", false
}

// CheckHeaderName accepts an HTTP field name: a token (RFC 9110 §5.1).
func CheckHeaderName(name string) error {
	if name == "" {
		return fmt.Errorf("header name is empty")
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return fmt.Errorf("header name %q has %q, which is not allowed in a field name", name, name[i])
		}
	}
	return nil
}

// isTokenChar reports whether c may appear in an RFC 9110 token.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// CanonicalHeader returns the canonical form of a valid header name (see
// net/textproto.CanonicalMIMEHeaderKey) and leaves anything else as it is,
// for a check to report.
func CanonicalHeader(name string) string {
	if CheckHeaderName(name) != nil {
		return name
	}
	return textproto.CanonicalMIMEHeaderKey(name)
}

// TrustUnix is the Config.TrustedProxies entry that trusts the clients of a
// unix-socket listener, which have no address.
const TrustUnix = "unix"

// ParseTrustedProxy reads one Config.TrustedProxies entry: a CIDR prefix
// ("10.0.0.0/8") or a single address ("192.0.2.7", "::1"), returned as a
// prefix (a single address is /32 or /128; IPv4-mapped IPv6 forms are read
// as IPv4), or TrustUnix, for which unix is true. A prefix with bits set
// beyond its length ("10.0.0.1/8") is refused, as a likely typo.
func ParseTrustedProxy(s string) (p netip.Prefix, unix bool, err error) {
	if s == TrustUnix {
		return netip.Prefix{}, true, nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, false, fmt.Errorf(`must be a CIDR prefix such as "10.0.0.0/8", an address, or "unix", got %q`, s)
		}
		if m := p.Masked(); m != p {
			return netip.Prefix{}, false, fmt.Errorf("%q has bits set beyond its /%d: write %q", s, p.Bits(), m.String())
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p, false, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, false, fmt.Errorf(`must be a CIDR prefix such as "10.0.0.0/8", an address, or "unix", got %q`, s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), false, nil
}
