package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/internal/tlstest"
)

// TestExamplesRun starts the real binary on every example config as it is
// on a fresh machine, but for what a test must change: every TCP listen
// address becomes a free port on loopback, the upstream a real one, Redis a
// closed port (so the quotas' fallback decides), and every absolute path
// (token, password, CA, state file, unix socket) moves under an empty root,
// which stands for the machine's file system. An example either starts so,
// or stops with an error that names a file or folder its first lines say
// it needs, and what to do, without naming a temporary file; the test then
// makes that one thing, as the first lines say, and starts it again, until
// it starts. Then it must answer /readyz, forward a request, and drain and
// exit 0 on SIGTERM, writing its state file if it has one.
func TestExamplesRun(t *testing.T) {
	files, _ := filepath.Glob("../../configs/examples/*.toml")
	more, _ := filepath.Glob("../../configs/examples/*/*.toml")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("examples: %v, want sidecar, tenants, grpc, host and envoy's at least", files)
	}
	// How to reach each example's service: the path of a request it serves
	// and whether its upstream and clients speak HTTP/2 without TLS.
	requests := map[string]struct {
		path string
		h2c  bool
	}{
		"grpc.toml":         {"/orders.v1.OrderService/Get", true},
		"sidecar.toml":      {"/orders", false},
		"tenants.toml":      {"/api/v1/orders", false},
		"host.toml":         {"/", false},
		"envoy/sluice.toml": {"/", false},
	}
	for _, file := range files {
		name, _ := filepath.Rel("../../configs/examples", file)
		t.Run(name, func(t *testing.T) {
			req, ok := requests[filepath.ToSlash(name)]
			if !ok {
				t.Fatalf("no request for %s: add one to the table", name)
			}
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			up := startExampleUpstream(t, req.h2c)
			root, err := os.MkdirTemp("", "sl") // short: a unix socket's path is at most 107 bytes
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(root) })
			cfg, body := exampleUnderRoot(t, string(src), up.URL, root)
			path := writeConfig(t, "", "", body)

			var s *sluice
			for made := 0; ; made++ {
				s = launchSluice(t, path)
				if s.listened(t) {
					break
				}
				if made == 5 {
					t.Fatalf("still not started after making %d things:\n%s", made, s.log)
				}
				makeWhatItNeeds(t, cfg, root, opening(string(src)), s.log.String())
			}
			admin := str(s.log.wait(t, "the admin API's line", message("admin API, metrics and dashboard"))["addr"])
			// Ready once the upstream has answered.
			s.log.wait(t, "the upstream's first answer", message("upstream reachable"))
			if r := do(client(t), "GET", "http://"+admin+"/readyz"); r.err != nil || r.status != http.StatusOK {
				t.Fatalf("/readyz: %d %v %q", r.status, r.err, r.body)
			}
			c := exampleClient(t, req.h2c)
			method := "GET"
			if req.h2c {
				method = "POST" // a gRPC call
			}
			r := do(c, method, s.url(req.path), "X-Tenant", "acme")
			if r.err != nil || r.status != http.StatusOK || r.body != "ok "+req.path {
				t.Fatalf("%s %s through sluice: %d %v %q", method, req.path, r.status, r.err, r.body)
			}
			s.signal(t, syscall.SIGTERM)
			if code := s.wait(t); code != exitOK {
				t.Fatalf("exit code %d after SIGTERM, want %d", code, exitOK)
			}
			if f := cfg.Control.StateFile; f != "" {
				if _, err := os.Stat(f); err != nil {
					t.Errorf("state file not written at exit: %v", err)
				}
			}
		})
	}
}

// Lines of an example that a test rewrites: addresses sluice listens on,
// the upstream, Redis, and absolute file paths.
var (
	listenLine   = regexp.MustCompile(`(?m)^(\s*listen\s*=\s*)"([^"]*)"`)
	upstreamLine = regexp.MustCompile(`(?m)^(\s*url\s*=\s*)"[^"]*"`)
	redisLine    = regexp.MustCompile(`(?m)^(\s*address\s*=\s*)"[^"]*"`)
	fileLine     = regexp.MustCompile(`(?m)^(\s*\w*(?:_file|tls_cert|tls_key)\s*=\s*")(/[^"]*")`)
)

// exampleUnderRoot rewrites the example src as TestExamplesRun says and
// returns the rewritten config and text. Every path the config then holds
// is under root, a default one included, or the test stops: it must not
// touch the machine's own folders.
func exampleUnderRoot(t *testing.T, src, upstream, root string) (*configs.Config, string) {
	t.Helper()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redisAddr := closed.Addr().String()
	closed.Close()

	body := listenLine.ReplaceAllStringFunc(src, func(line string) string {
		m := listenLine.FindStringSubmatch(line)
		if sock, ok := strings.CutPrefix(m[2], "unix://"); ok {
			return m[1] + `"unix://` + filepath.ToSlash(root) + sock + `"`
		}
		return m[1] + `"127.0.0.1:0"`
	})
	body = upstreamLine.ReplaceAllString(body, `${1}"`+upstream+`"`)
	body = redisLine.ReplaceAllString(body, `${1}"`+redisAddr+`"`)
	body = fileLine.ReplaceAllString(body, `${1}`+filepath.ToSlash(root)+`${2}`)
	cfg, err := configs.Parse("rewritten", []byte(body))
	if err != nil {
		t.Fatalf("the rewritten example does not load: %v\n%s", err, body)
	}
	// A listen address the example leaves to its default is a fixed port.
	for _, d := range []struct{ table, def, got string }{
		{"server", configs.New().Server.Listen, cfg.Server.Listen},
		{"admin", configs.DefaultAdminListen, cfg.Admin.Listen},
	} {
		if d.got == d.def && !strings.Contains(src, "\n["+d.table+"]") {
			body += "\n[" + d.table + "]\nlisten = \"127.0.0.1:0\" # the example takes the default, " + d.def + "\n"
		}
	}
	if cfg, err = configs.Parse("rewritten", []byte(body)); err != nil {
		t.Fatal(err)
	}
	for _, s := range listenAddrs(cfg) {
		sock, ok := strings.CutPrefix(s.listen, "unix://")
		if ok && !strings.HasPrefix(sock, root) {
			t.Fatalf("%s %s is a default outside the test's root: write it into the example, or teach this test", s.key, s.listen)
		}
		if ok {
			named(t, opening(src), strings.TrimPrefix(filepath.Dir(sock), root), s.key+" "+s.listen)
		}
	}
	return cfg, body
}

// makeWhatItNeeds reads why sluice did not start from its log: the error
// must name a file or folder under root that the example's opening comment
// names, and say what to do, without naming a temporary file. It makes
// that file (with what its key holds) or folder.
func makeWhatItNeeds(t *testing.T, cfg *configs.Config, root, header, log string) {
	t.Helper()
	line := ""
	for l := range strings.Lines(log) {
		if strings.Contains(l, `"not started`) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("sluice exited without saying why:\n%s", log)
	}
	if strings.Contains(line, ".check-") {
		t.Errorf("the error names a temporary file: %s", line)
	}
	if !regexp.MustCompile(`\b(create|make|write|mkdir)\b`).MatchString(line) {
		t.Errorf("the error does not say what to do: %s", line)
	}
	files := map[string][]byte{}
	if f := cfg.Admin.TokenFile; f != "" {
		files[f] = []byte("example-test-token\n")
	}
	for _, f := range []string{frontTokenFile(cfg.Permit), frontTokenFile(cfg.RLS)} {
		if f != "" {
			files[f] = []byte("example-test-front-token-0123456789abcdef\n")
		}
	}
	if r := cfg.Redis; r != nil {
		if r.PasswordFile != "" {
			files[r.PasswordFile] = []byte("example-test-password\n")
		}
		if r.CAFile != "" {
			files[r.CAFile] = tlstest.CAPEM(t)
		}
	}
	for path, data := range files {
		if strings.Contains(line, path) {
			named(t, header, strings.TrimPrefix(path, root), line)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	if f := cfg.Control.StateFile; f != "" && strings.Contains(line, filepath.Dir(f)) {
		named(t, header, strings.TrimPrefix(filepath.Dir(f), root), line)
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("the error names nothing this test knows how to make: %s", line)
}

// named fails the test unless the example's opening comment names path.
func named(t *testing.T, header, path, line string) {
	t.Helper()
	if !strings.Contains(header, path) {
		t.Errorf("sluice needs %s (%s), and the example's first lines do not say so:\n%s", path, strings.TrimSpace(line), header)
	}
}

// frontTokenFile is the token file of a front-end's section ("" for none).
func frontTokenFile[T interface{ *configs.Permit | *configs.RLS }](sec T) string {
	switch s := any(sec).(type) {
	case *configs.Permit:
		if s != nil {
			return s.TokenFile
		}
	case *configs.RLS:
		if s != nil {
			return s.TokenFile
		}
	}
	return ""
}

// opening returns the comment lines an example starts with.
func opening(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		if !strings.HasPrefix(line, "#") {
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// startExampleUpstream starts an upstream that answers "ok PATH", over
// HTTP/2 without TLS (as a gRPC server) when h2c, else over HTTP/1.1.
func startExampleUpstream(t *testing.T, h2c bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if h2c && r.ProtoMajor != 2 {
			http.Error(w, "want HTTP/2, got "+r.Proto, http.StatusHTTPVersionNotSupported)
			return
		}
		_, _ = io.WriteString(w, "ok "+r.URL.Path)
	}))
	if h2c {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// exampleClient is client(t), speaking only HTTP/2 without TLS when h2c.
func exampleClient(t *testing.T, h2c bool) *http.Client {
	c := client(t)
	if h2c {
		tr := c.Transport.(*http.Transport)
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	return c
}
