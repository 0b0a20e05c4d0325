package spec

import (
	"math/rand/v2"
	"testing"
)

// TestPathOptions: CaseInsensitive and TrailingSlash widen Path and
// PathPrefix as their docs say, and nothing else.
func TestPathOptions(t *testing.T) {
	for _, c := range []struct {
		m    Match
		path string
		want bool
	}{
		{Match{Path: "/login"}, "/login", true},
		{Match{Path: "/login"}, "/LOGIN", false},
		{Match{Path: "/login"}, "/login/", false},
		{Match{Path: "/login", CaseInsensitive: true}, "/LOGIN", true},
		{Match{Path: "/login", CaseInsensitive: true}, "/Login/", false},
		{Match{Path: "/login", TrailingSlash: true}, "/login/", true},
		{Match{Path: "/login/", TrailingSlash: true}, "/login", true},
		{Match{Path: "/login", TrailingSlash: true}, "/login//", false},
		{Match{Path: "/login", TrailingSlash: true}, "/LOGIN/", false},
		{Match{Path: "/login", TrailingSlash: true, CaseInsensitive: true}, "/LOGIN/", true},
		{Match{Path: "/", TrailingSlash: true}, "/", true},
		{Match{PathPrefix: "/api/"}, "/api", false},
		{Match{PathPrefix: "/api/", TrailingSlash: true}, "/api", true},
		{Match{PathPrefix: "/api/", TrailingSlash: true}, "/apiary", false},
		{Match{PathPrefix: "/api", TrailingSlash: true}, "/ap", false},
		{Match{PathPrefix: "/api/", CaseInsensitive: true}, "/API/users", true},
		{Match{PathPrefix: "/api/", CaseInsensitive: true}, "/AP", false},
	} {
		if got := c.m.Matches("GET", "h", c.path, nil); got != c.want {
			t.Errorf("%+v.Matches(%q) = %v, want %v", c.m, c.path, got, c.want)
		}
	}
}

// TestCoversWithOptions checks Covers against Matches on random matches
// with the path options, as configs' TestCoversImpliesMatches does without
// them: whenever a covers b, every path b accepts a accepts too; and both
// outcomes occur.
func TestCoversWithOptions(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	paths := []string{"/", "/a", "/a/", "/A", "/A/", "/a/b", "/a/B/", "/ab", "/b", "/B/c", "*"}
	pick := func() string { return paths[rng.IntN(len(paths))] }
	randMatch := func() Match {
		var m Match
		switch rng.IntN(3) {
		case 0:
			m.Path = pick()
		case 1:
			m.PathPrefix = paths[rng.IntN(len(paths)-1)]
		}
		m.CaseInsensitive, m.TrailingSlash = rng.IntN(2) == 0, rng.IntN(2) == 0
		return m
	}
	covered, notCovered := 0, 0
	for range 20000 {
		a, b := randMatch(), randMatch()
		if !a.Covers(&b) {
			notCovered++
			continue
		}
		covered++
		for _, p := range paths {
			if b.Matches("GET", "h", p, nil) && !a.Matches("GET", "h", p, nil) {
				t.Fatalf("%+v covers %+v, but %q is accepted by the second only", a, b, p)
			}
		}
	}
	if covered < 100 || notCovered < 100 {
		t.Fatalf("covered %d, not covered %d: the generator does not test both", covered, notCovered)
	}
}

// TestWithoutParams: groups see a path without its segments' ";"
// parameters.
func TestWithoutParams(t *testing.T) {
	for in, want := range map[string]string{
		"/login": "/login", "/login;x": "/login", "/login;jsessionid=1;y=2": "/login", "/a;x/b;y/": "/a/b/",
		"/;x/login": "/login", "/login/;x": "/login/", "/;x": "/", "/": "/", "*": "*", "/a;b/c;d": "/a/c",
	} {
		if got := WithoutParams(in); got != want {
			t.Errorf("WithoutParams(%q) = %q, want %q", in, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = WithoutParams("/api/v1/users") }); n != 0 {
		t.Errorf("withoutParams of a path without \";\" allocates %v times", n)
	}
}
