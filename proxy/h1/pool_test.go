//go:build linux || darwin || freebsd

package h1

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/proxy/h1/h1test"
)

// socketPair returns two connected unix stream sockets; closing one end is seen
// by the other at once (no network in between), so tests need not wait.
func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	return conn(fds[0]), conn(fds[1])
}

func TestIdleProbe(t *testing.T) {
	quiet := func(c net.Conn) bool {
		var p idleProbe
		p.init(c)
		return p.quiet()
	}
	a, b := socketPair(t)
	var p idleProbe
	p.init(a)
	if !p.quiet() || !p.quiet() {
		t.Fatal("an open idle connection looks closed")
	}
	b.Write([]byte("x"))
	if p.quiet() {
		t.Error("a connection with unsolicited bytes looks usable")
	}
	if n := testing.AllocsPerRun(100, func() { p.quiet() }); n != 0 {
		t.Errorf("a look allocates %v times", n)
	}
	a, b = socketPair(t)
	b.Close()
	if quiet(a) {
		t.Error("a connection closed by the peer looks open")
	}
	a.Close()
	if quiet(a) {
		t.Error("a closed connection looks open")
	}
}

// unixListener accepts connections on a socket in a temporary directory and
// returns its path and the accepted connections.
func unixListener(t *testing.T) (string, <-chan net.Conn) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "up.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			conns <- c
		}
	}()
	return path, conns
}

// acceptLimit bounds the wait for a connection the pool dials.
const acceptLimit = 10 * time.Second

func TestPoolReuseAndLiveness(t *testing.T) {
	path, accepted := unixListener(t)
	p := NewPool("unix", path, time.Second, 2, time.Minute, time.Second)
	now := time.Now()
	ctx := context.Background()

	c1, reused, err := p.Get(ctx, now, false, nil)
	if err != nil || reused {
		t.Fatalf("first get: %v, reused %v", err, reused)
	}
	peer1 := h1test.Recv(t, accepted, "the first connection", acceptLimit)
	p.Put(c1, now)
	c, reused, _ := p.Get(ctx, now.Add(500*time.Millisecond), false, nil)
	if c != c1 || !reused {
		t.Fatal("a fresh idle connection was not reused")
	}

	// Closed by the upstream while idle, however briefly: discarded, a new
	// connection is dialled.
	p.Put(c1, now)
	peer1.Close()
	c2, reused, err := p.Get(ctx, now, false, nil)
	if err != nil || reused || c2 == c1 {
		t.Fatalf("a connection the upstream closed was reused (%v, %v)", reused, err)
	}
	peer2 := h1test.Recv(t, accepted, "the second connection", acceptLimit)

	// Open and quiet: reused after the look.
	p.Put(c2, now)
	if c, reused, _ := p.Get(ctx, now.Add(2*time.Second), false, nil); c != c2 || !reused {
		t.Fatal("an open connection idle for 2s was not reused")
	}

	// Its last read deadline passed while it was idle: still reused.
	p.Put(c2, now)
	c2.ArmRead(now.Add(-time.Second), time.Minute)
	if c, reused, _ := p.Get(ctx, now, false, nil); c != c2 || !reused {
		t.Fatal("a connection whose read deadline passed while idle was not reused")
	}

	// Bytes arrived while it was idle: discarded at once.
	p.Put(c2, now)
	peer2.Write([]byte("HTTP/1.1 200 OK\r\n"))
	if c, reused, _ := p.Get(ctx, now, false, nil); c == c2 || reused {
		t.Fatal("a connection holding unsolicited bytes was reused")
	}
	c2 = c
	h1test.Recv(t, accepted, "the third connection", acceptLimit)

	// A fresh connection is asked for: the idle one stays idle.
	p.Put(c2, now)
	if c, reused, _ := p.Get(ctx, now, true, nil); c == c2 || reused || p.IdleCount() != 1 {
		t.Fatal("get(fresh) handed out an idle connection")
	}

	// Idle past the idle timeout: discarded without a look.
	p.Put(c2, now)
	if c, reused, _ := p.Get(ctx, now.Add(2*time.Minute), false, nil); c == c2 || reused {
		t.Fatal("a connection idle past the timeout was reused")
	}
}

func TestPoolBounds(t *testing.T) {
	path, _ := unixListener(t)
	p := NewPool("unix", path, time.Second, 2, time.Minute, time.Second)
	now := time.Now()
	var cs []*Conn
	for i := 0; i < 3; i++ {
		c, _, err := p.Get(context.Background(), now, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	for _, c := range cs {
		p.Put(c, now)
	}
	if n := p.IdleCount(); n != 2 {
		t.Fatalf("%d idle, want the bound of 2", n)
	}
	// The oldest idle connection outlived the timeout: a put sweeps it.
	fresh := &Conn{Net: cs[2].Net}
	p.Put(fresh, now.Add(2*time.Minute))
	p.mu.Lock()
	kept := len(p.idle) == 2 && p.idle[1] == fresh && p.idle[0] == cs[1]
	p.mu.Unlock()
	if !kept {
		t.Fatal("the put did not sweep the oldest stale connection to make room")
	}
	p.Close()
	if n := p.IdleCount(); n != 0 {
		t.Fatalf("%d idle after close", n)
	}
	p.Put(cs[0], now)
	if n := p.IdleCount(); n != 0 {
		t.Fatal("a closed pool kept a connection")
	}
}
