package gate

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/h2raw"
)

// TestPathVariantsOnTheWire sends the variants of /login that upstreams
// route to its handler (issue 23, item 6: each was counted in the catch-all
// group) as raw HTTP/1.1 bytes and raw HTTP/2 frames to Middleware on
// net/http's server: each is counted in the group of /login (with
// case_insensitive and trailing_slash for "/LOGIN" and "/login/"; without
// them those two go to the catch-all, as documented), or refused with 400
// (or, for a :path that net/http's HTTP/2 server refuses itself, a reset
// stream) and counted nowhere.
func TestPathVariantsOnTheWire(t *testing.T) {
	obs := &groupCounts{n: map[string]int{}}
	g, err := New(Params{Config: config(t, `
[[group]]
name = "login"
match = { path = "/login", case_insensitive = true, trailing_slash = true }
[[group]]
name = "exact"
match = { path = "/exact" }
[[group]]
name = "rest"
`), Clock: newFakeClock(), Resources: NoResources, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveWire(t, g)
	h2, err := h2raw.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()

	send := func(proto, target string) int {
		t.Helper()
		if proto == "h2" {
			st, err := h2.Request(h2raw.HTTP("GET", target))
			if err != nil && strings.Contains(err.Error(), "reset: PROTOCOL_ERROR") {
				return 400 // refused by net/http's server before the handler
			}
			if err != nil {
				t.Fatal(err)
			}
			n, _ := strconv.Atoi(st)
			return n
		}
		return h1Status(t, addr, "GET "+target+" HTTP/1.1\r\nHost: sluice\r\nConnection: close\r\n\r\n")
	}
	count := obs.count
	for _, c := range []struct {
		proto, target, group string // group "": refused with 400
	}{
		{"h1", "/login", "login"},
		{"h1", "/login;x", "login"},
		{"h1", "/login;jsessionid=0123", "login"},
		{"h1", "/LOGIN", "login"},
		{"h1", "/Login/", "login"},
		{"h1", "/login/", "login"},
		{"h1", "/login%3Bx", "login"},
		{"h1", "/login%3bx", "login"},
		{"h1", "/log%69n", "login"},
		{"h1", "/login%20", ""},
		{"h1", "/login%20;x", ""},
		{"h1", "/login#x", ""},
		{"h1", "/login%0a", ""},
		{"h2", "/login;x", "login"},
		{"h2", "/LOGIN", "login"},
		{"h2", "/login/", "login"},
		{"h2", "/login%3Bx", "login"},
		{"h2", "/login x", ""},
		{"h2", "/login\tx", ""},
		{"h2", "/login#x", ""},
		{"h2", "/login%20", ""},
		{"h1", "/exact;x", "exact"},
		{"h1", "/EXACT", "rest"},
		{"h1", "/exact/", "rest"},
	} {
		before := map[string]int{"login": count("login"), "exact": count("exact"), "rest": count("rest")}
		st := send(c.proto, c.target)
		for name, n := range before {
			want := n
			if name == c.group {
				want++
			}
			if got := count(name); got != want {
				t.Errorf("%s %q: group %s saw %d more, want it counted in %q (status %d)", c.proto, c.target, name, got-n, c.group, st)
			}
		}
		if want := map[bool]int{true: 400, false: 200}[c.group == ""]; st != want {
			t.Errorf("%s %q: status %d, want %d", c.proto, c.target, st, want)
		}
	}
}

// groupCounts counts the requests done per group (an Observer).
type groupCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *groupCounts) ObserveDone(group string, _ Outcome, _, _ time.Duration) {
	o.mu.Lock()
	o.n[group]++
	o.mu.Unlock()
}

func (o *groupCounts) ObserveQueueWait(string, time.Duration) {}

func (o *groupCounts) count(group string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[group]
}
