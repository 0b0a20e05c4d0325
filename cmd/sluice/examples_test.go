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

// TestExamplesRun starts the real binary on every example config, as it is
// but for what a test must change: every listen address becomes a free port
// on loopback, the upstream a real one, Redis a closed port (so the quotas'
// fallback decides), and every absolute file path (token, password, CA,
// state file) moves under a temporary root, where the test makes the files
// that the example's first lines say it needs. Each must then answer
// /readyz, forward a request, and drain and exit 0 on SIGTERM, writing its
// state file if it has one.
func TestExamplesRun(t *testing.T) {
	files, _ := filepath.Glob("../../configs/examples/*.toml")
	if len(files) < 4 {
		t.Fatalf("examples: %v, want sidecar, tenants, grpc and host at least", files)
	}
	// How to reach each example's service: the path of a request it serves
	// and whether its upstream and clients speak HTTP/2 without TLS.
	requests := map[string]struct {
		path string
		h2c  bool
	}{
		"grpc.toml":    {"/orders.v1.OrderService/Get", true},
		"sidecar.toml": {"/orders", false},
		"tenants.toml": {"/api/v1/orders", false},
		"host.toml":    {"/", false},
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			req, ok := requests[name]
			if !ok {
				t.Fatalf("no request for %s: add one to the table", name)
			}
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			up := startExampleUpstream(t, req.h2c)
			root := t.TempDir()
			cfg, body := runnableExample(t, string(src), up.URL, root)
			path := writeConfig(t, "", "", body)

			s := startSluice(t, path)
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
	listenLine   = regexp.MustCompile(`(?m)^(\s*listen\s*=\s*)"[^"]*"`)
	upstreamLine = regexp.MustCompile(`(?m)^(\s*url\s*=\s*)"[^"]*"`)
	redisLine    = regexp.MustCompile(`(?m)^(\s*address\s*=\s*)"[^"]*"`)
	fileLine     = regexp.MustCompile(`(?m)^(\s*\w*(?:_file|tls_cert|tls_key)\s*=\s*")(/[^"]*")`)
)

// runnableExample rewrites the example src as TestExamplesRun says, makes
// the files it needs under root, and checks that the example's opening
// comment names each of them. It returns the rewritten config and text.
func runnableExample(t *testing.T, src, upstream, root string) (*configs.Config, string) {
	t.Helper()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redisAddr := closed.Addr().String()
	closed.Close()

	body := listenLine.ReplaceAllString(src, `${1}"127.0.0.1:0"`)
	body = upstreamLine.ReplaceAllString(body, `${1}"`+upstream+`"`)
	body = redisLine.ReplaceAllString(body, `${1}"`+redisAddr+`"`)
	body = fileLine.ReplaceAllString(body, `${1}`+filepath.ToSlash(root)+`${2}`)
	cfg, err := configs.Parse("rewritten", []byte(body))
	if err != nil {
		t.Fatalf("the rewritten example does not load: %v\n%s", err, body)
	}

	header := opening(src)
	needs := func(path, what string) {
		t.Helper()
		if orig := strings.TrimPrefix(path, root); !strings.Contains(header, orig) {
			t.Errorf("the example needs %s %s, and its first lines do not say so:\n%s", what, orig, header)
		}
	}
	write := func(path, what string, data []byte) {
		t.Helper()
		needs(path, what)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if f := cfg.Admin.TokenFile; f != "" {
		write(f, "the token file", []byte("example-test-token\n"))
	}
	if f := cfg.Control.StateFile; f != "" {
		needs(filepath.Dir(f), "the state file's directory")
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if r := cfg.Redis; r != nil {
		if r.PasswordFile != "" {
			write(r.PasswordFile, "the Redis password file", []byte("example-test-password\n"))
		}
		if r.CAFile != "" {
			write(r.CAFile, "the Redis CA file", tlstest.CAPEM(t))
		}
	}
	for _, m := range fileLine.FindAllStringSubmatch(body, -1) {
		if p := strings.Trim(m[2], `"`); !exists(p) && p != cfg.Control.StateFile {
			t.Fatalf("the example needs %s, which this test does not know how to make", p)
		}
	}
	return cfg, body
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

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
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
