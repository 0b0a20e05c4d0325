package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/internal/listen"
)

func TestMutationsNeedTheToken(t *testing.T) {
	f := newFixture(t, testConfig)
	const body = `{"targets": {"latency": "150ms"}}`
	for _, c := range []struct {
		name   string
		auth   string // the whole Authorization header; "" none
		status int
		msg    string
	}{
		{"no token", "", 401, `needs "Authorization: Bearer TOKEN"`},
		{"wrong token", "Bearer " + strings.Repeat("x", len(testToken)), 401, "does not match"},
		{"token prefix", "Bearer " + testToken[:10], 401, "does not match"},
		{"token plus more", "Bearer " + testToken + "x", 401, "does not match"},
		{"basic scheme", "Basic " + testToken, 401, "does not match"},
		{"bearer, any case", "bearer " + testToken, 200, ""},
		{"right token", "Bearer " + testToken, 200, ""},
	} {
		for _, r := range []req{
			{method: http.MethodPatch, path: "/v1/groups/api", body: body},
			{method: http.MethodPost, path: "/v1/reload", contentType: "application/json"},
		} {
			hr, _ := http.NewRequest(r.method, f.url+r.path, strings.NewReader(r.body))
			hr.Header.Set("Content-Type", "application/json")
			if c.auth != "" {
				hr.Header.Set("Authorization", c.auth)
			}
			resp, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("%s: %s %s: %d, want %d", c.name, r.method, r.path, resp.StatusCode, c.status)
			}
			if c.status == 401 && resp.Header.Get("WWW-Authenticate") != `Bearer realm="sluice"` {
				t.Errorf("%s: WWW-Authenticate %q", c.name, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
	// On loopback, reads need no token.
	if a := f.get(t, "/v1/groups"); a.status != 200 {
		t.Errorf("read without a token on loopback: %d", a.status)
	}
	// A refused mutation changed nothing.
	a := f.do(t, req{method: http.MethodPatch, path: "/v1/groups/batch", body: `{"concurrency": {"limit": 1}}`})
	if a.status != 401 || f.group(t, "batch").Limit != 4 {
		t.Errorf("PATCH without a token: %d, limit %d", a.status, f.group(t, "batch").Limit)
	}
}

func TestWithoutTokenTheAPIIsReadOnly(t *testing.T) {
	f := newFixture(t, testConfig, func(p *Params) { p.Token = "" })
	a := f.patch(t, "api", `{"targets": {"latency": "150ms"}}`)
	if a.status != http.StatusForbidden || !strings.Contains(a.json(t)["error"].(string), "read-only: no token is set") {
		t.Errorf("PATCH with no token set: %d %s", a.status, a.body)
	}
	if a := f.get(t, "/v1/status"); a.status != 200 || a.json(t)["admin"].(map[string]any)["writable"] != false {
		t.Errorf("status of a read-only API: %d %s", a.status, a.body)
	}
}

func TestHostHeaderGuard(t *testing.T) {
	f := newFixture(t, testConfig)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(f.url, "http://"))
	for _, c := range []struct {
		host   string
		status int
	}{
		{"127.0.0.1:" + port, 200},
		{"localhost:" + port, 200},
		{"LOCALHOST.:" + port, 200},
		{"[::1]:" + port, 200},
		{"127.0.0.2", 200},
		{"localhost", 200},
		{"evil.example:" + port, 403},
		{"evil.example", 403},
		{"localhost.evil.example:" + port, 403},
		{"10.0.0.1:" + port, 403}, // an IP that is not loopback, on a loopback listener
	} {
		for _, path := range []string{"/v1/groups", "/", "/livez"} {
			a := f.do(t, req{method: http.MethodGet, path: path, host: c.host})
			if a.status != c.status {
				t.Errorf("Host %q, GET %s: %d, want %d", c.host, path, a.status, c.status)
			}
			if c.status == 403 && !strings.Contains(a.json(t)["error"].(string), "DNS rebinding") {
				t.Errorf("Host %q: error %s", c.host, a.body)
			}
		}
	}
	// The guard comes first: a bad Host with the right token is still refused.
	a := f.do(t, req{method: http.MethodPatch, path: "/v1/groups/api", body: `{"targets": {"cpu": 0.5}}`, token: testToken, host: "evil.example"})
	if a.status != 403 {
		t.Errorf("PATCH with a bad Host and the token: %d", a.status)
	}
}

func TestBodyLimitAndContentType(t *testing.T) {
	f := newFixture(t, testConfig, func(p *Params) { p.MaxBodyBytes = 1024 })
	big := `{"targets": {"latency": "150ms"}, "x": "` + strings.Repeat("a", 2000) + `"}`
	if a := f.patch(t, "api", big); a.status != http.StatusRequestEntityTooLarge || !strings.Contains(a.json(t)["error"].(string), "larger than 1024 bytes") {
		t.Errorf("oversize body: %d %s", a.status, a.body)
	}
	// Without a Content-Length (chunked), the cap is found while reading.
	hr, _ := http.NewRequest(http.MethodPatch, f.url+"/v1/groups/api", struct{ *strings.Reader }{strings.NewReader(big)})
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || hr.ContentLength > 0 {
		t.Errorf("oversize chunked body: %d (content length %d)", resp.StatusCode, hr.ContentLength)
	}

	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/jsonx", "multipart/form-data; boundary=x", ""} {
		hr, _ := http.NewRequest(http.MethodPatch, f.url+"/v1/groups/api", strings.NewReader(`{"targets": {"cpu": 0.5}}`))
		if ct != "" {
			hr.Header.Set("Content-Type", ct)
		}
		hr.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("Content-Type %q: %d, want 415", ct, resp.StatusCode)
		}
	}
	if a := f.do(t, req{method: http.MethodPatch, path: "/v1/groups/api", body: `{"targets": {"cpu": 0.5}}`,
		token: testToken, contentType: "application/json; charset=utf-8"}); a.status != 200 {
		t.Errorf("application/json with a charset: %d %s", a.status, a.body)
	}
}

func TestRefusesOpenListenerWithoutToken(t *testing.T) {
	cfg := parseConfig(t, testConfig)
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
	if err != nil {
		t.Fatal(err)
	}
	for _, listen := range []string{"0.0.0.0:9901", ":9901", "[::]:9901", "192.0.2.10:9901", "admin.example:9901"} {
		if _, err := New(Params{Gate: g, Config: cfg, Listen: listen}); !errors.Is(err, ErrNoToken) || !strings.Contains(err.Error(), listen) {
			t.Errorf("New(listen %q, no token): %v, want ErrNoToken naming it", listen, err)
		}
		if _, err := New(Params{Gate: g, Config: cfg, Listen: listen, Token: testToken}); err != nil {
			t.Errorf("New(listen %q, token): %v", listen, err)
		}
	}
	for _, listen := range []string{"127.0.0.1:9901", "localhost:9901", "[::1]:9901", "unix:///run/sluice/admin.sock", ""} {
		if _, err := New(Params{Gate: g, Config: cfg, Listen: listen}); err != nil {
			t.Errorf("New(listen %q, no token): %v", listen, err)
		}
	}
	for _, listen := range []string{"9901", "unix://relative.sock", "127.0.0.1"} {
		if _, err := New(Params{Gate: g, Config: cfg, Listen: listen}); err == nil || errors.Is(err, ErrNoToken) {
			t.Errorf("New(listen %q): %v, want a malformed-address error", listen, err)
		}
	}

	// Serve checks the address actually bound, whatever Listen said: a name
	// that resolved off loopback.
	s, err := New(Params{Gate: g, Config: cfg, Listen: "localhost:9901"})
	if err != nil {
		t.Fatal(err)
	}
	ln := &fakeListener{addr: &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 9901}}
	if err := s.Serve(ln); !errors.Is(err, ErrNoToken) || !ln.closed {
		t.Errorf("Serve on 192.0.2.10 without a token: %v (listener closed %v), want ErrNoToken", err, ln.closed)
	}
}

// fakeListener is a listener at an address that is never bound.
type fakeListener struct {
	addr   net.Addr
	closed bool
}

func (l *fakeListener) Accept() (net.Conn, error) { return nil, errors.New("fake listener") }
func (l *fakeListener) Close() error              { l.closed = true; return nil }
func (l *fakeListener) Addr() net.Addr            { return l.addr }

// TestOffLoopbackReadsNeedTheToken drives the handler of a server set for a
// public address in memory: nothing is bound off loopback.
func TestOffLoopbackReadsNeedTheToken(t *testing.T) {
	cfg := parseConfig(t, testConfig)
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Params{Gate: g, Config: cfg, Listen: "0.0.0.0:9901", Token: testToken, Hosts: []string{"sluice.example"}})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	do := func(method, path, host, token string) int {
		r := httptest.NewRequest(method, "http://"+host+path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for _, c := range []struct {
		path, host, token string
		status            int
	}{
		{"/v1/groups", "10.1.2.3:9901", "", 401},
		{"/v1/groups", "10.1.2.3:9901", "wrong", 401},
		{"/v1/groups", "10.1.2.3:9901", testToken, 200},
		{"/v1/status", "sluice.example:9901", testToken, 200},
		{"/metrics", "10.1.2.3:9901", "", 401},
		{"/debug/pprof/", "10.1.2.3:9901", "", 401},
		{"/v1/history", "10.1.2.3:9901", "", 401},
		{"/livez", "10.1.2.3:9901", "", 200},
		{"/readyz", "10.1.2.3:9901", "", 200},
		{"/v1/openapi.json", "10.1.2.3:9901", "", 200}, // the reference holds no data
		{"/", "10.1.2.3:9901", "", 200},                // the page holds no data
		{"/ui/app.js", "10.1.2.3:9901", "", 200},
		{"/v1/groups", "evil.example:9901", testToken, 403},
	} {
		if got := do(http.MethodGet, c.path, c.host, c.token); got != c.status {
			t.Errorf("GET %s (Host %s, token %q): %d, want %d", c.path, c.host, c.token, got, c.status)
		}
	}
}

func TestUnixSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "sluice-admin") // short: a socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "admin.sock")
	// A stale socket (nothing listens) is replaced.
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	cfg := parseConfig(t, testConfig)
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Params{Gate: g, Config: cfg, Listen: "unix://" + path})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		<-done
	}()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode: %v %v, want 0660", fi.Mode(), err)
	}
	// A live socket is not taken over.
	if _, err := listen.Listen("unix://"+path, 0); err == nil || !strings.Contains(err.Error(), "another process listens") {
		t.Errorf("second listen on a live socket: %v", err)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	resp, err := c.Get("http://anything/v1/status") // no Host check on a unix socket
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET over the socket: %d", resp.StatusCode)
	}
	// A regular file in the way is not removed.
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := listen.Listen("unix://"+file, 0); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("listen over a regular file: %v", err)
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := ReadTokenFile(write("ok", "  "+testToken+"\n")); err != nil || tok != testToken {
		t.Errorf("ReadTokenFile: %q %v, want the token trimmed", tok, err)
	}
	for _, c := range []struct{ name, content, msg string }{
		{"short", "abc\n", "the token is 3 bytes, want at least 16"},
		{"empty", "\n", "the token is 0 bytes"},
		{"space inside", "0123456789 abcdef0123", "not printable ASCII"},
		{"non-ascii", "0123456789abcdef€", "not printable ASCII"},
	} {
		if _, err := ReadTokenFile(write(c.name, c.content)); err == nil || !strings.Contains(err.Error(), c.msg) || !strings.HasPrefix(err.Error(), "admin: ") {
			t.Errorf("%s: %v, want %q", c.name, err, c.msg)
		}
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	// Issue 23, item 9: a token others may read, or others or the group
	// may change, is refused; the group may read it.
	for mode, ok := range map[os.FileMode]bool{0o600: true, 0o400: true, 0o640: true, 0o440: true,
		0o644: false, 0o604: false, 0o660: false, 0o666: false, 0o602: false} {
		p := write(fmt.Sprintf("mode%o", mode), testToken)
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		_, err := ReadTokenFile(p)
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %04o: %v, want accepted: %v", mode, err, ok)
		}
	}
}
