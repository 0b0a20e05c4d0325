package permit_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/h2raw"
	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/permit/permitpb"
)

// TestUnauthenticatedFloodAllocatesNothing: on a TCP listener, gRPC
// streams and connections without the token cost the server no goroutine
// and no memory that outlives them (h2raw.Flood), unary calls and Sessions
// alike.
func TestUnauthenticatedFloodAllocatesNothing(t *testing.T) {
	for _, method := range []string{permitpb.Permits_Acquire_FullMethodName, permitpb.Permits_Session_FullMethodName} {
		t.Run(method, func(t *testing.T) {
			e := newEnv(t, jobs(4), permit.Params{})
			s := serve(t, e.svc, "tcp")
			h2raw.Flood(t, "tcp", s.addr, method, testToken, h2raw.InProcess)
		})
	}
}
