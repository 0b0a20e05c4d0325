package configs

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gate/spec"
)

type request struct {
	method, host, path string
	header             map[string][]string
}

func TestMatches(t *testing.T) {
	api := spec.Match{PathPrefix: "/api/", Methods: []string{"GET", "POST"}}
	tests := []struct {
		m    spec.Match
		r    request
		want bool
	}{
		{spec.Match{}, request{"DELETE", "x", "/anything", nil}, true},
		{spec.Match{PathPrefix: "/"}, request{"OPTIONS", "x", "*", nil}, true},
		{api, request{"GET", "h", "/api/users", nil}, true},
		{api, request{"GET", "h", "/api", nil}, false},
		{api, request{"PUT", "h", "/api/users", nil}, false},
		{spec.Match{PathPrefix: "/api"}, request{"GET", "h", "/apiary", nil}, true},
		{spec.Match{Path: "/healthz"}, request{"GET", "h", "/healthz", nil}, true},
		{spec.Match{Path: "/healthz"}, request{"GET", "h", "/healthz/", nil}, false},
		{spec.Match{Host: "api.example.com"}, request{"GET", "API.Example.com:8443", "/", nil}, true},
		{spec.Match{Host: "api.example.com"}, request{"GET", "api.example.com.", "/", nil}, true},
		{spec.Match{Host: "api.example.com"}, request{"GET", "example.com", "/", nil}, false},
		{spec.Match{Host: "*.example.com"}, request{"GET", "a.b.example.com:80", "/", nil}, true},
		{spec.Match{Host: "*.example.com"}, request{"GET", "example.com", "/", nil}, false},
		{spec.Match{Host: "*.example.com"}, request{"GET", "badexample.com", "/", nil}, false},
		{spec.Match{Host: "::1"}, request{"GET", "[::1]:8080", "/", nil}, true},
		{spec.Match{Host: "10.0.0.1"}, request{"GET", "10.0.0.1:80", "/", nil}, true},
		{spec.Match{Headers: map[string]string{"X-Env": "canary"}}, request{"GET", "h", "/", map[string][]string{"X-Env": {"canary", "prod"}}}, true},
		{spec.Match{Headers: map[string]string{"X-Env": "canary"}}, request{"GET", "h", "/", map[string][]string{"X-Env": {"prod"}}}, false},
		{spec.Match{Headers: map[string]string{"X-Env": "canary"}}, request{"GET", "h", "/", nil}, false},
		// The whitespace around a value is not part of it (issue 23, item 4).
		{spec.Match{Headers: map[string]string{"X-Env": "canary"}}, request{"GET", "h", "/", map[string][]string{"X-Env": {" canary\t"}}}, true},
		{spec.Match{Headers: map[string]string{"X-Env": "canary"}}, request{"GET", "h", "/", map[string][]string{"X-Env": {"can ary"}}}, false},
	}
	for i, tt := range tests {
		if got := tt.m.Matches(tt.r.method, tt.r.host, tt.r.path, tt.r.header); got != tt.want {
			t.Errorf("%d: %+v.Matches(%+v) = %v, want %v", i, tt.m, tt.r, got, tt.want)
		}
	}
}

func TestMatchesDoesNotAllocate(t *testing.T) {
	m := spec.Match{PathPrefix: "/api/", Methods: []string{"GET"}, Host: "*.example.com", Headers: map[string]string{"X-Env": "a"}}
	h := map[string][]string{"X-Env": {"a"}}
	allocs := testing.AllocsPerRun(100, func() {
		if !m.Matches("GET", "x.example.com:443", "/api/v1", h) {
			t.Fatal("no match")
		}
	})
	if allocs != 0 {
		t.Errorf("Matches allocates %v times", allocs)
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		a, b spec.Match
		want bool
	}{
		{spec.Match{}, spec.Match{Path: "/x", Methods: []string{"GET"}}, true},
		{spec.Match{PathPrefix: "/"}, spec.Match{Host: "a.com"}, true},
		{spec.Match{PathPrefix: "/api/"}, spec.Match{PathPrefix: "/api/v1/"}, true},
		{spec.Match{PathPrefix: "/api/v1/"}, spec.Match{PathPrefix: "/api/"}, false},
		{spec.Match{PathPrefix: "/api/"}, spec.Match{Path: "/api/x"}, true},
		{spec.Match{Path: "/api/x"}, spec.Match{PathPrefix: "/api/x"}, false},
		{spec.Match{PathPrefix: "/api/"}, spec.Match{}, false},
		{spec.Match{Methods: []string{"GET", "POST"}}, spec.Match{Methods: []string{"GET"}}, true},
		{spec.Match{Methods: []string{"GET"}}, spec.Match{Methods: []string{"GET", "POST"}}, false},
		{spec.Match{Methods: []string{"GET"}}, spec.Match{}, false},
		{spec.Match{Host: "*.example.com"}, spec.Match{Host: "a.example.com"}, true},
		{spec.Match{Host: "*.example.com"}, spec.Match{Host: "*.a.example.com"}, true},
		{spec.Match{Host: "*.a.example.com"}, spec.Match{Host: "*.example.com"}, false},
		{spec.Match{Host: "*.example.com"}, spec.Match{Host: "example.com"}, false},
		{spec.Match{Host: "a.example.com"}, spec.Match{Host: "*.example.com"}, false},
		{spec.Match{Headers: map[string]string{"X-A": "1"}}, spec.Match{Headers: map[string]string{"X-A": "1", "X-B": "2"}}, true},
		{spec.Match{Headers: map[string]string{"X-A": "1", "X-B": "2"}}, spec.Match{Headers: map[string]string{"X-A": "1"}}, false},
	}
	for i, tt := range tests {
		if got := tt.a.Covers(&tt.b); got != tt.want {
			t.Errorf("%d: %+v.Covers(%+v) = %v, want %v", i, tt.a, tt.b, got, tt.want)
		}
	}
}

// TestCoversImpliesMatches checks Covers against Matches on random matches
// and requests drawn from small alphabets: whenever a covers b, every
// request b accepts, a accepts too. It also checks that the generator finds
// both outcomes, so the property is not true for want of cases.
func TestCoversImpliesMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	paths := []string{"/", "/a", "/a/", "/a/b", "/ab", "/b", "*"}
	hosts := []string{"x.com", "a.x.com", "b.a.x.com", "y.com", "X.COM:80"}
	randMatch := func() spec.Match {
		var m spec.Match
		switch rng.IntN(3) {
		case 0:
			m.Path = pick(paths...)
		case 1:
			m.PathPrefix = pick(paths[:6]...)
		}
		for range rng.IntN(3) {
			m.Methods = append(m.Methods, pick("GET", "POST", "PUT"))
		}
		if rng.IntN(2) == 0 {
			m.Host = pick("x.com", "a.x.com", "*.x.com", "*.a.x.com", "y.com")
		}
		if rng.IntN(3) == 0 {
			m.Headers = map[string]string{pick("X-A", "X-B"): pick("1", "2")}
		}
		return m
	}
	randRequest := func() request {
		h := map[string][]string{}
		for _, name := range []string{"X-A", "X-B"} {
			if rng.IntN(2) == 0 {
				h[name] = []string{pick("1", "2")}
			}
		}
		return request{pick("GET", "POST", "PUT"), pick(hosts...), pick(paths...), h}
	}
	covered, notCovered := 0, 0
	for range 3000 {
		a, b := randMatch(), randMatch()
		if !a.Covers(&b) {
			notCovered++
			continue
		}
		covered++
		for range 50 {
			r := randRequest()
			if b.Matches(r.method, r.host, r.path, r.header) && !a.Matches(r.method, r.host, r.path, r.header) {
				t.Fatalf("%s covers %s, but only the latter accepts %+v", show(a), show(b), r)
			}
		}
	}
	if covered < 100 || notCovered < 100 {
		t.Errorf("covered %d, not covered %d: the generator does not exercise both", covered, notCovered)
	}
}

func show(m spec.Match) string { return fmt.Sprintf("%+v", m) }

// TestMatchOptionsReachTheGate: case_insensitive and trailing_slash are
// read from the file into the gate's Match, and back.
func TestMatchOptionsReachTheGate(t *testing.T) {
	cfg, err := Parse("t.toml", []byte(`
[upstream]
url = "http://127.0.0.1:9"
[[group]]
name = "login"
match = { path = "/login", case_insensitive = true, trailing_slash = true }
[[group]]
name = "rest"
`))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Gate().Groups[0].Match
	if !m.CaseInsensitive || !m.TrailingSlash || !m.Matches("GET", "h", "/LOGIN/", nil) {
		t.Fatalf("the gate's match %+v", m)
	}
}

// TestConfiguredParamsNeverMatch: a configured path with ";" parameters
// is refused, since requests are matched without theirs.
func TestConfiguredParamsNeverMatch(t *testing.T) {
	_, err := Parse("t.toml", []byte(`
[upstream]
url = "http://127.0.0.1:9"
[[group]]
name = "login"
match = { path = "/login;jsessionid" }
[[group]]
name = "rest"
`))
	want := `t.toml:6: group[0].match.path: never matches: requests are matched without the ";" parameters of their path's segments, so write "/login", got "/login;jsessionid"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Parse: %v\nwant %s", err, want)
	}
}
