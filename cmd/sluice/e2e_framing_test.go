package main

import (
	"testing"

	"github.com/sluicehq/sluice/internal/rawreq"
)

// TestE2ESmugglingRefused sends, on one raw connection to the real daemon
// per fixture of testdata/requests, a valid request and then the fixture (a
// request-smuggling shape: Content-Length with Transfer-Encoding, two
// lengths, ...). The first is served; the fixture is answered with its status
// and the connection closed, and it never reaches the upstream: the daemon
// serves on the proxy's GuardListener behind net/http's server.
func TestE2ESmugglingRefused(t *testing.T) {
	cases, err := rawreq.Load("../../testdata/requests")
	if err != nil {
		t.Fatal(err)
	}
	up := startUpstream(t)
	s := startSluice(t, writeConfig(t, "", up.url, prelude))
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ex, err := rawreq.Send(s.addr, c)
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
			if n := up.requests.Load(); n != int64(i+1) {
				t.Errorf("the upstream has seen %d requests after %d valid ones (the refused ones must not reach it)", n, i+1)
			}
		})
	}
}
