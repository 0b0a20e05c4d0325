package proxy

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/internal/rawreq"
)

// TestGuardListenerRefusesFixtures sends each request of testdata/requests
// after a valid one on one connection to a net/http server behind
// GuardListener, as sluice run serves: the valid request is served, the
// fixture gets its status, the connection is closed, and the handler never
// sees the fixture. cmd/sluice's e2e sends the same files to the real daemon.
func TestGuardListenerRefusesFixtures(t *testing.T) {
	cases, err := rawreq.Load("../testdata/requests")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok "+r.URL.Path)
	})}
	go func() { _ = srv.Serve(GuardListener(ln, http.DefaultMaxHeaderBytes)) }()
	t.Cleanup(func() { _ = srv.Close() })
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ex, err := rawreq.Send(ln.Addr().String(), c)
			if err != nil {
				t.Fatal(err)
			}
			if ex.FirstStatus != 200 || ex.FirstBody != "ok /first" {
				t.Fatalf("first request: %d %q, want 200 %q", ex.FirstStatus, ex.FirstBody, "ok /first")
			}
			if ex.Status != c.Status {
				t.Errorf("%s: %d, want %d", c.Why, ex.Status, c.Status)
			}
			if !ex.Closed {
				t.Errorf("after the %d the connection stays open, want it closed", ex.Status)
			}
			if n := served.Load(); n != int64(i+1) {
				t.Errorf("the handler has seen %d requests after %d valid ones (the refused ones must not reach it)", n, i+1)
			}
		})
	}
}
