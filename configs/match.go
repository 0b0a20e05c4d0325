package configs

import (
	"path"
	"strings"

	"github.com/sluicehq/sluice/gate/spec"
)

// spec is m as the gate's Match: the rules of matching are the gate's. The
// two types have the same fields, in the same order (a conversion that
// does not compile says they drifted apart).
func (m *Match) spec() spec.Match {
	return spec.Match(*m)
}

// CatchAll reports whether m accepts every request (spec.Match.CatchAll).
func (m *Match) CatchAll() bool { s := m.spec(); return s.CatchAll() }

// Matches reports whether m accepts a request, by the rules the gate routes
// by (spec.Match.Matches). m is expected to have been through SetDefaults.
// It does not allocate.
func (m *Match) Matches(method, host, path string, header map[string][]string) bool {
	s := m.spec()
	return s.Matches(method, host, path, header)
}

// Covers reports whether m accepts every request that o accepts
// (spec.Match.Covers). A group whose match is covered by an earlier group's
// can never be reached.
func (m *Match) Covers(o *Match) bool {
	s, so := m.spec(), o.spec()
	return s.Covers(&so)
}

// checkNormal reports a path or path prefix that no request can match:
// requests are matched on their normalised path (slashes merged, "." and
// ".." segments resolved; a path with a backslash is refused) without the
// ";" parameters of its segments, so a configured path with an empty, "."
// or ".." segment, a backslash or a ";" never matches. Of a prefix only the whole segments are looked at: "/a/." may
// still match "/a/.well-known". p is the match's key path.
func (m *Match) checkNormal(ck *checker, p string) {
	for _, k := range [...]struct {
		key, v string
		prefix bool
	}{{"path", m.Path, false}, {"path_prefix", m.PathPrefix, true}} {
		if !strings.HasPrefix(k.v, "/") {
			continue // reported by check
		}
		whole := k.v
		if k.prefix {
			whole = k.v[:strings.LastIndexByte(k.v, '/')+1]
		}
		switch {
		case strings.IndexByte(k.v, '\\') >= 0:
			ck.errorf(join(p, k.key), "never matches: requests whose path holds a backslash are refused (400), got %q", k.v)
		case strings.IndexByte(k.v, ';') >= 0:
			ck.errorf(join(p, k.key), `never matches: requests are matched without the ";" parameters of their path's segments, so write %q, got %q`, spec.WithoutParams(k.v), k.v)
		case !normalSegments(whole):
			want := path.Clean(whole)
			dir := strings.HasSuffix(whole, "/") || strings.HasSuffix(whole, "/.") || strings.HasSuffix(whole, "/..")
			if dir && want != "/" { // "/a/." is "/a/", as a request path normalises
				want += "/"
			}
			want += k.v[len(whole):]
			ck.errorf(join(p, k.key), `never matches: requests are matched on their normalised path (slashes merged, "." and ".." resolved), so write %q, got %q`, want, k.v)
		}
	}
}

// normalSegments reports whether the absolute path s has no empty, "." or
// ".." segment (a trailing slash aside).
func normalSegments(s string) bool {
	for rest := s[1:]; rest != ""; {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}
