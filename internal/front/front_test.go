package front

import (
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/listen"
)

var errNoToken = fmt.Errorf("x: %w", listen.ErrNoToken)

// TestDoorErrorsAreTheFrontEnds: each error of a door is the front-end's
// ErrNoToken, its closed error, or prefixed with its name.
func TestDoorErrorsAreTheFrontEnds(t *testing.T) {
	if _, err := NewDoor("x", errNoToken, "127.0.0.1:0", 0, ""); !errors.Is(err, errNoToken) || !strings.Contains(err.Error(), `listen "127.0.0.1:0"`) {
		t.Fatalf("NewDoor on TCP without a token: %v", err)
	}
	if _, err := NewDoor("x", errNoToken, "unix://relative.sock", 0, ""); err == nil || !strings.HasPrefix(err.Error(), "x: ") {
		t.Fatalf("NewDoor of a bad address: %v", err)
	}

	d, err := NewDoor("x", errNoToken, "unix://"+filepath.Join(t.TempDir(), "nodir", "x.sock"), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Listen(); err == nil || !strings.HasPrefix(err.Error(), "x: listen: ") {
		t.Fatalf("Listen in a missing folder: %v", err)
	}
	tcp, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := d.Serve(tcp, net.ErrClosed); !errors.Is(err, errNoToken) || !strings.Contains(err.Error(), "bound to 127.0.0.1:") {
		t.Fatalf("Serve of TCP without a token: %v", err)
	}
	if err := d.SetToken(""); err != nil {
		t.Fatalf("SetToken(\"\") on a unix socket: %v", err)
	}

	d, _ = NewDoor("x", errNoToken, "127.0.0.1:0", 0, "tok-0123456789")
	if err := d.SetToken(""); err != errNoToken {
		t.Fatalf("SetToken(\"\") on TCP: %v", err)
	}
	d.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := errors.New("closed")
	if err := d.Serve(ln, closed); err != closed {
		t.Fatalf("Serve after Close: %v", err)
	}
}

// TestSplitBoundsConnections: beyond MaxConns a new connection is closed at
// once; one closed frees its place.
func TestSplitBoundsConnections(t *testing.T) {
	d, _ := NewDoor("x", errNoToken, "127.0.0.1:0", 0, "tok-0123456789")
	ln, _ := d.Listen()
	if err := d.Serve(ln, net.ErrClosed); err != nil {
		t.Fatal(err)
	}
	sp := d.Split(ln, SplitParams{MaxConns: 2, HTTP1: true})
	done := make(chan error, 1)
	go func() { done <- sp.Run() }()
	defer func() { d.Close(); <-done }()
	closed := make(chan struct{}, 8)
	go func() { // the HTTP/1 server: echoes what its connections send
		for {
			c, err := sp.H1().Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close(); closed <- struct{}{} }()
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	echoes := func(c net.Conn) bool {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\n"); err != nil {
			return false
		}
		b := make([]byte, 16)
		_, err := io.ReadFull(c, b)
		return err == nil && string(b) == "GET / HTTP/1.1\r\n"
	}
	a, b := dial(), dial()
	if !echoes(a) || !echoes(b) {
		t.Fatal("the first two connections are not served")
	}
	c := dial()
	if echoes(c) {
		t.Fatal("a third connection is served beyond MaxConns = 2")
	}
	a.Close()
	<-closed // the server closed its side: a's place is free
	if c := dial(); !echoes(c) {
		t.Fatal("a closed connection's place is not given back")
	}
	b.Close()
}
