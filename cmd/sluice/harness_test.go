package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/configs"
)

// The end-to-end tests start the real sluice binary as a process, with a
// config file in t.TempDir(), in front of a real upstream on loopback, and
// watch it through its -log-json lines on stderr, the upstream's own counts
// and the state file. They wait for events (a log line, a response, an exit),
// each bounded by waitLimit; they never sleep.

// waitLimit bounds every wait for an event: far beyond what any event takes,
// it only turns a hang into a failure.
const waitLimit = 20 * time.Second

var (
	binDir   string // TestMain's temporary directory for the binary
	binOnce  sync.Once
	binPath  string
	binError error
)

func TestMain(m *testing.M) {
	if os.Getenv(permitClientAddr) != "" {
		os.Exit(permitClientMain()) // a permit client process of the front-ends' tests
	}
	dir, err := os.MkdirTemp("", "sluice-e2e-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binary builds the sluice binary once per test run (with the race detector
// when the tests have it) and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binPath = filepath.Join(binDir, "sluice")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			binError = errors.New(string(out))
		}
	})
	if binError != nil {
		t.Fatalf("go build: %v", binError)
	}
	return binPath
}

// logs collects a process's stderr, line by line, and parses its JSON log
// records. Safe for concurrent use: it is the process's stderr writer.
type logs struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	recs    []map[string]any // one per line; nil for a line that is not JSON
	more    chan struct{}    // closed at the next line (or at close), then replaced
	closed  bool
}

func newLogs() *logs { return &logs{more: make(chan struct{})} }

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			rec = nil
		}
		l.lines = append(l.lines, line)
		l.recs = append(l.recs, rec)
		close(l.more)
		l.more = make(chan struct{})
	}
	return len(p), nil
}

// close marks the end of the output: waits for more lines fail at once.
func (l *logs) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.more)
	}
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + string(l.partial)
}

// find returns the first record from index from on that matches, and the
// index after it; ok is false when none does yet.
func (l *logs) find(from int, match func(map[string]any) bool) (rec map[string]any, next int, more <-chan struct{}, closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := from; i < len(l.recs); i++ {
		if l.recs[i] != nil && match(l.recs[i]) {
			return l.recs[i], i + 1, nil, false
		}
	}
	return nil, len(l.recs), l.more, l.closed
}

// wait waits for a log record that matches and returns it.
func (l *logs) wait(t *testing.T, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	from := 0
	for {
		rec, next, more, closed := l.find(from, match)
		if rec != nil {
			return rec
		}
		if closed {
			t.Fatalf("the log ended without %s", what)
		}
		from = next
		select {
		case <-more:
		case <-deadline.C:
			t.Fatalf("no %s in the log within %v", what, waitLimit)
		}
	}
}

// message matches records whose @message is msg and whose fields have the
// values given (compared as text).
func message(msg string, fields ...string) func(map[string]any) bool {
	return func(r map[string]any) bool {
		if r["@message"] != msg {
			return false
		}
		for i := 0; i+1 < len(fields); i += 2 {
			if v, ok := r[fields[i]]; !ok || str(v) != fields[i+1] {
				return false
			}
		}
		return true
	}
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		b, _ := json.Marshal(x)
		return string(b)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// sluice is a running sluice process.
type sluice struct {
	cmd    *exec.Cmd
	log    *logs
	addr   string // where it listens, from its "listening" log line
	exited chan struct{}
	code   int // valid once exited is closed
}

// startSluice runs the binary with the config file and extra flags, logging
// JSON at debug, and waits until it listens. The process is killed when the
// test ends, and its log is printed if the test failed.
func startSluice(t *testing.T, config string, flags ...string) *sluice {
	t.Helper()
	s := launchSluice(t, config, flags...)
	rec := s.log.wait(t, `the "listening" line`, message("listening"))
	s.addr = str(rec["addr"])
	return s
}

// launchSluice is startSluice without the wait: the process may yet listen
// or exit.
func launchSluice(t *testing.T, config string, flags ...string) *sluice {
	t.Helper()
	checkFreePorts(t, config)
	args := append([]string{"run", "-config", config, "-log-json", "-log-level", "debug"}, flags...)
	s := &sluice{cmd: exec.Command(binary(t), args...), log: newLogs(), exited: make(chan struct{})}
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := s.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			s.code = ee.ExitCode()
		default:
			s.code = -1
		}
		s.log.close()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("sluice %s stderr:\n%s", strings.Join(args, " "), s.log)
		}
	})
	return s
}

// listened waits until s listens (true, with s.addr set) or exits (false).
func (s *sluice) listened(t *testing.T) bool {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for from := 0; ; {
		rec, next, more, closed := s.log.find(from, message("listening"))
		switch {
		case rec != nil:
			s.addr = str(rec["addr"])
			return true
		case closed:
			<-s.exited
			return false
		}
		from = next
		select {
		case <-more:
		case <-deadline.C:
			t.Fatalf("sluice neither listened nor exited within %v", waitLimit)
		}
	}
}

// checkFreePorts fails the test when the config would have sluice listen
// on a fixed TCP port (a default included): such a test fails wherever
// that port is taken, by a sluice the README's next step left running for
// one. Every listener of a test is port 0 (read back from the log) or a
// unix socket in the test's folder.
func checkFreePorts(t *testing.T, path string) {
	t.Helper()
	c, err := configs.Load(path)
	if err != nil {
		return // the daemon says what is wrong with it
	}
	listens := map[string]string{"server.listen": c.Server.Listen, "admin.listen": c.Admin.Listen}
	if c.Permit != nil {
		listens["permit.listen"] = c.Permit.Listen
	}
	if c.RLS != nil {
		listens["rls.listen"] = c.RLS.Listen
	}
	for key, addr := range listens {
		if addr == "" || strings.HasPrefix(addr, "unix://") {
			continue
		}
		if _, port, err := net.SplitHostPort(addr); err == nil && port != "0" {
			t.Fatalf("%s: %s = %q, a fixed port: a test listens on port 0 (\"127.0.0.1:0\") or a unix socket in its folder", path, key, addr)
		}
	}
}

func (s *sluice) url(path string) string { return "http://" + s.addr + path }

// signal sends sig to the process.
func (s *sluice) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (s *sluice) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.exited:
		return s.code
	case <-time.After(waitLimit):
		t.Fatalf("sluice did not exit within %v", waitLimit)
		return -1
	}
}

// writeConfig writes a config into dir (t.TempDir() when ""), with UPSTREAM
// replaced by the upstream's URL, and returns its path.
func writeConfig(t *testing.T, dir, upstream, body string) string {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, "sluice.toml")
	body = strings.ReplaceAll(body, "UPSTREAM", upstream)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// upstream is a real HTTP server on loopback that counts what it sees: the
// requests in it now and at most, and those it served. A request for a path
// ending in /hold announces itself on entered and waits for a token on
// release (or for the test to end); one ending in /fail gets 500.
type upstream struct {
	url                 string
	cur, peak, requests atomic.Int64
	entered             chan string
	release             chan struct{}
	done                chan struct{}
}

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{entered: make(chan string, 1000), release: make(chan struct{}, 1000), done: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(func() {
		close(u.done)
		srv.Close()
	})
	u.url = srv.URL
	return u
}

// serve counts a request as in the upstream from its arrival until just
// before its response is written: sluice can only free the request's slot
// after it has read the response, so a count that included the handler's
// return would see the next request overlap a finished one.
func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	n := u.cur.Add(1)
	for p := u.peak.Load(); n > p && !u.peak.CompareAndSwap(p, n); p = u.peak.Load() {
	}
	u.requests.Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	if strings.HasSuffix(r.URL.Path, "/hold") {
		u.entered <- r.URL.Path
		select {
		case <-u.release:
		case <-u.done:
		case <-r.Context().Done():
		}
	}
	u.cur.Add(-1)
	if strings.HasSuffix(r.URL.Path, "/fail") {
		w.WriteHeader(http.StatusInternalServerError)
	}
	_, _ = io.WriteString(w, "ok "+r.URL.Path)
}

// await waits until n held requests have entered.
func (u *upstream) await(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		recv(t, u.entered, "a held request at the upstream")
	}
}

// free lets n held requests go.
func (u *upstream) free(n int) {
	for i := 0; i < n; i++ {
		u.release <- struct{}{}
	}
}

// recv waits for a value on ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("waiting for %s: nothing came", what)
		var zero T
		return zero
	}
}

// result is a finished HTTP exchange: the response (its body read) or the
// error.
type result struct {
	status int
	header http.Header
	body   string
	err    error
}

// client is an HTTP/1.1 client with a bound on each exchange.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 100, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: waitLimit}
}

// do sends a request with the given header pairs and reads the whole answer.
func do(c *http.Client, method, url string, header ...string) result {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return result{err: err}
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// goDo is do in a goroutine; the result comes on the channel.
func goDo(c *http.Client, method, url string, header ...string) <-chan result {
	out := make(chan result, 1)
	go func() { out <- do(c, method, url, header...) }()
	return out
}
