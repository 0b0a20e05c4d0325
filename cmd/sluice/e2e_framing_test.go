package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestE2ESmugglingRefused sends, on one raw connection to the real daemon, a
// valid request and then one with both Content-Length and Transfer-Encoding
// (the request-smuggling shape of RFC 9112 §11.2). The first is served; the
// second is answered 400 and the connection closed, and it never reaches the
// upstream: the daemon serves on the proxy's GuardListener.
func TestE2ESmugglingRefused(t *testing.T) {
	up := startUpstream(t)
	s := startSluice(t, writeConfig(t, "", up.url, prelude))
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"+
		"POST /smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	first, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("first response: %v", err)
	}
	body, _ := io.ReadAll(first.Body)
	if first.StatusCode != 200 || string(body) != "ok /first" {
		t.Fatalf("first request: %d %q, want 200 %q", first.StatusCode, body, "ok /first")
	}
	second, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("second response: %v", err)
	}
	_, _ = io.ReadAll(second.Body)
	if second.StatusCode != http.StatusBadRequest {
		t.Errorf("Content-Length with Transfer-Encoding: %d, want 400", second.StatusCode)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the 400 the connection stays open (read: %v), want it closed", err)
	}
	if n := up.requests.Load(); n != 1 {
		t.Errorf("the upstream saw %d requests, want 1 (the smuggled one must not reach it)", n)
	}
}
