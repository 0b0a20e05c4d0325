//go:build linux || darwin || freebsd

package h1

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// armedWriter returns an upWriter of c, armed.
func armedWriter(t *testing.T, c net.Conn) *upWriter {
	t.Helper()
	var probe idleProbe
	probe.init(c)
	if probe.rc == nil {
		t.Fatal("no raw connection")
	}
	w := &upWriter{}
	w.init(c, &probe)
	w.armed = true
	return w
}

// buffered reports whether c holds bytes to read, without blocking.
func buffered(t *testing.T, c net.Conn) bool {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var perr error
	if err := rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); err != nil {
		t.Fatal(err)
	}
	return perr == nil && n > 0
}

// TestUpWriterAwaitsResponse: an armed write returns once the response has
// begun to arrive (so that the read that follows finds it), not as soon as
// the request is written: the upstream here answers only after it read the
// request and the test let it.
func TestUpWriterAwaitsResponse(t *testing.T) {
	c, s := tcpPair(t)
	w := armedWriter(t, c)
	got := make(chan []byte, 1)
	answer := make(chan struct{})
	go func() {
		b := make([]byte, 5)
		_, _ = io.ReadFull(s, b)
		got <- b
		<-answer
		_, _ = s.Write([]byte("pong"))
	}()
	returned := make(chan bool, 1)
	go func() {
		n, err := w.Write([]byte("ping\n"))
		if n != 5 || err != nil {
			t.Errorf("Write = %d, %v; want 5, nil", n, err)
		}
		returned <- buffered(t, c) // the response is there the moment it returns
	}()
	if b := <-got; string(b) != "ping\n" {
		t.Fatalf("upstream read %q", b)
	}
	close(answer)
	if !<-returned {
		t.Fatal("the armed write returned before the response arrived")
	}
	if w.armed {
		t.Error("still armed after its write")
	}
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "pong" {
		t.Fatalf("read %q, %v", b, err)
	}
	// Disarmed, a write is a plain one: it returns with no answer coming.
	if _, err := w.Write([]byte("again\n")); err != nil {
		t.Fatal(err)
	}
}

// TestUpWriterLargeWrite: a write the socket does not take whole is finished
// as a plain write (here the upstream reads it all before it answers), and
// the response is read as usual.
func TestUpWriterLargeWrite(t *testing.T) {
	c, s := tcpPair(t)
	w := armedWriter(t, c)
	big := bytes.Repeat([]byte("x"), 16<<20) // beyond any loopback socket buffer
	go func() {
		_, _ = io.CopyN(io.Discard, s, int64(len(big)))
		_, _ = s.Write([]byte("done"))
	}()
	if n, err := w.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(big))
	}
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "done" {
		t.Fatalf("read %q, %v", b, err)
	}
}

// TestUpWriterDeadline: an upstream that never answers holds an armed write
// only until the connection's read deadline; the read that follows reports
// the timeout.
func TestUpWriterDeadline(t *testing.T) {
	c, s := tcpPair(t)
	w := armedWriter(t, c)
	go func() { _, _ = io.Copy(io.Discard, s) }()
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := w.Write([]byte("ping\n")); err != nil {
		t.Fatalf("Write: %v (the request went; the wait's end is the read's to say)", err)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the wait: %v, want a deadline exceeded", err)
	}
}

// TestUpWriterClosed: closing the connection under an armed write (the client
// went away: Conn.abort) ends its wait; a write to a connection closed
// before fails as a plain write does, and so does one the upstream reset.
func TestUpWriterClosed(t *testing.T) {
	c, s := tcpPair(t)
	w := armedWriter(t, c)
	got := make(chan struct{})
	go func() {
		_, _ = s.Read(make([]byte, 5))
		close(got)
	}()
	done := make(chan error, 1)
	go func() {
		_, err := w.Write([]byte("ping\n"))
		done <- err
	}()
	<-got
	c.Close()
	if err := <-done; err != nil {
		t.Fatalf("Write after its request went: %v, want nil (the read says)", err)
	}
	w.armed = true
	if _, err := w.Write([]byte("ping\n")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("armed write on a closed connection: %v, want net.ErrClosed", err)
	}

	c2, s2 := tcpPair(t)
	w2 := armedWriter(t, c2)
	s2.(*net.TCPConn).SetLinger(0)
	s2.Close() // an RST: the upstream is gone
	var err error
	for range 100 { // the first write may still be taken; the reset shows at a later one
		w2.armed = true
		_ = c2.SetReadDeadline(time.Now().Add(time.Second))
		if _, err = w2.Write([]byte("ping\n")); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("armed write to a reset connection: %v, want ECONNRESET or EPIPE", err)
	}
}
