package main

import (
	"context"
	"crypto/tls"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
	ilisten "github.com/sluicehq/sluice/internal/listen"
	"github.com/sluicehq/sluice/internal/tlstest"
	"github.com/sluicehq/sluice/limits"
	"github.com/sluicehq/sluice/limits/redis"
	"github.com/sluicehq/sluice/proxy"
	"github.com/sluicehq/sluice/proxy/breaker"
)

// These tests drive "sluice run" in this process: run with a context that
// stops it as SIGTERM would, its log written to a logs collector.

// runInProcess starts run with args in a goroutine and waits until it
// listens. Cancel stops it; the exit code comes on the returned channel.
func runInProcess(t *testing.T, args ...string) (addr string, log *logs, stop context.CancelFunc, exit <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log = newLogs()
	codes, returned := make(chan int, 1), make(chan struct{})
	go func() {
		codes <- run(ctx, append([]string{"run", "-log-json"}, args...), new(strings.Builder), log)
		log.close()
		close(returned)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-returned:
		case <-time.After(waitLimit):
			t.Error("run did not return")
		}
		if t.Failed() {
			t.Logf("run's log:\n%s", log)
		}
	})
	rec := log.wait(t, `the "listening" line`, message("listening"))
	return str(rec["addr"]), log, cancel, codes
}

func TestRunServesAndStops(t *testing.T) {
	up := startUpstream(t)
	path := writeConfig(t, "", up.url, prelude+catchAll)
	addr, log, stop, exit := runInProcess(t, "-config", path)
	r := do(client(t), "GET", "http://"+addr+"/x")
	if r.status != 200 || r.body != "ok /x" {
		t.Fatalf("through sluice: %d %q %v", r.status, r.body, r.err)
	}
	log.wait(t, "the upstream probe", message("upstream reachable"))
	stop()
	if code := recv(t, exit, "the exit code"); code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	log.wait(t, "the end", message("stopped", "exit_code", "0"))
}

func TestRunUsage(t *testing.T) {
	for _, args := range [][]string{
		{"run", "extra"},
		{"run", "-log-level", "loud"},
		{"run", "-log-level", "off"},
		{"run", "-grace", "-1s"},
		{"run", "-grace", "soon"},
		{"run", "-nope"},
	} {
		code, out, errOut := runArgs(args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "usage: sluice run [-config FILE]") {
			t.Errorf("%v: code %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestRunRefusesABadConfig(t *testing.T) {
	path := writeFile(t, "bad.toml", `[upstream]
url = "http://127.0.0.1:9000"
[control]
interval = 250
[[group]]
name = "api"
  [group.concurency]
  law = "aimd"
`)
	code, _, errOut := runArgs("run", "-config", path)
	if code != exitError {
		t.Fatalf("code %d, want %d", code, exitError)
	}
	for _, want := range []string{
		`config problem: file=` + path + ` line=4 key=control.interval problem="must be a duration string such as \"250ms\", got integer 250"`,
		`config problem: file=` + path + ` line=7 key=group[0].concurency problem="unknown key (did you mean \"concurrency\"?)"`,
		`not started: the config does not load`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	code, _, errOut = runArgs("run", "-config", filepath.Join(t.TempDir(), "missing.toml"))
	if code != exitError || !strings.Contains(errOut, "cannot read the config") {
		t.Errorf("missing file: code %d, stderr %q", code, errOut)
	}
}

func TestRunListenerInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	path := writeConfig(t, "", "http://127.0.0.1:9", strings.Replace(prelude, "127.0.0.1:0", ln.Addr().String(), 1)+catchAll)
	code, _, errOut := runArgs("run", "-config", path)
	if code != exitError || !strings.Contains(errOut, "not started: error=\"server.listen "+ln.Addr().String()) || !strings.Contains(errOut, "address already in use") {
		t.Fatalf("code %d, stderr:\n%s", code, errOut)
	}
}

func TestRunTLS(t *testing.T) {
	up := startUpstream(t)
	dir := t.TempDir()
	cert, key, pool := tlstest.Files(t, dir)
	path := writeConfig(t, dir, up.url, strings.Replace(prelude, "[upstream]", "tls_cert = \""+cert+"\"\ntls_key = \""+key+"\"\n[upstream]", 1)+catchAll)
	addr, log, _, _ := runInProcess(t, "-config", path)
	log.wait(t, "TLS on", message("listening", "tls", "true", "h2c", "false"))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: waitLimit}).Get("https://" + addr + "/tls")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Errorf("over TLS: %d %s, want 200 over HTTP/2", resp.StatusCode, resp.Proto)
	}

	bad := writeConfig(t, "", up.url, strings.Replace(prelude, "[upstream]", "tls_cert = \""+key+"\"\ntls_key = \""+key+"\"\n[upstream]", 1)+catchAll)
	if code, _, errOut := runArgs("run", "-config", bad); code != exitError || !strings.Contains(errOut, "server.tls_cert") {
		t.Errorf("unusable certificate: code %d, stderr %s", code, errOut)
	}
}

func TestHelpRunDocumentsExitCodes(t *testing.T) {
	_, out, _ := runArgs("help", "run")
	for _, code := range []int{exitOK, exitError, exitUsage, exitCut, exitInterrupted} {
		if !strings.Contains(out, "\n  "+string(rune('0'+code))+"  ") {
			t.Errorf("help run does not document exit code %d:\n%s", code, out)
		}
	}
	for _, s := range []string{"SIGHUP", "SIGTERM", "-config FILE", "-log-level LEVEL", "-log-json", "-grace DUR"} {
		if !strings.Contains(out, s) {
			t.Errorf("help run does not mention %s", s)
		}
	}
}

func TestListenRemovesAStaleSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	old, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	old.(*net.UnixListener).SetUnlinkOnClose(false)
	// Someone serves on it: refused.
	if ln, err := listen("unix://" + sock); err == nil {
		ln.Close()
		t.Fatal("listened on a socket another listener serves")
	}
	old.Close() // gone, the file left behind
	ln, err := listen("unix://" + sock)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln.Close()
}

func TestBreakerParams(t *testing.T) {
	c := configs.New().Upstream.Circuit
	b, off := breakerParams(&c)
	want := breaker.Params{Window: 10 * time.Second, MinRequests: 20, FailureRatio: 0.5, ConsecutiveFailures: 5, Cooldown: 5 * time.Second, Probes: 3}
	if off || !reflect.DeepEqual(b, want) {
		t.Errorf("defaults: %+v off %v, want %+v", b, off, want)
	}
	c.FailureRatio = 0
	if b, off := breakerParams(&c); off || b.FailureRatio != -1 || b.ConsecutiveFailures != 5 || b.Validate() != nil {
		t.Errorf("ratio off: %+v off %v", b, off)
	}
	c.FailureRatio, c.ConsecutiveFailures = 0.3, 0
	if b, off := breakerParams(&c); off || b.FailureRatio != 0.3 || b.ConsecutiveFailures != -1 || b.Validate() != nil {
		t.Errorf("consecutive off: %+v off %v", b, off)
	}
	c.FailureRatio = 0
	if _, off := breakerParams(&c); !off {
		t.Error("both triggers 0: the breaker is not off")
	}
}

func TestProxyParams(t *testing.T) {
	cfg := configs.New()
	cfg.Upstream.URL = "unix:///run/app.sock"
	cfg.Upstream.Protocol = configs.ProtocolH2C
	cfg.Upstream.ResponseHeaderTimeout = 0
	p := proxyParams(cfg)
	if p.Upstream != "unix:///run/app.sock" || p.Protocol != proxy.ProtocolH2C || p.UpstreamTimeout != noTimeout ||
		p.IdleConnTimeout != 90*time.Second || p.MaxIdleConns != 256 || p.DialTimeout != 2*time.Second {
		t.Errorf("%+v", p)
	}
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
}

func TestSamplerParams(t *testing.T) {
	cfg := configs.New()
	cfg.Probe.PIDFile = writeFile(t, "app.pid", " 4242\n")
	if p, err := samplerParams(cfg); err != nil || p.PID != 4242 || p.Root != "/" {
		t.Errorf("%+v %v", p, err)
	}
	cfg.Probe.PIDFile = writeFile(t, "bad.pid", "nope")
	if _, err := samplerParams(cfg); err == nil || !strings.Contains(err.Error(), "want a process ID") {
		t.Errorf("bad pid file: %v", err)
	}
	cfg.Probe.PIDFile = filepath.Join(t.TempDir(), "none.pid")
	if _, err := samplerParams(cfg); err == nil || !strings.Contains(err.Error(), "probe.pid_file") {
		t.Errorf("missing pid file: %v", err)
	}
}

func TestRestartOnly(t *testing.T) {
	a, err := configs.Parse("a", []byte("[upstream]\nurl = \"http://127.0.0.1:9000\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := a.Clone()
	b.Server.Listen = "127.0.0.1:1"
	b.Upstream.Circuit.OpenDuration = 1
	b.Control.StateFile = "/tmp/x"
	b.Control.Interval = configs.Duration(time.Second) // applied by a reload
	b.Admin.Listen = ""
	got := restartOnly(a, b)
	want := []string{"server.listen", "upstream.circuit", "admin.listen", "control.state_file"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("restartOnly = %q, want %q", got, want)
	}
	keepRestartOnly(b, a)
	if got := restartOnly(a, b); len(got) != 0 || b.Control.Interval != configs.Duration(time.Second) {
		t.Errorf("after keepRestartOnly: %q, interval %v", got, b.Control.Interval)
	}
}

func TestReloadWithoutFile(t *testing.T) {
	d := &daemon{log: hclog.NewNullLogger()}
	if err := d.reload(context.Background(), "test"); err == nil || !strings.Contains(err.Error(), "without -config") {
		t.Errorf("reload without a file: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.reload(ctx, "test"); err != context.Canceled {
		t.Errorf("reload with a cancelled context: %v", err)
	}
}

func TestDescribeMatch(t *testing.T) {
	m := spec.Match{Methods: []string{"GET", "POST"}, Host: "*.example.com", PathPrefix: "/api/", Headers: map[string]string{"X-B": "2", "X-A": "1"}}
	if got := describeMatch(&m); got != "GET|POST host *.example.com prefix /api/ X-A=1 X-B=2" {
		t.Errorf("describeMatch = %q", got)
	}
	if got := describeMatch(&spec.Match{PathPrefix: "/"}); got != "*" {
		t.Errorf("catch-all: %q", got)
	}
}

func TestReady(t *testing.T) {
	up := startUpstream(t)
	cfg, err := configs.Parse("ready.toml", []byte(strings.ReplaceAll(prelude+catchAll, "UPSTREAM", up.url)))
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDaemon("ready.toml", cfg, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	if err := d.ready(); err == nil || !strings.Contains(err.Error(), "not answered") {
		t.Fatalf("ready before the upstream answered: %v", err)
	}
	// The probe returns once the upstream accepted a connection.
	d.awaitUpstream(context.Background())
	if err := d.ready(); err != nil {
		t.Fatalf("ready after the probe: %v", err)
	}
	d.draining.Store(true)
	if err := d.ready(); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("ready while shutting down: %v", err)
	}
}

// TestRunRedisFileProblem: a [redis] whose password file is missing stops
// the start with an error that names the key, the file and what it holds.
func TestRunRedisFileProblem(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "redis-password")
	path := writeConfig(t, "", "http://127.0.0.1:9", prelude+`
[redis]
address = "127.0.0.1:6379"
password_file = "`+missing+`"
[[group]]
name = "shared"
match = { path_prefix = "/shared" }
  [group.rate]
  rate = 10
  scope = "global"
`+catchAll)
	code, _, errOut := runArgs("run", "-config", path)
	if code != exitError || !strings.Contains(errOut, "redis.password_file "+missing+" does not exist: write into it Redis's password") {
		t.Fatalf("code %d, stderr:\n%s", code, errOut)
	}
}

func TestStoreParams(t *testing.T) {
	r := configs.NewRedis()
	r.ClusterAddresses = []string{"10.0.0.1:6379", "10.0.0.2:6379"}
	r.Username, r.PasswordFile, r.CAFile, r.TLS = "sluice", "/etc/pw", "/etc/ca.pem", true
	r.Fallback, r.Nodes, r.Timeout, r.KeyPrefix = limits.FallbackClosed, 3, configs.Duration(20*time.Millisecond), "q:"
	p := storeParams(r)
	if !slices.Equal(p.ClusterAddresses, r.ClusterAddresses) || p.Address != "" || p.Username != "sluice" ||
		p.PasswordFile != "/etc/pw" || p.CAFile != "/etc/ca.pem" || p.TLS == nil || p.TLS.MinVersion != tls.VersionTLS12 ||
		p.Fallback != limits.FallbackClosed || p.Nodes != 3 || p.Timeout != 20*time.Millisecond || p.KeyPrefix != "q:" {
		t.Errorf("%+v", p)
	}
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
	// The defaults of [redis] are limits/redis's defaults.
	d := configs.NewRedis()
	d.Address = "127.0.0.1:6379"
	p = storeParams(d)
	if p.TLS != nil || p.Fallback != limits.FallbackLocal || p.Nodes != 1 || p.Timeout != redis.DefaultTimeout ||
		p.KeyPrefix != redis.DefaultKeyPrefix || p.DB != 0 {
		t.Errorf("defaults: %+v", p)
	}
	for _, f := range []limits.Fallback{limits.FallbackLocal, limits.FallbackOpen, limits.FallbackClosed} {
		d.Fallback = f
		if got := storeParams(d).Fallback; got != f {
			t.Errorf("fallback %s: %s", f, got)
		}
	}
}

// TestRunStateFolderMissing: a state file whose folder does not exist stops
// sluice run at startup, naming the file, instead of at the first save or
// at shutdown.
func TestRunStateFolderMissing(t *testing.T) {
	state := filepath.Join(t.TempDir(), "no-such-folder", "state.json")
	config := strings.Replace(prelude, "[control]", "[control]\nstate_file = \""+state+"\"", 1) + catchAll
	path := writeConfig(t, "", "http://127.0.0.1:9", config)
	code, _, errOut := runArgs("run", "-config", path)
	if code != exitError || !strings.Contains(errOut, "not started: error=\"gate: state file "+state+": its folder "+filepath.Dir(state)+" does not exist: create it") {
		t.Fatalf("code %d, stderr:\n%s", code, errOut)
	}
}

// TestRunMakesSocketFolders: the missing folder of a unix socket sluice
// listens on is made, searchable by those the socket's mode lets connect,
// and the socket answers; a folder that cannot be made stops the start
// with the key, the folder and what to do.
func TestRunMakesSocketFolders(t *testing.T) {
	dir, err := os.MkdirTemp("", "sl") // short: a unix socket's path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "run", "sluice", "admin.sock")
	path := writeConfig(t, "", "http://127.0.0.1:9", strings.Replace(prelude, "[admin]\nlisten = \"127.0.0.1:0\"",
		"[admin]\nlisten = \"unix://"+sock+"\"", 1)+catchAll)
	s := startSluice(t, path)
	s.log.wait(t, "the folder's line", message("made the folder of a unix socket", "path", filepath.Dir(sock)))
	fi, err := os.Stat(filepath.Dir(sock))
	if err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("the socket's folder: %v %v, want mode 0750 (for a socket of mode 0660)", fi.Mode(), err)
	}
	if out, err := exec.Command(binary(t), "status", "-admin", "unix://"+sock).CombinedOutput(); err != nil {
		t.Fatalf("sluice status over the socket: %v\n%s", err, out)
	}

	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := writeConfig(t, "", "http://127.0.0.1:9", strings.Replace(prelude, "[admin]\nlisten = \"127.0.0.1:0\"",
		"[admin]\nlisten = \"unix://"+file+"/sub/admin.sock\"", 1)+catchAll)
	code, _, errOut := runArgs("run", "-config", bad)
	want := "admin.listen unix://" + file + "/sub/admin.sock: the socket's folder " + file + "/sub does not exist and cannot be made (not a directory): make it"
	if code != exitError || !strings.Contains(errOut, want) {
		t.Fatalf("code %d, stderr:\n%s\nwant %q", code, errOut, want)
	}
}

// TestListenSocketMode: the proxy's unix socket has the front doors' mode
// (owner and group may connect) whatever the process umask, as the permit
// and rls sockets do; it was bound with 0777 less the umask.
func TestListenSocketMode(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := listen("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != ilisten.DefaultSocketMode {
		t.Fatalf("socket mode %v, want a socket with %v", fi.Mode(), ilisten.DefaultSocketMode)
	}
}
