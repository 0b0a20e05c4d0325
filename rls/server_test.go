package rls_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/rls"
)

const testToken = "rls-test-token-0123456789"

// serve starts a Server of svc on network "unix" (no token) or "tcp"
// (loopback, testToken) and returns a client built from go-control-plane's
// generated stubs, as Envoy's gRPC client is, and the context its calls
// carry (Envoy's initial_metadata: the token on TCP).
func serve(t testing.TB, svc *rls.Service, network string) (rlsv3.RateLimitServiceClient, context.Context, *rls.Server) {
	t.Helper()
	p := rls.ServerParams{Service: svc}
	var target string
	switch network {
	case "unix":
		dir, err := os.MkdirTemp("", "rls")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		p.Listen = "unix://" + filepath.Join(dir, "rls.sock")
		target = p.Listen
	case "tcp":
		p.Listen, p.Token = "127.0.0.1:0", testToken
	}
	srv, err := rls.NewServer(p)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	if network == "tcp" {
		target = "passthrough:///" + ln.Addr().String()
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Shutdown(context.Background())
		if err := <-done; !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("Serve: %v", err)
		}
	})
	ctx := context.Background()
	if network == "tcp" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+testToken)
	}
	return rlsv3.NewRateLimitServiceClient(conn), ctx, srv
}

// TestEnvoyLikeClient sends RateLimitRequests as Envoy's ratelimit filter
// does (a domain, the descriptors of the route's actions, hits_addend) over
// a real socket.
func TestEnvoyLikeClient(t *testing.T) {
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
			c, ctx, _ := serve(t, e.svc, network)
			// remote_address and a generic_key, as two rate_limits actions
			// of a route give them.
			req := &rlsv3.RateLimitRequest{Domain: "edge", HitsAddend: 1, Descriptors: []*rlv3.RateLimitDescriptor{
				desc("remote_address", "198.51.100.7"), desc("generic_key", "checkout"),
			}}
			for i := range 3 {
				resp, err := c.ShouldRateLimit(ctx, req)
				if err != nil || resp.GetOverallCode() != ok {
					t.Fatalf("call %d: %v %v", i+1, resp, err)
				}
			}
			resp, err := c.ShouldRateLimit(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetOverallCode() != over || resp.GetStatuses()[0].GetCode() != over || resp.GetStatuses()[1].GetCode() != ok {
				t.Fatalf("fourth call: %v, want the client over its 3 per 10s and checkout still OK", resp)
			}
			if h := headers(resp); first(h["RateLimit-Policy"]) != `"per-client";q=3;w=10` || first(h["Sluice-Reason"]) != "rate" {
				t.Fatalf("headers %v", h)
			}
			// Unknown domain: OK, no limit.
			resp, err = c.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "other", Descriptors: req.Descriptors})
			if err != nil || resp.GetOverallCode() != ok || resp.GetStatuses()[0].GetCurrentLimit() != nil {
				t.Fatalf("unknown domain: %v %v", resp, err)
			}
			// Malformed: a gRPC status.
			_, err = c.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge"})
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("no descriptors: %v, want InvalidArgument", err)
			}
		})
	}
}

func TestTCPNeedsTheToken(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	if _, err := rls.NewServer(rls.ServerParams{Service: e.svc, Listen: "127.0.0.1:0"}); !errors.Is(err, rls.ErrNoToken) {
		t.Fatalf("NewServer on TCP without a token: %v", err)
	}
	srv, _ := rls.NewServer(rls.ServerParams{Service: e.svc, Listen: "unix:///nonexistent/rls.sock"})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := srv.Serve(ln); !errors.Is(err, rls.ErrNoToken) {
		t.Fatalf("Serve of TCP without a token: %v", err)
	}
	c, ctx, _ := serve(t, e.svc, "tcp")
	req := request("edge", 0, desc("remote_address", "192.0.2.1"))
	for _, md := range []metadata.MD{nil, metadata.Pairs("authorization", "Bearer wrong")} {
		_, err := c.ShouldRateLimit(metadata.NewOutgoingContext(context.Background(), md), req)
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("metadata %v: %v, want Unauthenticated", md, err)
		}
	}
	if st := e.svc.Stats(); st.Calls != 0 {
		t.Fatalf("an unauthenticated call reached the service: %+v", st)
	}
	if _, err := c.ShouldRateLimit(ctx, req); err != nil {
		t.Fatal(err)
	}
}

func TestManyConcurrentCallersKeepTheQuota(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	c, ctx, _ := serve(t, e.svc, "unix")
	req := request("edge", 0, desc("remote_address", "192.0.2.1"))
	var mu sync.Mutex
	counts := map[rlsv3.RateLimitResponse_Code]int{}
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				resp, err := c.ShouldRateLimit(ctx, req)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				counts[resp.GetOverallCode()]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// The clock stands still: exactly the quota is OK.
	if counts[ok] != 3 || counts[over] != 317 {
		t.Fatalf("codes %v, want 3 OK and 317 OVER_LIMIT", counts)
	}
}

func TestShutdownEndsServe(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	c, ctx, srv := serve(t, e.svc, "unix")
	if _, err := c.ShouldRateLimit(ctx, request("edge", 0, desc("remote_address", "x"))); err != nil {
		t.Fatal(err)
	}
	if srv.Addr() == nil || !strings.HasSuffix(srv.Addr().String(), "rls.sock") {
		t.Fatalf("Addr %v", srv.Addr())
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ShouldRateLimit(ctx, request("edge", 0, desc("remote_address", "x"))); status.Code(err) != codes.Unavailable {
		t.Fatalf("a call after Shutdown: %v, want Unavailable", err)
	}
}
