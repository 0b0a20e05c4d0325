package main

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/rawreq"
	"github.com/sluicehq/sluice/internal/tlstest"
)

// TestE2ESmugglingRefused sends, on one raw connection to the real daemon
// per fixture of testdata/requests, a valid request and then the fixture (a
// request-smuggling shape: Content-Length with Transfer-Encoding, two
// lengths, ...). The first is served; the fixture is answered with its status
// and the connection closed, and it never reaches the upstream: the daemon
// serves on the proxy's GuardListener behind net/http's server. Over TLS
// (server.tls_cert) the same holds: the guard sits under the TLS the daemon
// terminates (GuardTLSListener).
func TestE2ESmugglingRefused(t *testing.T) {
	cases, err := rawreq.Load("../../testdata/requests")
	if err != nil {
		t.Fatal(err)
	}
	for _, transport := range []string{"tcp", "tls"} {
		t.Run(transport, func(t *testing.T) {
			up := startUpstream(t)
			config, dial := prelude, func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) }
			if transport == "tls" {
				dir := t.TempDir()
				cert, key, pool := tlstest.Files(t, dir)
				config = strings.Replace(prelude, "[upstream]", "tls_cert = \""+cert+"\"\ntls_key = \""+key+"\"\n[upstream]", 1)
				dial = func(addr string) (net.Conn, error) {
					return tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
				}
			}
			s := startSluice(t, writeConfig(t, "", up.url, config))
			for i, c := range cases {
				t.Run(c.Name, func(t *testing.T) {
					conn, err := dial(s.addr)
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
					if n := up.requests.Load(); n != int64(i+1) {
						t.Errorf("the upstream has seen %d requests after %d valid ones (the refused ones must not reach it)", n, i+1)
					}
				})
			}
		})
	}
}
