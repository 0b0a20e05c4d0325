package gate

import (
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/configs"
)

// MaxKeyLen bounds a key: a longer one (a header value, a path) is cut to its
// first MaxKeyLen bytes, so a client cannot make the gate store large keys.
// Two keys that share those bytes share their quota.
const MaxKeyLen = 256

// Class is a classified request: the group that takes it, its key and its
// priority. The zero Class is invalid (Group returns "").
type Class struct {
	g        *group
	Key      string
	Priority adaptive.Priority
}

// Group returns the name of the class's group.
func (c Class) Group() string {
	if c.g == nil {
		return ""
	}
	return c.g.name
}

// Classify finds r's group (the first whose match accepts it), key and
// priority. It does not allocate.
func (g *Gate) Classify(r *http.Request) Class {
	t := g.table.Load()
	path := ""
	if r.URL != nil {
		path = r.URL.Path
	}
	gr := t.routes[len(t.routes)-1].g // the catch-all, SetDefaults' guarantee
	for i := range t.routes {
		if t.routes[i].match.Matches(r.Method, r.Host, path, r.Header) {
			gr = t.routes[i].g
			break
		}
	}
	c := Class{g: gr, Priority: gr.prio}
	switch gr.keyKind {
	case keyIP:
		c.Key = clientIP(r.RemoteAddr)
	case keyPath:
		c.Key = path
	case keyHeader:
		c.Key = headerValue(r.Header, gr.keyHeader)
	}
	if len(c.Key) > MaxKeyLen {
		c.Key = c.Key[:MaxKeyLen]
	}
	if gr.prioHeader != "" {
		c.Priority = parsePriority(headerValue(r.Header, gr.prioHeader), gr.prio)
	}
	return c
}

// ClassOf builds the Class of a request that is not HTTP (a queue consumer,
// a batch job): group by name, key and priority given. ok is false when no
// group has that name.
func (g *Gate) ClassOf(group, key string, p adaptive.Priority) (c Class, ok bool) {
	gr := g.table.Load().byName[group]
	if gr == nil {
		return Class{}, false
	}
	if len(key) > MaxKeyLen {
		key = key[:MaxKeyLen]
	}
	return Class{g: gr, Key: key, Priority: min(p, adaptive.Critical)}, true
}

// headerValue is the first value of the canonical header name, without
// allocating.
func headerValue(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// clientIP returns the host part of a RemoteAddr ("1.2.3.4:5678",
// "[::1]:5678"), or addr itself when it has no port. It returns a substring
// of addr: no allocation.
func clientIP(addr string) string {
	if addr == "" {
		return ""
	}
	if addr[0] == '[' {
		if i := strings.IndexByte(addr, ']'); i > 0 {
			return addr[1:i]
		}
		return addr
	}
	i := strings.LastIndexByte(addr, ':')
	if i < 0 || strings.IndexByte(addr[:i], ':') >= 0 {
		return addr // no port, or an IPv6 address without brackets
	}
	return addr[:i]
}

// parsePriority reads a priority header value: a level name in any case
// ("critical", "default", "sheddable"); anything else, or nothing, is def.
func parsePriority(v string, def adaptive.Priority) adaptive.Priority {
	if v == "" {
		return def
	}
	l, ok := configs.ParseLevel(strings.TrimSpace(v))
	if !ok {
		return def
	}
	return priorityOf(l)
}
