package replay

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestReadsHeadFirst: the bytes read ahead come back first, in reads as
// small as the caller's buffer, then the connection's own.
func TestReadsHeadFirst(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		_, _ = b.Write([]byte(" world"))
		b.Close()
	}()
	c := &Conn{Conn: a, Head: []byte("hello")}
	var got []byte
	buf := make([]byte, 3)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(got) != "hello world" {
		t.Fatalf("read %q, want %q", got, "hello world")
	}
}

// TestCloseWriteHalfCloses: on TCP, CloseWrite ends what the peer reads
// and leaves the other direction open; on a connection that cannot
// half-close, it is a no-op.
func TestCloseWriteHalfCloses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- s
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	s, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer s.Close()
	c := &Conn{Conn: s, Head: []byte("x")}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = cc.SetReadDeadline(time.Now().Add(10 * time.Second)) // a failure, not a hang
	if b, err := io.ReadAll(cc); err != nil || len(b) != 0 {
		t.Fatalf("peer read %q, %v; want EOF at once", b, err)
	}
	if _, err := cc.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	_ = s.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 2)
	if n, err := io.ReadFull(c, buf); err != nil || string(buf[:n]) != "xy" {
		t.Fatalf("read %q, %v; want %q", buf[:n], err, "xy")
	}

	p, q := net.Pipe()
	defer p.Close()
	defer q.Close()
	if err := (&Conn{Conn: p}).CloseWrite(); err != nil {
		t.Fatalf("CloseWrite on a pipe: %v, want nil", err)
	}
}
