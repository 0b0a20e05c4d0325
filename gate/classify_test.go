package gate

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/adaptive"
)

const routingConfig = `
[[group]]
name = "admin"
match = { path_prefix = "/admin/", methods = ["POST"] }
priority = "critical"
  [group.concurrency]
  law = "fixed"
  limit = 5

[[group]]
name = "api"
match = { path_prefix = "/api/" }
key = "header:x-tenant"
priority = "header:x-priority"
default_priority = "sheddable"
  [group.concurrency]
  law = "fixed"
  limit = 5

[[group]]
name = "files"
match = { path_prefix = "/files/" }
key = "path"
  [group.concurrency]
  law = "fixed"
  limit = 5

[[group]]
name = "rest"
key = "ip"
  [group.concurrency]
  law = "fixed"
  limit = 5
`

func TestClassify(t *testing.T) {
	g, _ := newGate(t, routingConfig)
	cases := []struct {
		name     string
		method   string
		path     string
		headers  []string
		remote   string
		group    string
		key      string
		priority adaptive.Priority
	}{
		{"admin POST", "POST", "/admin/x", nil, "", "admin", "", adaptive.Critical},
		{"admin GET falls through", "GET", "/admin/x", nil, "192.0.2.9:80", "rest", "192.0.2.9", adaptive.Default},
		{"api header key, default priority", "GET", "/api/v1", []string{"X-Tenant", "acme"}, "", "api", "acme", adaptive.Sheddable},
		{"api critical", "GET", "/api/v1", []string{"X-Tenant", "acme", "X-Priority", "critical"}, "", "api", "acme", adaptive.Critical},
		{"api priority any case", "GET", "/api/v1", []string{"X-Priority", "DeFault"}, "", "api", "", adaptive.Default},
		{"api unknown priority", "GET", "/api/v1", []string{"X-Priority", "urgent"}, "", "api", "", adaptive.Sheddable},
		{"api no tenant shares the empty key", "GET", "/api/v1", nil, "", "api", "", adaptive.Sheddable},
		{"path key", "GET", "/files/a/b", nil, "", "files", "/files/a/b", adaptive.Default},
		{"ip v6", "GET", "/", nil, "[2001:db8::1]:443", "rest", "2001:db8::1", adaptive.Default},
		{"ip without port", "GET", "/", nil, "192.0.2.7", "rest", "192.0.2.7", adaptive.Default},
		{"ip ignores X-Forwarded-For from an untrusted peer", "GET", "/", []string{"X-Forwarded-For", "198.51.100.1"}, "192.0.2.7:1", "rest", "192.0.2.7", adaptive.Default},
		{"slashes merged", "GET", "//files//a", nil, "", "files", "/files/a", adaptive.Default},
		{"dot segments resolved", "GET", "/x/../files/./a", nil, "", "files", "/files/a", adaptive.Default},
		{"encoded dots resolved", "GET", "/%2e/files/%2E%2e/files/a", nil, "", "files", "/files/a", adaptive.Default},
		{"unreserved decoded", "GET", "/%66iles/a", nil, "", "files", "/files/a", adaptive.Default},
		{"other escapes decoded for matching", "GET", "/files/a%20b", nil, "", "files", "/files/a b", adaptive.Default},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := request(c.path, c.headers...)
			r.Method = c.method
			if c.remote != "" {
				r.RemoteAddr = c.remote
			}
			cl := g.Classify(r)
			if cl.Group() != c.group || cl.Key != c.key || cl.Priority != c.priority {
				t.Errorf("Classify = {%s %q %v}, want {%s %q %v}", cl.Group(), cl.Key, cl.Priority, c.group, c.key, c.priority)
			}
		})
	}
}

func TestClassifyLongKeyIsCut(t *testing.T) {
	g, _ := newGate(t, routingConfig)
	long := strings.Repeat("k", 10*MaxKeyLen)
	cl := g.Classify(request("/api/x", "X-Tenant", long))
	if len(cl.Key) != MaxKeyLen || cl.Key != long[:MaxKeyLen] {
		t.Errorf("key of %d bytes, want the first %d", len(cl.Key), MaxKeyLen)
	}
}

func TestClassifyDoesNotAllocate(t *testing.T) {
	g, _ := newGate(t, routingConfig)
	reqs := []*http.Request{
		request("/api/v1", "X-Tenant", "acme", "X-Priority", "critical"),
		request("/files/a"),
		request("/other"),
	}
	for _, r := range reqs {
		if n := testing.AllocsPerRun(100, func() { g.Classify(r) }); n != 0 {
			t.Errorf("Classify(%s) allocates %v times", r.URL.Path, n)
		}
	}
}

func TestClassOf(t *testing.T) {
	g, _ := newGate(t, routingConfig)
	if _, ok := g.ClassOf("nope", "", adaptive.Default); ok {
		t.Error("ClassOf of an unknown group: ok")
	}
	c, ok := g.ClassOf("api", "k", 200)
	if !ok || c.Group() != "api" || c.Key != "k" || c.Priority != adaptive.Critical {
		t.Errorf("ClassOf = %+v %v, want api/k/critical (priority clamped)", c, ok)
	}
}

func TestParsePriority(t *testing.T) {
	cases := []struct {
		in   string
		want adaptive.Priority
	}{
		{"critical", adaptive.Critical},
		{"CRITICAL", adaptive.Critical},
		{" sheddable ", adaptive.Sheddable},
		{"default", adaptive.Default},
		{"", adaptive.Sheddable},
		{"7", adaptive.Sheddable},
		{"critical,critical", adaptive.Sheddable},
	}
	for _, c := range cases {
		if got := parsePriority(c.in, adaptive.Sheddable); got != c.want {
			t.Errorf("parsePriority(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// FuzzParsePriority: any header value gives one of the three levels: the one
// it names (in any case, with surrounding spaces), else the default.
func FuzzParsePriority(f *testing.F) {
	for _, s := range []string{"critical", "Default", " sheddable", "", "crit", "7", "\x00", "ＣＲＩＴＩＣＡＬ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := parsePriority(v, adaptive.Default)
		want := adaptive.Default
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "critical":
			want = adaptive.Critical
		case "sheddable":
			want = adaptive.Sheddable
		}
		if strings.ContainsFunc(strings.TrimSpace(v), func(r rune) bool { return r > 0x7f }) {
			want = adaptive.Default // ToLower folds non-ASCII letters; ParseLevel does not
		}
		if got != want {
			t.Fatalf("parsePriority(%q) = %v, want %v", v, got, want)
		}
		if n := testing.AllocsPerRun(1, func() { parsePriority(v, adaptive.Default) }); n != 0 {
			t.Fatalf("parsePriority(%q) allocates", v)
		}
	})
}

// FuzzClassify: any key and priority header values classify without panic
// or allocation, into a bounded key and a valid priority.
func FuzzClassify(f *testing.F) {
	g, _ := newGate(f, routingConfig)
	f.Add("/api/x", "acme", "critical", "192.0.2.1:1")
	f.Add("/files/"+strings.Repeat("a", 300), "", "", "[::1]:2")
	f.Add("/", "\xff\xfe", "SHEDDABLE", "")
	f.Fuzz(func(t *testing.T, path, tenant, prio, remote string) {
		r := &http.Request{Method: "GET", Host: "example.com", RemoteAddr: remote,
			Header: http.Header{"X-Tenant": {tenant}, "X-Priority": {prio}}}
		r.URL = &url.URL{Path: path}
		c := g.Classify(r)
		if c.Group() == "" || len(c.Key) > MaxKeyLen || c.Priority > adaptive.Critical {
			t.Fatalf("Classify = %+v", c)
		}
		// A path already normal, a peer address (as net/http gives it, or a
		// unix socket's) spelled canonically: the common case, which must
		// not allocate.
		esc := r.URL.EscapedPath()
		fwd, _, err := NormalPath(esc)
		peer := PeerAddr(remote)
		if err != nil || fwd != esc || esc != path || !(peer != "" && strings.Contains(remote, peer) || remote == "" || remote == "@") {
			return
		}
		if n := testing.AllocsPerRun(1, func() { g.Classify(r) }); n != 0 {
			t.Fatalf("Classify allocates")
		}
	})
}
