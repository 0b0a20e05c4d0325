// Package redistest runs a real redis-server for tests: a child process on a
// free loopback port, in a temporary directory, without persistence, killed
// when the test ends; and, for failovers, replicas and redis-sentinel
// processes watching them (sentinel.go). The tests of limits/redis and the
// end-to-end tests of sluice run use it.
//
// A test that needs redis-server is skipped, with the reason, where it is not
// installed, and fails instead when the environment variable CI is set: in CI
// a missing server must never pass silently (.ci/run installs it).
package redistest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Need returns the path of a program a test needs (redis-server,
// redis-cli). Missing, the test is skipped with the reason, or fails when CI
// is set.
func Need(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("this test needs a real %s (Debian package redis-server; .ci/run installs it): %v", name, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// Server is a redis-server child process. Build it with New (then set TLS
// if needed, and Start) or Start. Its methods are for the test's goroutine,
// but for Signal and TryRestart, which its other goroutines may call.
type Server struct {
	// TLS, set before Start, makes the port speak TLS only (the server's
	// arguments must name its certificate); it is the client side's
	// configuration used to check that the server answers.
	TLS *tls.Config
	// Password, set before Start, is required of clients (requirepass) and
	// given to the master when the server replicates one (masterauth: a
	// master demoted by a failover replicates the promoted replica). Client
	// uses it.
	Password string

	t     testing.TB
	bin   string
	dir   string
	port  int
	extra []string

	// mu guards proc and ended: a test's goroutine may restart or signal
	// the server while the test's cleanup stops it.
	mu    sync.Mutex
	proc  *process // nil until started
	ended bool     // the test's cleanup has stopped it: no restart
}

// Start starts a redis-server with the extra arguments and waits until it
// answers PING.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	return New(t, extra...).Start()
}

// New returns a server with the extra arguments, not started yet.
func New(t testing.TB, extra ...string) *Server {
	t.Helper()
	return &Server{t: t, bin: Need(t, "redis-server"), dir: t.TempDir(), extra: extra}
}

// Start starts s on a free port and waits until it answers PING. The
// process is killed when the test ends.
func (s *Server) Start() *Server {
	t := s.t
	t.Helper()
	t.Cleanup(s.end)
	if _, err := onFreePort(func(port int) error { s.port = port; return s.run() }); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	return s
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr is the server's "host:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Dir is the server's working directory (its log is redis.log there).
func (s *Server) Dir() string { return s.dir }

// run starts the process on s.port, in place of one that ran before (killed
// first), and waits until it answers PING. Once the test's cleanup has
// stopped the server, it starts nothing.
func (s *Server) run() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return fmt.Errorf("redis-server on %s: the test is over", s.Addr())
	}
	s.proc.stop()
	port := []string{"--port", strconv.Itoa(s.port)}
	if s.TLS != nil {
		port = []string{"--port", "0", "--tls-port", strconv.Itoa(s.port)}
	}
	args := append(append(port,
		"--bind", "127.0.0.1", "--dir", s.dir, "--save", "", "--appendonly", "no", "--protected-mode", "no",
	), s.extra...)
	if s.Password != "" {
		args = append(args, "--requirepass", s.Password, "--masterauth", s.Password)
	}
	var err error
	s.proc, err = launch("redis-server on "+s.Addr(), s.bin, args, s.dir+"/redis.log", s.Ping)
	return err
}

// Restart starts the server again on the same port (its data is gone),
// killing it first if it still runs.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.TryRestart(); err != nil {
		s.t.Fatalf("restarting redis-server: %v", err)
	}
}

// TryRestart is Restart for a goroutine of the test, which may not call
// Restart (it fails the test): it returns what went wrong. After the
// test's end it starts nothing, so that a restart scheduled by the test
// that comes late cannot leave a server running.
func (s *Server) TryRestart() error { return s.run() }

// Kill ends the server abruptly (SIGKILL) and waits until its port refuses
// connections.
func (s *Server) Kill() {
	s.t.Helper()
	s.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for s.Ping() == nil {
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s still answers after SIGKILL", s.Addr())
		}
	}
}

// Pause stops the server without closing anything (SIGSTOP): its
// connections stay open and its port accepts new ones, but nothing is
// answered until Resume. Stop (SIGKILL), and so the test's end, ends a
// paused server too.
func (s *Server) Pause() {
	s.t.Helper()
	if pauseSignal == nil {
		s.t.Skip("redistest: no SIGSTOP on this system to pause redis-server")
	}
	if err := s.Signal(pauseSignal); err != nil {
		s.t.Fatalf("pausing redis-server: %v", err)
	}
}

// Resume lets a paused server go on (SIGCONT).
func (s *Server) Resume() {
	s.t.Helper()
	if err := s.Signal(resumeSignal); err != nil {
		s.t.Fatalf("resuming redis-server: %v", err)
	}
}

// Signal sends sig to the server's process: for a goroutine of the test
// that stalls it in turns (SIGSTOP, SIGCONT), where Pause and Resume,
// which fail the test, may not be called.
func (s *Server) Signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return fmt.Errorf("redis-server on %s is not running", s.Addr())
	}
	return s.proc.cmd.Process.Signal(sig)
}

// Port is the server's port.
func (s *Server) Port() int { return s.port }

// Stop kills the process, if it runs, and waits for it to exit.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc.stop()
}

// end is the test's cleanup: Stop, and no restart from then on.
func (s *Server) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	s.proc.stop()
}

// Client is a plain client for the test's own look at the server, closed
// when the test ends.
func (s *Server) Client() *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), Password: s.Password, MaxRetries: -1})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Ping sends PING on a fresh connection and expects +PONG (or, with a
// password, the error that asks for it: the server is up).
func (s *Server) Ping() error { return ping(s.Addr(), s.TLS) }

// ping sends PING to addr (with TLS, when not nil) on a fresh connection.
func ping(addr string, tlsConf *tls.Config) error {
	var c net.Conn
	var err error
	d := &net.Dialer{Timeout: time.Second}
	if tlsConf != nil {
		c, err = tls.DialWithDialer(d, "tcp", addr, tlsConf)
	} else {
		c, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
