package gate

import (
	"errors"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate/spec"
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
	twice    bool // the key's header came in more than one field
}

// ErrKeyTwice is Class.Err of a request whose key header (key =
// "header:NAME") came in more than one field: upstreams read one or the
// other (Go's Header.Get and most frameworks the first, others the last),
// so whichever sluice counted, a client could spend one key's quota and be
// served as another.
var ErrKeyTwice = errors.New("the header that names the key is sent more than once")

// Err reports whether the gate cannot classify the request unambiguously
// (ErrKeyTwice), in which case it should not be served: the proxy and
// Middleware answer it 400 before it enters the gate.
func (c Class) Err() error {
	if c.twice {
		return ErrKeyTwice
	}
	return nil
}

// Group returns the name of the class's group.
func (c Class) Group() string {
	if c.g == nil {
		return ""
	}
	return c.g.name
}

// Classify finds r's group (the first whose match accepts it), key and
// priority. Groups match r's normalised path (NormalPath of RequestPath); a
// path that NormalPath refuses is matched as net/http decoded it (r.URL.Path),
// but should not be served: the proxy and Middleware answer it with 400. The
// key "ip" is the client's address as the config's TrustedProxies
// make it out (TrustedProxies.ClientAddr); a key "header:NAME" is the
// header's value without the whitespace around it (spec.TrimOWS), empty (as
// when the header is absent) when nothing else is left, and a request that
// sends it twice is flagged (Class.Err). Classify does not allocate for a
// path already normal.
func (g *Gate) Classify(r *http.Request) Class {
	_, match, err := NormalPath(RequestPath(r))
	if err != nil {
		match = ""
		if r.URL != nil {
			match = r.URL.Path
		}
	}
	return g.ClassifyPath(r, match)
}

// ClassifyPath is Classify with r's path given: path is the decoded path to
// match (NormalPath's match), which a caller that normalised r's path
// already has. Groups (and the key "path") see it without the ";"
// parameters of its segments: "/login;jsessionid=x" is "/login". It does
// not allocate, but for a path with a ";".
func (g *Gate) ClassifyPath(r *http.Request, path string) Class {
	path = spec.WithoutParams(path)
	t := g.table.Load()
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
		c.Key = t.trusted.ClientAddr(r.RemoteAddr, r.Header["X-Forwarded-For"])
	case keyPath:
		c.Key = path
	case keyHeader:
		v := r.Header[gr.keyHeader]
		if len(v) > 0 {
			c.Key = spec.TrimOWS(v[0])
		}
		c.twice = len(v) > 1
	}
	if len(c.Key) > MaxKeyLen {
		c.Key = c.Key[:MaxKeyLen]
	}
	if gr.prioHeader != "" {
		c.Priority = parsePriority(headerValue(r.Header, gr.prioHeader), gr.prio)
	}
	return c
}

// TrustedProxies returns the peers whose forwarding fields the config in
// force trusts (Config.TrustedProxies); nil when none. A proxy in front of
// the gate uses the same set for the forwarding fields it writes.
func (g *Gate) TrustedProxies() *TrustedProxies { return g.table.Load().trusted }

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

// parsePriority reads a priority header value: a level name in any case
// ("critical", "default", "sheddable"); anything else, or nothing, is def.
func parsePriority(v string, def adaptive.Priority) adaptive.Priority {
	if v == "" {
		return def
	}
	l, ok := spec.ParseLevel(strings.TrimSpace(v))
	if !ok {
		return def
	}
	return priorityOf(l)
}
