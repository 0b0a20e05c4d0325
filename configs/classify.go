package configs

import (
	"fmt"
	"net/textproto"
	"strings"

	"github.com/sluicehq/sluice/gate/spec"
)

// headerPrefix starts a KeySource or Priority read from a request header.
const headerPrefix = "header:"

// KeySource says which part of a request tells clients apart for a per-key
// rate limit: "none" (one quota for the whole group), "ip" (the client's
// address: the connection's peer or, when that peer is one of
// server.trusted_proxies, the right-most X-Forwarded-For address not in
// them), "path" (the URL path, normalised as groups match it), or
// "header:NAME" (the value of header NAME; a request without it shares the
// quota of the empty key). "header:X-Forwarded-For" and "header:Forwarded"
// are refused: a client prepends what it likes to them, which would make a
// new key per request; behind a load balancer, list it in
// server.trusted_proxies and use "ip".
type KeySource string

// Key sources other than "header:NAME" (see [KeyHeader]).
const (
	KeyNone KeySource = "none"
	KeyIP   KeySource = "ip"
	KeyPath KeySource = "path"
)

// KeyHeader returns the KeySource "header:NAME".
func KeyHeader(name string) KeySource { return KeySource(headerPrefix + name) }

// Header returns NAME and true for "header:NAME", else "" and false.
// After SetDefaults, NAME is in canonical form (see
// net/textproto.CanonicalMIMEHeaderKey), ready for a direct http.Header
// lookup.
func (k KeySource) Header() (string, bool) { return cutHeader(string(k)) }

func (k KeySource) check() error {
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

// Level is a request priority: "critical", "default" or "sheddable". Under
// overload the lowest level present is shed first. It is the gate's
// (spec.Level, with its Rank).
type Level = spec.Level

// Levels, from most to least important.
const (
	LevelCritical  = spec.LevelCritical
	LevelDefault   = spec.LevelDefault
	LevelSheddable = spec.LevelSheddable
)

// Priority is a group's priority: a fixed Level for every request, or
// "header:NAME" to read the level of each request from header NAME (with
// the group's DefaultPriority when missing or unknown). Clients can set
// such a header themselves: strip or overwrite it at your edge.
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

func (p Priority) check() error {
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
	return checkHeaderName(name)
}

func cutHeader(s string) (string, bool) {
	if name, ok := strings.CutPrefix(s, headerPrefix); ok {
		return name, true
	}
	return "", false
}

// checkHeaderName accepts an HTTP field name (spec.CheckHeaderName).
func checkHeaderName(name string) error { return spec.CheckHeaderName(name) }

// canonicalHeader returns the canonical form of a valid header name and
// leaves anything else as it is, for Validate to report.
func canonicalHeader(name string) string { return spec.CanonicalHeader(name) }
