//go:build linux || darwin || freebsd

package proxy

import (
	"net"
	"path/filepath"
	"testing"
)

// TestUnixUpstream forwards to an upstream on a unix socket.
func TestUnixUpstream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "up.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		c.Read(buf)
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nunix"))
	}()
	_, base := startProxy(t, Params{Upstream: "unix://" + path}, ServerParams{})
	resp, err := newClient(t, false).Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := make([]byte, 8)
	n, _ := resp.Body.Read(b)
	if resp.StatusCode != 200 || string(b[:n]) != "unix" {
		t.Fatalf("%d %q", resp.StatusCode, b[:n])
	}
}
