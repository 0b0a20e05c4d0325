package redis

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// needBinary returns the path of a program a test needs. Missing, the test
// is skipped with the reason, except in CI (CI set), where it fails: a
// missing redis-server must never pass silently.
func needBinary(t testing.TB, name string) string {
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

// server is a redis-server child process on a loopback port, in a
// temporary directory, without persistence. It is killed at the test's
// end.
type server struct {
	t      testing.TB
	bin    string
	dir    string
	port   int
	extra  []string
	tls    *tls.Config // the port speaks TLS (see startTLSServer)
	cmd    *exec.Cmd
	exited chan struct{}
}

func startServer(t testing.TB, extra ...string) *server {
	t.Helper()
	return newServer(t, extra...).start()
}

func newServer(t testing.TB, extra ...string) *server {
	t.Helper()
	return &server{t: t, bin: needBinary(t, "redis-server"), dir: t.TempDir(), extra: extra}
}

func (s *server) start() *server {
	t := s.t
	t.Helper()
	t.Cleanup(s.stop)
	var err error
	for range 5 { // a free port can be taken by someone else before we bind it
		if s.port, err = freePort(); err != nil {
			continue
		}
		if err = s.run(); err == nil {
			return s
		}
	}
	t.Fatalf("starting redis-server: %v", err)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *server) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// run starts the process on s.port and waits until it answers PING.
func (s *server) run() error {
	port := []string{"--port", strconv.Itoa(s.port)}
	if s.tls != nil {
		port = []string{"--port", "0", "--tls-port", strconv.Itoa(s.port)}
	}
	args := append(append(port,
		"--bind", "127.0.0.1", "--dir", s.dir, "--save", "", "--appendonly", "no", "--protected-mode", "no",
	), s.extra...)
	s.cmd = exec.Command(s.bin, args...)
	log, err := os.OpenFile(s.dir+"/redis.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan struct{})
	s.exited = exited
	go func() { s.cmd.Wait(); log.Close(); close(exited) }()
	// Poll the real condition (PING answered), bounded; between tries, give
	// the server a moment, unless it has exited.
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if s.ping() == nil {
			return nil
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(s.dir + "/redis.log")
			return fmt.Errorf("redis-server exited: %s", lastLines(string(b), 5))
		case <-time.After(5 * time.Millisecond):
		}
	}
	s.stop()
	return fmt.Errorf("redis-server on %s did not answer PING within 15s", s.addr())
}

// restart starts the server again on the same port.
func (s *server) restart() {
	s.t.Helper()
	if err := s.run(); err != nil {
		s.t.Fatalf("restarting redis-server: %v", err)
	}
}

// kill ends the server abruptly (SIGKILL) and waits until its port refuses
// connections.
func (s *server) kill() {
	s.t.Helper()
	s.stop()
	deadline := time.Now().Add(10 * time.Second)
	for s.ping() == nil {
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s still answers after SIGKILL", s.addr())
		}
	}
}

func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// client is a plain client for the tests' own look at the server.
func (s *server) client() *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: s.addr(), MaxRetries: -1})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// ping sends PING on a fresh connection and expects +PONG (or, with a
// password, the error that asks for it: the server is up).
func (s *server) ping() error {
	var c net.Conn
	var err error
	d := &net.Dialer{Timeout: time.Second}
	if s.tls != nil {
		c, err = tls.DialWithDialer(d, "tcp", s.addr(), s.tls)
	} else {
		c, err = d.Dial("tcp", s.addr())
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

var bg = context.Background()
