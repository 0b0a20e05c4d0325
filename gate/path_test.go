package gate

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate/spec"
)

func TestNormalPath(t *testing.T) {
	cases := []struct {
		in, forward, match string
		err                error
	}{
		// Already normal: returned as it is.
		{"/", "/", "/", nil},
		{"/limited/a", "/limited/a", "/limited/a", nil},
		{"/limited/a/", "/limited/a/", "/limited/a/", nil},
		{"/a.b/.c/..d/...", "/a.b/.c/..d/...", "/a.b/.c/..d/...", nil},
		{"/a;b/c;d", "/a;b/c;d", "/a;b/c;d", nil},
		{"*", "*", "*", nil},
		{"", "/", "/", nil},
		// The bypasses of issue 13, finding 4: each is /limited/a.
		{"//limited/a", "/limited/a", "/limited/a", nil},
		{"/./limited/a", "/limited/a", "/limited/a", nil},
		{"/x/../limited/a", "/limited/a", "/limited/a", nil},
		{"/%2e/limited/a", "/limited/a", "/limited/a", nil},
		{"/%2F/limited/a", "", "", ErrPathSeparator},
		// More of the same.
		{"/%2f/limited/a", "", "", ErrPathSeparator},
		{"/limited%2Fa", "", "", ErrPathSeparator},
		{"/a/%2e%2E/limited/a", "/limited/a", "/limited/a", nil},
		{"/a/.%2e/limited/a", "/limited/a", "/limited/a", nil},
		{"/%6Cimited/a", "/limited/a", "/limited/a", nil},
		{"///limited///a//", "/limited/a/", "/limited/a/", nil},
		{"/limited/a/.", "/limited/a/", "/limited/a/", nil},
		{"/limited/a/b/..", "/limited/a/", "/limited/a/", nil},
		{"/limited/..", "/", "/", nil},
		{"/.", "/", "/", nil},
		{"/..", "", "", ErrPathEscapes},
		{"/../limited/a", "", "", ErrPathEscapes},
		{"/a/../../limited/a", "", "", ErrPathEscapes},
		{"/a/%2e%2e/%2e%2e/b", "", "", ErrPathEscapes},
		{`/\limited/a`, "", "", ErrPathSeparator},
		{"/%5Climited/a", "", "", ErrPathSeparator},
		{"/%5climited/a", "", "", ErrPathSeparator},
		{"/public/..;/limited/a", "", "", ErrPathParameter},
		{"/public/.;x/limited/a", "", "", ErrPathParameter},
		{"/public/%2e%2e;/limited/a", "", "", ErrPathParameter},
		{"/limited/%00", "", "", ErrPathEncoding},
		{"/limited/%zz", "", "", ErrPathEncoding},
		{"/limited/%4", "", "", ErrPathEncoding},
		// Other escapes stay escaped, in upper case; matching sees them decoded.
		{"/limited/a%20b", "/limited/a%20b", "/limited/a b", nil},
		{"/limited/a%3fb", "/limited/a%3Fb", "/limited/a?b", nil},
		{"/limited/caf%c3%a9", "/limited/caf%C3%A9", "/limited/café", nil},
		{"/limited/100%25", "/limited/100%25", "/limited/100%", nil},
		{"/limited/%252e%252e", "/limited/%252e%252e", "/limited/%2e%2e", nil},
		// What no client sends, or upstreams read in different ways (issue
		// 23, item 6); ";" parameters are kept here and set aside for
		// matching (withoutParams).
		{"/login#x", "", "", ErrPathFragment},
		{"/%2e/login#", "", "", ErrPathFragment},
		{"/login x", "", "", ErrPathSpace},
		{"/login\tx", "", "", ErrPathSpace},
		{"/login\x7f", "", "", ErrPathSpace},
		{"/log\x01in", "", "", ErrPathSpace},
		{"/login%20", "", "", ErrPathSpace},
		{"/%20login", "", "", ErrPathSpace},
		{"/login%20;x", "", "", ErrPathSpace},
		{"/login%20%3Bx", "", "", ErrPathSpace},
		{"/login%0a", "", "", ErrPathEncoding},
		{"/login%09x", "", "", ErrPathEncoding},
		{"/login%7F", "", "", ErrPathEncoding},
		{"/a/..%3Bx/login", "", "", ErrPathParameter},
		{"/a/.%3b/login", "", "", ErrPathParameter},
		{"/a/%2e%2e%3B/login", "", "", ErrPathParameter},
		{"/login;x", "/login;x", "/login;x", nil},
		{"/login%3bx", "/login%3Bx", "/login;x", nil},
		{"/files/a%20b", "/files/a%20b", "/files/a b", nil},
		{"/files/%23", "/files/%23", "/files/#", nil},
	}
	for _, c := range cases {
		forward, match, err := NormalPath(c.in)
		if forward != c.forward || match != c.match || !errors.Is(err, c.err) {
			t.Errorf("NormalPath(%q) = %q, %q, %v; want %q, %q, %v", c.in, forward, match, err, c.forward, c.match, c.err)
		}
	}
}

func TestNormalPathDoesNotAllocate(t *testing.T) {
	for _, p := range []string{"/", "/api/v1/users/42", "/a/b/", "/.well-known/x", "*"} {
		if n := testing.AllocsPerRun(100, func() { _, _, _ = NormalPath(p) }); n != 0 {
			t.Errorf("NormalPath(%q) allocates %v times", p, n)
		}
	}
}

func TestRequestPath(t *testing.T) {
	cases := []struct {
		target, want string
	}{
		{"/a/b?c=d", "/a/b"},
		{"//a/%2e/b?x", "//a/%2e/b"},
		{"http://app//a/%2e/b?x", "//a/%2e/b"},
		{"http://app", ""},
		{"*", "*"},
	}
	for _, c := range cases {
		method := "GET"
		if c.target == "*" {
			method = "OPTIONS"
		}
		r := httptest.NewRequest(method, c.target, nil)
		if got := RequestPath(r); got != c.want {
			t.Errorf("RequestPath(%q) = %q, want %q", c.target, got, c.want)
		}
	}
	r := &http.Request{URL: &url.URL{Path: "/a b/c"}}
	if got := RequestPath(r); got != "/a%20b/c" {
		t.Errorf("RequestPath of a request built in process = %q", got)
	}
}

// FuzzNormalPath: a normalised path is normal (absolute, no empty, "." or
// ".." segment, no separator in disguise), normalises to itself, and its match
// form is its decoding; without escapes, it is what path.Clean makes of the
// input (trailing slash kept), and a refusal for climbing is a path that does
// climb.
func FuzzNormalPath(f *testing.F) {
	for _, s := range []string{"/", "//limited/a", "/./limited/a", "/x/../limited/a", "/%2e/limited/a", "/%2F/limited/a",
		"/..", "/a/./b/../", "/%41%2e%7E", "/public/..;/x", "/a%20b", `/a\b`, "/%", "/a/%2e%2e%3b/b", "*", "",
		"/login#x", "/login x", "/login%20", "/login%3Bx", "/a;x/;y/b;", "/%0a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		forward, match, err := NormalPath(in)
		if err != nil {
			if forward != "" || match != "" {
				t.Fatalf("NormalPath(%q) = %q, %q with error %v", in, forward, match, err)
			}
			if errors.Is(err, ErrPathEscapes) && !strings.ContainsAny(in, "%\\;") && !climbs(in) {
				t.Fatalf("NormalPath(%q): %v, but it does not climb above the root", in, err)
			}
			return
		}
		if forward == "*" {
			if in != "*" {
				t.Fatalf("NormalPath(%q) = *", in)
			}
			return
		}
		if !strings.HasPrefix(forward, "/") || !isNormalForm(forward) {
			t.Fatalf("NormalPath(%q) = %q: not normal", in, forward)
		}
		if strings.ContainsFunc(forward, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '#' }) ||
			strings.ContainsFunc(match, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			t.Fatalf("NormalPath(%q) = %q, %q: a space, control or #", in, forward, match)
		}
		for seg := range strings.SplitSeq(match, "/") {
			if name, _, _ := strings.Cut(seg, ";"); strings.HasPrefix(name, " ") || strings.HasSuffix(name, " ") || name == "." || name == ".." {
				t.Fatalf("NormalPath(%q) match %q: segment %q", in, match, seg)
			}
		}
		if w := spec.WithoutParams(match); strings.Contains(w, ";") || spec.WithoutParams(w) != w || !strings.HasPrefix(w, "/") && w != "*" {
			t.Fatalf("spec.WithoutParams(%q) = %q", match, w)
		}
		upper := strings.ToUpper(forward)
		if strings.Contains(upper, "%2F") || strings.Contains(upper, "%5C") || strings.Contains(upper, "%2E") || strings.ContainsRune(forward, '\\') {
			t.Fatalf("NormalPath(%q) = %q: a separator or dot left encoded", in, forward)
		}
		if want, err := url.PathUnescape(forward); err != nil || match != want {
			t.Fatalf("NormalPath(%q) match %q, want the decoding of %q (%q, %v)", in, match, forward, want, err)
		}
		f2, m2, err := NormalPath(forward)
		if err != nil || f2 != forward || m2 != match {
			t.Fatalf("not idempotent: NormalPath(%q) = %q; NormalPath of that = %q, %q, %v", in, forward, f2, m2, err)
		}
		if !strings.ContainsAny(in, "%\\;") {
			want := path.Clean("/" + in)
			if dir := strings.HasSuffix(in, "/") || strings.HasSuffix(in, "/.") || strings.HasSuffix(in, "/.."); dir && want != "/" {
				want += "/"
			}
			if forward != want {
				t.Fatalf("NormalPath(%q) = %q, path.Clean makes %q", in, forward, want)
			}
		}
	})
}

// isNormalForm reports whether p has no empty segment (but a trailing one)
// and no "." or ".." segment.
func isNormalForm(p string) bool {
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		if s == "." || s == ".." || s == "" && i < len(segs)-1 {
			return false
		}
	}
	return true
}

// climbs reports whether the ".." segments of p take it above the root.
func climbs(p string) bool {
	depth := 0
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// TestMiddlewareNormalisesPaths: through the middleware on a real server,
// each disguise of /limited/a is counted in the limited group and served as
// /limited/a; a path the normaliser refuses is answered 400 and reaches
// neither the gate nor the handler.
func TestMiddlewareNormalisesPaths(t *testing.T) {
	g := newRealGate(t, `
[[group]]
name = "limited"
match = { path_prefix = "/limited/" }
  [group.concurrency]
  law = "fixed"
  limit = 100
[[group]]
name = "rest"
  [group.concurrency]
  law = "fixed"
  limit = 100
`)
	seen := make(chan string, 1)
	h := Middleware(g, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.URL.Path + " " + r.URL.EscapedPath() + " " + r.RequestURI
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	send := func(target string) (int, string) {
		t.Helper()
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n", target)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		select {
		case s := <-seen:
			return resp.StatusCode, s
		default:
			return resp.StatusCode, ""
		}
	}
	limitedBefore := groupCompleted(t, g, "limited")
	for _, target := range []string{"//limited/a", "/./limited/a", "/x/../limited/a", "/%2e/limited/a", "/%6Cimited/a?q=1"} {
		code, got := send(target)
		want := "/limited/a /limited/a /limited/a"
		if strings.Contains(target, "?") {
			want += "?q=1"
		}
		if code != 200 || got != want {
			t.Errorf("%s: %d, the handler saw %q; want 200 and %q", target, code, got, want)
		}
	}
	if n := groupCompleted(t, g, "limited") - limitedBefore; n != 5 {
		t.Errorf("the limited group counted %d requests, want 5", n)
	}
	for _, target := range []string{"/%2F/limited/a", "/../limited/a", "/public/..;/limited/a", `/\limited/a`} {
		if code, got := send(target); code != http.StatusBadRequest || got != "" {
			t.Errorf("%s: %d, the handler saw %q; want 400 and nothing served", target, code, got)
		}
	}
	if code, got := send("/limited/a%20b"); code != 200 || got != "/limited/a b /limited/a%20b /limited/a%20b" {
		t.Errorf("an escaped space: %d %q", code, got)
	}
}

// groupCompleted returns the requests group name has completed.
func groupCompleted(t *testing.T, g *Gate, name string) uint64 {
	t.Helper()
	g.Tick(time.Now())
	st, ok := g.Group(name)
	if !ok {
		t.Fatalf("no group %q", name)
	}
	return st.Completed[Success] + st.Completed[Dropped] + st.Completed[Ignored]
}
