package rls_test

import (
	"context"
	"testing"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/rls"
)

// FuzzShouldRateLimit decodes any bytes as a RateLimitRequest and asks the
// service: the answer is a status for each descriptor, or INVALID_ARGUMENT;
// never a crash, never another error.
func FuzzShouldRateLimit(f *testing.F) {
	for _, req := range []*rlsv3.RateLimitRequest{
		request("edge", 0, desc("remote_address", "192.0.2.1")),
		request("edge", 3, desc("generic_key", "checkout"), desc("remote_address", "192.0.2.1")),
		request("edge", 0, withHits(desc("generic_key", "checkout"), 1<<63)),
		request("edge", 0, desc("tenant", "t", "header_match", "premium", "path", "/")),
		request("other", 0, desc("a", "b")),
		request("edge", 0),
		request("", 1, desc("remote_address", "x")),
	} {
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	e := newEnv(f, edgeGroups, rls.Params{Mapping: edgeMapping})
	f.Fuzz(func(t *testing.T, b []byte) {
		var req rlsv3.RateLimitRequest
		if proto.Unmarshal(b, &req) != nil {
			return // gRPC refuses it before the service
		}
		resp, err := e.svc.ShouldRateLimit(context.Background(), &req)
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("error %v, want InvalidArgument", err)
			}
			return
		}
		if len(resp.GetStatuses()) != len(req.GetDescriptors()) {
			t.Fatalf("%d statuses for %d descriptors", len(resp.GetStatuses()), len(req.GetDescriptors()))
		}
		over := false
		for _, st := range resp.GetStatuses() {
			if st.GetCode() != rlsv3.RateLimitResponse_OK && st.GetCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
				t.Fatalf("status code %v", st.GetCode())
			}
			over = over || st.GetCode() == rlsv3.RateLimitResponse_OVER_LIMIT
		}
		if over != (resp.GetOverallCode() == rlsv3.RateLimitResponse_OVER_LIMIT) {
			t.Fatalf("overall %v for statuses %v", resp.GetOverallCode(), resp.GetStatuses())
		}
	})
}
