package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// childEnv, set in the test binary that TestServerDiesWithTheBinary runs
// again, makes it the child.
const childEnv = "REDISTEST_CHILD"

// TestServerDiesWithTheBinary: a test binary that dies without running its
// cleanups (as `go test -timeout` ends one) takes its redis-server with it.
// The test binary is run again as a child that starts a server, tells its
// address, and exits when its input ends; a connection to the server must
// then be closed by the server's end.
func TestServerDiesWithTheBinary(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		s := Start(t)
		fmt.Printf("addr=%s\n", s.Addr())
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3) // no cleanup runs
	}
	if runtime.GOOS != "linux" {
		t.Skip("only Linux kills a child with its parent")
	}
	Need(t, "redis-server")
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithTheBinary$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, lines := "", bufio.NewScanner(stdout)
	for addr == "" && lines.Scan() {
		addr, _ = strings.CutPrefix(lines.Text(), "addr=")
	}
	if addr == "" {
		t.Fatalf("the child told no address: %v", lines.Err())
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stdin.Close() // the child exits
	go io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("the child ended with %v, want its own exit 3", err)
	}
	// The kernel kills the server as the child dies, which closes the
	// connection; the deadline is a failure's bound, not a pace.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server on %s still runs 10s after its test binary died", addr)
	}
	if err := ping(addr, nil); err == nil {
		t.Fatalf("the server on %s answers after its test binary died", addr)
	}
}

// TestNoRestartAfterTheTest: a restart that comes after the server's
// cleanup (a goroutine the test left behind) starts nothing; before it, the
// server restarts on its port, empty, in place of the one running.
func TestNoRestartAfterTheTest(t *testing.T) {
	var late error
	t.Run("server", func(t *testing.T) {
		s := New(t)
		// Cleanups run last first: this one after the server's, while its
		// folder is still there.
		t.Cleanup(func() {
			if late = s.TryRestart(); late == nil {
				s.Stop()
			}
		})
		s.Start()
		c := s.Client()
		if err := c.Set(t.Context(), "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.TryRestart(); err != nil { // the first still runs
			t.Fatal(err)
		}
		if n, err := c.Exists(t.Context(), "k").Result(); err != nil || n != 0 {
			t.Fatalf("after the restart: exists %d, %v; want an empty server", n, err)
		}
	})
	if late == nil {
		t.Error("a restart after the server's cleanup started a server")
	}
}
