package spec

import (
	"maps"
	"slices"
	"strings"
)

// Match selects requests. Every field that is set must accept the request;
// an empty Match accepts every request. See Match.Matches for the exact
// rules. It is also the config file's [group.match] (package configs, by
// the toml tags; the json tags are the admin API's).
type Match struct {
	// Path accepts exactly this URL path. Not together with PathPrefix.
	Path string `toml:"path,omitempty" json:"path,omitempty"`
	// PathPrefix accepts URL paths that start with it, byte for byte:
	// "/api/" accepts "/api/users" but not "/api"; "/api" also accepts
	// "/apiary". gRPC methods are paths: "/pkg.Service/".
	PathPrefix string `toml:"path_prefix,omitempty" json:"path_prefix,omitempty"`
	// Methods accepts these HTTP methods, upper case ("get" is read as
	// "GET"); empty accepts all.
	Methods []string `toml:"methods,omitempty" json:"methods,omitempty"`
	// Host accepts this host, without port, case-insensitively;
	// "*.example.com" accepts any subdomain of example.com (not
	// example.com itself).
	Host string `toml:"host,omitempty" json:"host,omitempty"`
	// Headers accepts requests whose header NAME has exactly the value
	// given, for every entry (the whitespace around either aside).
	Headers map[string]string `toml:"headers,omitempty" json:"headers,omitempty"`
	// CaseInsensitive compares Path and PathPrefix with the request's path
	// ignoring ASCII case: "/login" accepts "/LOGIN" (for an upstream that
	// routes so: ASP.NET, Express by default). Default false.
	CaseInsensitive bool `toml:"case_insensitive,omitempty" json:"case_insensitive,omitempty"`
	// TrailingSlash accepts a path that differs from Path by a trailing "/"
	// only ("/login" accepts "/login/", "/login/" accepts "/login"), and
	// the path a PathPrefix that ends in "/" names without it ("/api/"
	// accepts "/api"): for an upstream that routes both to one handler.
	// Default false.
	TrailingSlash bool `toml:"trailing_slash,omitempty" json:"trailing_slash,omitempty"`
}

// TrimOWS returns v without the optional whitespace (SP and HTAB) around
// it, which is not part of a field's value (RFC 9110 §5.5): an upstream
// reads "K ", "\tK" and "K" alike, and so do groups' keys and matches. It
// does not allocate.
func TrimOWS(v string) string { return strings.Trim(v, " \t") }

// Normal returns a copy of m spelled as Matches expects: methods in upper
// case, the host in lower case without a trailing dot, header names in
// canonical form and their values without the whitespace around them. Of
// two spellings of one name, such as "X-Env" and "x-env", both are kept,
// the second under its own spelling: Check refuses them, and such a group
// would never match.
func (m Match) Normal() Match {
	m.Methods = slices.Clone(m.Methods)
	for i, method := range m.Methods {
		m.Methods[i] = strings.ToUpper(method)
	}
	m.Host = strings.TrimSuffix(strings.ToLower(m.Host), ".")
	if len(m.Headers) > 0 {
		h := make(map[string]string, len(m.Headers))
		names := slices.Sorted(maps.Keys(m.Headers))
		for _, name := range names {
			if CanonicalHeader(name) == name {
				h[name] = TrimOWS(m.Headers[name])
			}
		}
		for _, name := range names {
			if key := CanonicalHeader(name); key != name {
				if _, dup := h[key]; dup {
					key = name // two spellings of one name: both kept, for Check to refuse
				}
				h[key] = TrimOWS(m.Headers[name])
			}
		}
		m.Headers = h
	}
	return m
}

// CatchAll reports whether m accepts every request: it sets nothing but,
// at most, the path prefix "/".
func (m *Match) CatchAll() bool {
	return m.Path == "" && (m.PathPrefix == "" || m.PathPrefix == "/") &&
		len(m.Methods) == 0 && m.Host == "" && len(m.Headers) == 0
}

// Matches reports whether m accepts a request with this method, Host header
// or authority (with or without port), URL path and header map (an
// http.Header; may be nil). The gate passes the request's normalised,
// decoded path: slashes merged, "." and ".." segments resolved, as the proxy
// forwards it (gate.NormalPath), without the ";" parameters of its segments
// ("/login;jsessionid=x" is "/login"); a path that no client sends or that
// upstreams read in different ways ("/login#x", a raw space, "/login%20",
// "/..;/") never gets here: it is refused (400). These are the rules the
// gate routes by:
//
//   - Path: the path equals it (ignoring ASCII case with CaseInsensitive; or
//     but for a trailing "/" of either, with TrailingSlash).
//   - PathPrefix: the path starts with it, byte for byte (ignoring ASCII
//     case with CaseInsensitive; with TrailingSlash a prefix that ends in
//     "/" also accepts the path without that "/"); "/" accepts every path,
//     even the "*" of "OPTIONS *".
//   - Methods: the method is one of them.
//   - Host: the host, without port and trailing dot, equals it ignoring
//     ASCII case; "*.example.com" accepts hosts ending in ".example.com".
//   - Headers: for each entry, the first value of that header, without the
//     whitespace around it (TrimOWS), equals it.
//
// m is expected to be Normal (methods upper case, header
// names canonical). Matches does not allocate.
func (m *Match) Matches(method, host, path string, header map[string][]string) bool {
	if m.Path != "" && !m.pathIs(path) {
		return false
	}
	if m.PathPrefix != "" && m.PathPrefix != "/" && !m.prefixOf(path) {
		return false
	}
	if len(m.Methods) > 0 && !contains(m.Methods, method) {
		return false
	}
	if m.Host != "" && !hostMatches(m.Host, stripPort(host)) {
		return false
	}
	for name, want := range m.Headers {
		if v := header[name]; len(v) == 0 || TrimOWS(v[0]) != want {
			return false
		}
	}
	return true
}

// pathIs reports whether path is m.Path, by m's options.
func (m *Match) pathIs(path string) bool {
	if m.equal(path, m.Path) {
		return true
	}
	if !m.TrailingSlash || path == "/" || m.Path == "/" {
		return false
	}
	return m.equal(strings.TrimSuffix(path, "/"), strings.TrimSuffix(m.Path, "/"))
}

// prefixOf reports whether path starts with m.PathPrefix, by m's options.
func (m *Match) prefixOf(path string) bool {
	pre := m.PathPrefix
	if len(path) >= len(pre) && m.equal(path[:len(pre)], pre) {
		return true
	}
	return m.TrailingSlash && strings.HasSuffix(pre, "/") && m.equal(path, pre[:len(pre)-1])
}

func (m *Match) equal(a, b string) bool {
	if m.CaseInsensitive {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// WithoutParams returns the decoded path p (gate.NormalPath's match) with
// the ";" parameters of each segment set aside, as groups are matched
// ("/login;jsessionid=x" is "/login"): a segment left empty is dropped, but
// a last one keeps the path's trailing "/". It allocates only for a path
// with a ";".
func WithoutParams(p string) string {
	if strings.IndexByte(p, ';') < 0 {
		return p
	}
	out := make([]byte, 0, len(p))
	for rest := p[1:]; ; {
		seg, more, found := strings.Cut(rest, "/")
		if i := strings.IndexByte(seg, ';'); i >= 0 {
			seg = seg[:i]
		}
		switch {
		case seg != "":
			out = append(out, '/')
			out = append(out, seg...)
		case !found && (len(out) == 0 || out[len(out)-1] != '/'):
			out = append(out, '/') // the last segment: "/a/;x" is "/a/"
		}
		if !found {
			break
		}
		rest = more
	}
	return string(out)
}

// Covers reports whether m accepts every request that o accepts, by the
// rules of [Match.Matches]. A group whose match is covered by an earlier
// group's can never be reached. It may miss a cover that only m's options
// make (it never claims one that is not).
func (m *Match) Covers(o *Match) bool {
	return m.coversPath(o) && coversMethods(m.Methods, o.Methods) &&
		coversHost(m.Host, o.Host) && coversHeaders(m.Headers, o.Headers)
}

func (m *Match) coversPath(o *Match) bool {
	if m.Path == "" && (m.PathPrefix == "" || m.PathPrefix == "/") {
		return true
	}
	if o.CaseInsensitive && !m.CaseInsensitive || o.TrailingSlash && !m.TrailingSlash {
		return false // o accepts a spelling that m may not
	}
	switch {
	case m.Path != "":
		return o.Path != "" && m.pathIs(o.Path) && (!o.TrailingSlash || m.pathIs(toggleSlash(o.Path)))
	case o.Path != "":
		return m.prefixOf(o.Path) && (!o.TrailingSlash || m.prefixOf(toggleSlash(o.Path)))
	case o.PathPrefix != "":
		// Every path that starts with o's prefix starts with m's; and with
		// o's TrailingSlash, its prefix's path without the "/" is m's too.
		starts := len(o.PathPrefix) >= len(m.PathPrefix) && m.equal(o.PathPrefix[:len(m.PathPrefix)], m.PathPrefix)
		return starts && (!o.TrailingSlash || !strings.HasSuffix(o.PathPrefix, "/") || m.prefixOf(o.PathPrefix[:len(o.PathPrefix)-1]))
	}
	return false
}

// toggleSlash returns p with its trailing "/" taken off, or with one added.
func toggleSlash(p string) string {
	if t, ok := strings.CutSuffix(p, "/"); ok {
		return t
	}
	return p + "/"
}

func coversMethods(m, o []string) bool {
	if len(m) == 0 {
		return true
	}
	if len(o) == 0 {
		return false
	}
	for _, x := range o {
		if !contains(m, x) {
			return false
		}
	}
	return true
}

func coversHost(m, o string) bool {
	switch {
	case m == "":
		return true
	case o == "":
		return false
	case !strings.HasPrefix(m, "*."):
		return !strings.HasPrefix(o, "*.") && strings.EqualFold(m, o)
	}
	// m is "*.s": it accepts o's hosts if they all end in ".s". For o =
	// "*.t" they end in ".t", so ".t" must end in ".s"; an exact host must
	// end in ".s" itself.
	suffix := m[1:]
	if strings.HasPrefix(o, "*.") {
		return hasSuffixFold(o[1:], suffix)
	}
	return len(o) > len(suffix) && hasSuffixFold(o, suffix)
}

func coversHeaders(m, o map[string]string) bool {
	for name, want := range m {
		if v, ok := o[name]; !ok || v != want {
			return false
		}
	}
	return true
}

func hostMatches(pattern, host string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*"); ok && strings.HasPrefix(suffix, ".") {
		return len(host) > len(suffix) && hasSuffixFold(host, suffix)
	}
	return strings.EqualFold(pattern, host)
}

// stripPort removes a port and a trailing dot from a Host value, and the
// brackets of an IPv6 literal.
func stripPort(host string) string {
	if strings.HasPrefix(host, "[") {
		if end := strings.IndexByte(host, ']'); end > 0 {
			return host[1:end]
		}
		return host
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host, ':') == i {
		host = host[:i]
	}
	return strings.TrimSuffix(host, ".")
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
