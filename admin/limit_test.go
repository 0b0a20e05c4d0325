package admin

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate"
)

// TestConnectionsBounded (issue 23, item 7): the admin API serves at most
// MaxConns connections at once; one more is closed as soon as it is
// accepted, and one closed frees its place.
func TestConnectionsBounded(t *testing.T) {
	cfg := parseConfig(t, testConfig)
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Params{Gate: g, Config: cfg, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Shutdown(context.Background())
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		return c
	}
	// A served connection answers; the one beyond the bound reads EOF.
	healthy := func(c net.Conn) bool {
		if _, err := io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			return false
		}
		b := make([]byte, 12)
		_, err := io.ReadFull(c, b)
		return err == nil && string(b) == "HTTP/1.1 200"
	}
	conns := make([]net.Conn, MaxConns)
	for i := range conns {
		conns[i] = dial()
		defer conns[i].Close()
	}
	if !healthy(conns[0]) || !healthy(conns[MaxConns-1]) {
		t.Fatal("connections within the bound are not served")
	}
	extra := dial()
	defer extra.Close()
	if healthy(extra) {
		t.Fatalf("connection %d is served beyond MaxConns", MaxConns+1)
	}
}
