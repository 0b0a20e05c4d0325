package rls_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/h2raw"
	"github.com/sluicehq/sluice/rls"
)

// TestUnauthenticatedFloodAllocatesNothing: on a TCP listener, streams and
// connections without the token cost the server no goroutine and no memory
// that outlives them (h2raw.Flood).
func TestUnauthenticatedFloodAllocatesNothing(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	srv, err := rls.NewServer(rls.ServerParams{Service: e.svc, Listen: "127.0.0.1:0", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	defer func() { srv.Close(); <-done }()
	h2raw.Flood(t, "tcp", ln.Addr().String(), "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit", testToken, h2raw.InProcess)
}
