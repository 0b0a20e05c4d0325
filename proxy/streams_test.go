package proxy

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
)

// wsGroups: one WebSocket at a time.
const wsGroups = `
[[group]]
name = "ws"
match = { path = "/chat" }
  [group.streams]
  max = 1
`

// TestUpgradeBeyondStreamsRefusedFirst: a WebSocket upgrade takes its
// group's stream slot before it is forwarded, so one beyond the bound is
// refused (503 streams) before its upstream is asked, not after the
// upstream's 101; an upgrade the upstream declines gives its reserved slot
// back.
func TestUpgradeBeyondStreamsRefusedFirst(t *testing.T) {
	var upgrades atomic.Int64
	echo := websocket.Handler(func(ws *websocket.Conn) { io.Copy(ws, ws) })
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/declined" {
			http.Error(w, "no websockets here", http.StatusBadRequest)
			return
		}
		upgrades.Add(1)
		echo.ServeHTTP(w, r)
	}), false)
	g := testGate(t, wsGroups+`
[[group]]
name = "declined"
match = { path = "/declined" }
  [group.streams]
  max = 1
`)
	_, base := startProxy(t, Params{Upstream: up.URL, Gate: g}, ServerParams{})
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/chat"
	first, err := websocket.Dial(wsURL, "", "http://localhost/")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	req, _ := http.NewRequest("GET", base+"/chat", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	req.Header.Set("Origin", "http://localhost/")
	resp, err := newClient(t, false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Sluice-Reason") != "streams" {
		t.Fatalf("a WebSocket beyond the bound: %d %q, want 503 streams", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	if n := upgrades.Load(); n != 1 {
		t.Errorf("the upstream was asked for %d upgrades, want 1: the refused one never reaches it", n)
	}
	if st := groupStatus(t, g, "ws"); st.Rejected[adaptive.RejectStreams] != 1 || st.Streams.Open != 1 || st.Streams.Opened != 1 || st.InFlight != 0 {
		t.Errorf("ws group: rejected %v, streams %+v, in flight %d; want one streams refusal, 1 open of 1 opened, none in flight",
			st.Rejected, st.Streams, st.InFlight)
	}

	// Declined by the upstream: an ordinary response, the slot given back.
	req, _ = http.NewRequest("GET", base+"/declined", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	for i := range 2 {
		resp, err = newClient(t, false).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("declined upgrade %d: %d, want the upstream's 400", i, resp.StatusCode)
		}
	}
	if st := groupStatus(t, g, "declined"); st.Streams.Open != 0 || st.Streams.Opened != 0 || st.Completed[gate.Ignored] != 2 {
		t.Errorf("declined group: streams %+v, completed %v; want none open or opened, 2 ignored", st.Streams, st.Completed)
	}
}

// TestGRPCUnaryIsNoStream: a unary gRPC call is a request, not a stream, even
// when its server sends its headers before it fails (grpc-go, SendHeader
// and then an error): the law learns the failure in its trailers as a drop,
// with the call's whole latency, and the group opens no stream; a call that
// ends well with a message is a success, no stream either.
func TestGRPCUnaryIsNoStream(t *testing.T) {
	// However late a loaded machine runs the upstream's handler between
	// its headers and its status, the calls stay requests.
	after := grpcStreamAfter
	grpcStreamAfter = time.Minute
	t.Cleanup(func() { grpcStreamAfter = after })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		if err := stream.SendHeader(metadata.Pairs("x-early", "1")); err != nil {
			return err
		}
		if m, _ := grpc.MethodFromServerStream(stream); m == "/early/ok" {
			return stream.SendMsg(&healthpb.HealthCheckResponse{})
		}
		return status.Error(codes.Unavailable, "overloaded after all")
	}))
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	g := testGate(t, roomyGroup)
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: "http://" + ln.Addr().String(), Gate: g, DisableBreaker: true}, ServerParams{})
	cc := dialGRPC(t, base)

	var header metadata.MD
	err = cc.Invoke(grpcCtx(t), "/early/fail", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{}, grpc.Header(&header))
	if status.Code(err) != codes.Unavailable || len(header.Get("x-early")) != 1 {
		t.Fatalf("call: %v, headers %v; want Unavailable after its headers", err, header)
	}
	if f := adm.outcome(t); f.outcome != gate.Dropped {
		t.Errorf("a unary call failing after its headers: outcome %v, want dropped", f.outcome)
	}
	if err := cc.Invoke(grpcCtx(t), "/early/ok", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{}); err != nil {
		t.Fatal(err)
	}
	if f := adm.outcome(t); f.outcome != gate.Success {
		t.Errorf("a unary call: outcome %v, want success", f.outcome)
	}
	if st := groupStatus(t, g, "all"); st.Streams.Opened != 0 || st.Streams.Open != 0 || st.InFlight != 0 {
		t.Errorf("streams %+v, in flight %d; want no stream opened, none in flight", st.Streams, st.InFlight)
	}
	adm.noMoreFinishes(t)
}
