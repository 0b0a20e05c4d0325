package configs

import "github.com/sluicehq/sluice/gate/spec"

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
