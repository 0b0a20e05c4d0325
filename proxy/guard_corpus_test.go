package proxy

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/internal/rawreq"
)

// TestGuardListenerRefusesFixtures sends each request of testdata/requests
// after a valid one on one connection to a net/http server behind
// GuardListener, as sluice run serves, and over TLS behind
// GuardTLSListener: the valid request is served, the fixture gets its
// status, the connection is closed, and the handler never sees the fixture.
// cmd/sluice's e2e sends the same files to the real daemon.
func TestGuardListenerRefusesFixtures(t *testing.T) {
	cases, err := rawreq.Load("../testdata/requests")
	if err != nil {
		t.Fatal(err)
	}
	for _, transport := range []string{"tcp", "tls"} {
		t.Run(transport, func(t *testing.T) {
			var served atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				served.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				_, _ = io.WriteString(w, "ok "+r.URL.Path)
			})
			var dial func() (net.Conn, error)
			if transport == "tls" {
				addr, cc := serveTLS(t, h)
				cc.NextProtos = []string{"http/1.1"}
				dial = func() (net.Conn, error) { return tls.Dial("tcp", addr, cc) }
			} else {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				srv := &http.Server{Handler: h}
				go func() { _ = srv.Serve(GuardListener(ln, http.DefaultMaxHeaderBytes)) }()
				t.Cleanup(func() { _ = srv.Close() })
				dial = func() (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) }
			}
			for i, c := range cases {
				t.Run(c.Name, func(t *testing.T) {
					conn, err := dial()
					if err != nil {
						t.Fatal(err)
					}
					ex, err := rawreq.SendOn(conn, c)
					if err != nil {
						t.Fatal(err)
					}
					for _, p := range ex.Problems(c) {
						t.Error(p)
					}
					if n := served.Load(); n != int64(i+1) {
						t.Errorf("the handler has seen %d requests after %d valid ones (the refused ones must not reach it)", n, i+1)
					}
				})
			}
		})
	}
}
