package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/admin/api"
)

// streamsConfig: one group with a concurrency limit of 20 and no queue, so
// that any stream holding a concurrency slot would crowd ordinary requests
// out; its streams bound is STREAMS.
const streamsConfig = prelude + `
[[group]]
name = "all"
  [group.concurrency]
  law = "fixed"
  limit = 20
  [group.queue]
  max = 0
  [group.streams]
  max = STREAMS
` + noResources

// streamsUpstream is a real upstream for streams on one port: HTTP/1.1 with
// WebSockets (/ws echoes each message, via github.com/coder/websocket), an
// event stream (/sse: one event, then held open), "ok" for anything else,
// and gRPC over h2c (the health service, whose Watch is a stream).
type streamsUpstream struct {
	url    string
	health *health.Server
}

func startStreamsUpstream(t *testing.T) *streamsUpstream {
	t.Helper()
	u := &streamsUpstream{health: health.NewServer()}
	u.health.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, u.health)
	done := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc"):
			gs.ServeHTTP(w, r)
		case r.URL.Path == "/ws":
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			for {
				typ, b, err := c.Read(r.Context())
				if err != nil {
					return
				}
				if err := c.Write(r.Context(), typ, b); err != nil {
					return
				}
			}
		case r.URL.Path == "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: hello\n\n")
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
			case <-done:
			}
		default:
			_, _ = io.WriteString(w, "ok")
		}
	})
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: &protos}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		close(done)
		gs.Stop()
		_ = srv.Close()
	})
	u.url = "http://" + ln.Addr().String()
	return u
}

// openWebSockets opens n WebSockets through s and sends one message over
// each, answered by the upstream: each is spliced.
func openWebSockets(t *testing.T, ctx context.Context, s *sluice, n int) []*websocket.Conn {
	t.Helper()
	conns := make([]*websocket.Conn, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16) // the upgrades are admitted as requests: under the limit of 20
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, _, err := websocket.Dial(ctx, "ws://"+s.addr+"/ws", nil)
			if err != nil {
				errs <- fmt.Errorf("websocket %d: %w", i, err)
				return
			}
			c.SetReadLimit(1 << 10)
			if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
				errs <- fmt.Errorf("websocket %d: write: %w", i, err)
				return
			}
			if _, b, err := c.Read(ctx); err != nil || string(b) != "hi" {
				errs <- fmt.Errorf("websocket %d: echo %q, %v", i, b, err)
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return conns
}

// grpcWatch is one open health Watch stream.
type grpcWatch struct {
	stream grpc.ServerStreamingClient[healthpb.HealthCheckResponse]
	cancel context.CancelFunc
}

// openWatches opens n Watch streams through s, over connections of at most
// 50 streams each (sluice takes 100 streams per HTTP/2 connection), and
// reads each one's first message: each is past its response headers. A call
// is a request until it outlives its headers (by 100 ms): each batch waits
// until the group "all" (on the admin API at admin) has none in flight.
func openWatches(t *testing.T, ctx context.Context, s *sluice, c *http.Client, admin string, n int) []grpcWatch {
	t.Helper()
	var ccs []*grpc.ClientConn
	for i := 0; i < n; i += 50 {
		cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		ccs = append(ccs, cc)
	}
	out := make([]grpcWatch, n)
	for from := 0; from < n; from += 16 { // until it is a stream a call is a request: under the limit of 20
		to := min(n, from+16)
		for i := from; i < to; i++ {
			sctx, cancel := context.WithCancel(ctx)
			st, err := healthpb.NewHealthClient(ccs[i/50]).Watch(sctx, &healthpb.HealthCheckRequest{Service: "svc"})
			if err != nil {
				cancel()
				t.Fatalf("watch %d: %v", i, err)
			}
			out[i] = grpcWatch{st, cancel}
		}
		for i := from; i < to; i++ {
			if m, err := out[i].stream.Recv(); err != nil || m.Status != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("watch %d: first message %v, %v", i, m, err)
			}
		}
		awaitGroup(t, c, admin, "all", "watches become streams", func(g api.Group) bool { return g.InFlight == 0 })
	}
	return out
}

// groupView reads /v1/groups/{name}.
func groupView(t *testing.T, c *http.Client, admin, name string) api.Group {
	t.Helper()
	r := do(c, "GET", admin+"/v1/groups/"+name)
	var g api.Group
	if err := json.Unmarshal([]byte(r.body), &g); err != nil || r.status != 200 {
		t.Fatalf("/v1/groups/%s: %d %v %s", name, r.status, err, r.body)
	}
	return g
}

// awaitGroup polls /v1/groups/{name} until ok says so (bounded by waitLimit).
func awaitGroup(t *testing.T, c *http.Client, admin, name, what string, ok func(api.Group) bool) api.Group {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		g := groupView(t, c, admin, name)
		if ok(g) {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("/v1/groups/%s: no %s within %v: %+v", name, what, waitLimit, g)
		}
		<-tick.C
	}
}

// ordinary sends n requests through s, par at once, and returns how many
// were answered 200 and their latencies, sorted.
func ordinary(c *http.Client, s *sluice, n, par int) (ok int, lat []time.Duration, refused map[string]int) {
	var mu sync.Mutex
	refused = map[string]int{}
	var wg sync.WaitGroup
	per := n / par
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				t0 := time.Now()
				r := do(c, "GET", s.url("/plain"))
				d := time.Since(t0)
				mu.Lock()
				if r.status == 200 {
					ok++
					lat = append(lat, d)
				} else {
					refused[fmt.Sprintf("%d %s", r.status, r.header.Get("Sluice-Reason"))]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return ok, lat, refused
}

func quantile(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[min(len(lat)-1, int(q*float64(len(lat))))]
}

// slowSamples scrapes the count of the group's upstream latency samples above
// bound (sluice_request_duration_seconds, cumulative buckets) from /metrics.
func slowSamples(t *testing.T, c *http.Client, admin, group string, bound string) (above, count float64) {
	t.Helper()
	m := do(c, "GET", admin+"/metrics").body
	le := regexp.MustCompile(`(?m)^sluice_request_duration_seconds_bucket\{group="` + group + `",outcome="success",le="` + regexp.QuoteMeta(bound) + `"\} (\S+)$`)
	cnt := regexp.MustCompile(`(?m)^sluice_request_duration_seconds_count\{group="` + group + `",outcome="success"\} (\S+)$`)
	a, b := le.FindStringSubmatch(m), cnt.FindStringSubmatch(m)
	if a == nil || b == nil {
		t.Fatalf("/metrics has no success bucket le=%q or count for group %q:\n%s", bound, group, regexp.MustCompile(`(?m)^sluice_request_duration.*$`).FindAllString(m, -1))
	}
	below, _ := strconv.ParseFloat(a[1], 64)
	count, _ = strconv.ParseFloat(b[1], 64)
	return count - below, count
}

// TestE2EStreams: the real binary, a group with a concurrency limit of 20
// and no queue, and streams from real clients held open through it (200
// WebSockets by github.com/coder/websocket, 30 gRPC Watch streams by
// grpc-go, an event stream): they hold stream slots, not concurrency
// slots, so 20 ordinary requests at once are all admitted beside them; the
// law's latency samples are the streams' times to their first byte, not
// their lifetimes (no sample above a second, after they lived more than
// one); a stream beyond [group.streams] max is refused (503 streams, gRPC
// UNAVAILABLE). On SIGTERM the streams get the grace period, then each
// WebSocket gets a close frame with status 1001, each gRPC call
// UNAVAILABLE "sluice is shutting down", the event stream its end, and the
// log says how many were cut; sluice exits 0.
func TestE2EStreams(t *testing.T) {
	const nWS, nGRPC, nKept = 200, 30, 10 // nKept of the gRPC streams stay open to the end
	up := startStreamsUpstream(t)
	cfg := strings.Replace(streamsConfig, "STREAMS", strconv.Itoa(nWS+nGRPC+1), 1)
	s := startSluice(t, writeConfig(t, "", up.url, cfg), "-grace", "300ms")
	admin := "http://" + str(s.log.wait(t, "the admin line", message("admin API, metrics and dashboard"))["addr"])
	c := client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()

	ws := openWebSockets(t, ctx, s, nWS)
	watches := openWatches(t, ctx, s, c, admin, nGRPC)
	opened := time.Now()
	sse, err := c.Get(s.url("/sse"))
	if err != nil || sse.StatusCode != 200 {
		t.Fatalf("event stream: %v %v", sse, err)
	}
	defer sse.Body.Close()
	events := bufio.NewReader(sse.Body)
	if line, err := events.ReadString('\n'); err != nil || line != "data: hello\n" {
		t.Fatalf("event stream: first line %q, %v", line, err)
	}
	g := groupView(t, c, admin, "all")
	if g.Streams.Open != nWS+nGRPC+1 || g.InFlight != 0 {
		t.Fatalf("streams %+v, in flight %d; want %d open, none in flight", g.Streams, g.InFlight, nWS+nGRPC+1)
	}

	// Ordinary requests beside them: 20 at once, all admitted.
	if ok, _, refused := ordinary(c, s, 200, 20); ok != 200 {
		t.Fatalf("beside %d streams, %d of 200 ordinary requests admitted; refused %v", g.Streams.Open, ok, refused)
	}
	// One stream more is refused when it would open.
	if _, resp, err := websocket.Dial(ctx, "ws://"+s.addr+"/ws", nil); err == nil || resp == nil ||
		resp.StatusCode != 503 || resp.Header.Get("Sluice-Reason") != "streams" {
		t.Fatalf("a WebSocket beyond the bound: %v %v, want 503 streams", resp, err)
	}
	one := openGRPCRefused(t, ctx, s)
	if status.Code(one) != codes.Unavailable || !strings.Contains(status.Convert(one).Message(), "streams") {
		t.Fatalf("a gRPC stream beyond the bound: %v, want UNAVAILABLE (streams)", one)
	}

	// The gRPC streams but nKept end after living more than a second (the
	// control loop's ticks tell the time): none of them is a latency sample
	// above a second.
	awaitTicks(t, c, admin, 25) // 25 × 50ms
	lived := time.Since(opened)
	for _, w := range watches[nKept:] {
		w.cancel()
	}
	awaitGroup(t, c, admin, "all", "the ended streams", func(g api.Group) bool { return g.Streams.Open == nWS+nKept+1 })
	if above, count := slowSamples(t, c, admin, "all", "1"); above > 0 {
		t.Errorf("%v of %v latency samples above 1s, after the streams lived %v: a stream's lifetime reached the law", above, count, lived)
	}

	// SIGTERM: the grace period, then every stream closed its own way.
	s.signal(t, syscall.SIGTERM)
	var wg sync.WaitGroup
	codesSeen := make(chan websocket.StatusCode, nWS)
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := w.Read(ctx)
			codesSeen <- websocket.CloseStatus(err)
		}()
	}
	for i, w := range watches[:nKept] {
		_, err := w.stream.Recv()
		if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "shutting down") {
			t.Errorf("gRPC stream %d at shutdown: %v, want UNAVAILABLE (sluice is shutting down)", i, err)
		}
	}
	if rest, err := io.ReadAll(events); err != nil || string(rest) != "\n" { // the first event's blank line, then the end
		t.Errorf("event stream at shutdown: %q, %v; want its clean end", rest, err)
	}
	wg.Wait()
	close(codesSeen)
	bad := map[websocket.StatusCode]int{}
	for code := range codesSeen {
		if code != websocket.StatusGoingAway {
			bad[code]++
		}
	}
	if len(bad) > 0 {
		t.Errorf("WebSocket close codes other than 1001: %v", bad)
	}
	if code := s.wait(t); code != exitOK {
		t.Errorf("exit code %d, want 0", code)
	}
	s.log.wait(t, "the streams cut", message("grace period over: streams closed", "streams_cut", strconv.Itoa(nWS+nKept+1)))
}

// openGRPCRefused opens one more Watch through s and returns how it failed.
func openGRPCRefused(t *testing.T, ctx context.Context, s *sluice) error {
	t.Helper()
	cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	st, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		return err
	}
	// A request until it outlives its headers: its first message comes,
	// then the refusal, in its trailers.
	for err == nil {
		_, err = st.Recv()
	}
	return err
}

// awaitTicks waits until the control loop has ticked n more times.
func awaitTicks(t *testing.T, c *http.Client, admin string, n float64) {
	t.Helper()
	want := metricValue(t, c, admin, "sluice_control_ticks_total") + n
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for metricValue(t, c, admin, "sluice_control_ticks_total") < want {
		if time.Now().After(deadline) {
			t.Fatalf("the control loop did not tick %v times within %v", n, waitLimit)
		}
		<-tick.C
	}
}

// metricValue reads one unlabelled sample from /metrics.
func metricValue(t *testing.T, c *http.Client, admin, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(do(c, "GET", admin+"/metrics").body)
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// rssOf returns a process's resident set size, in bytes.
func rssOf(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestLabIdleStreams (SLUICE_STREAMS_LAB=1; heavy: run it under the bench
// lock) holds idle WebSockets (SLUICE_STREAMS_WS, default 9,900) and gRPC
// Watch streams (SLUICE_STREAMS_GRPC, default 1,000) open through the real
// binary, a concurrency limit of 20, and reports sluice's RSS (VmRSS)
// before and with them, and the latency of ordinary requests (as the client
// saw it, and as the law saw it: the group's p99 over a control interval)
// before and with them, three rounds each. It fails only if an ordinary
// request is refused or a stream does not open: the figures are for
// BENCHMARKS.md.
//
// Each WebSocket takes two file descriptors in sluice (client, upstream) and
// two here (client, the upstream's end), so 10,000 need a limit above 20,000
// in both: the test raises its own (soft and hard, up to fs.nr_open), which
// sluice inherits, where it may (CAP_SYS_RESOURCE); where it may not, it
// holds as many as the hard limit fits, and says so.
func TestLabIdleStreams(t *testing.T) {
	if os.Getenv("SLUICE_STREAMS_LAB") == "" {
		t.Skip("SLUICE_STREAMS_LAB=1 runs it (heavy: 10,000 WebSockets)")
	}
	nWS, nGRPC := envInt("SLUICE_STREAMS_WS", 10_000), envInt("SLUICE_STREAMS_GRPC", 1000)
	// SLUICE_STREAMS_BIN runs another sluice binary, one from before
	// [group.streams] (the contender: its WebSockets gave their slot back
	// at the 101 already, its gRPC streams held theirs, so give it
	// SLUICE_STREAMS_GRPC=0).
	other := os.Getenv("SLUICE_STREAMS_BIN")
	if other != "" {
		binOnce.Do(func() { binPath = other })
	}
	if got, err := raiseOpenFiles(uint64(2*nWS + streamsSpareFiles)); err != nil {
		fit := max(0, int(got)-streamsSpareFiles) / 2
		t.Logf("%v: holding %d WebSockets, not %d", err, fit, nWS)
		nWS = fit
	}
	up := startStreamsUpstream(t)
	cfg := strings.Replace(streamsConfig, "STREAMS", strconv.Itoa(nWS+nGRPC), 1)
	cfg = strings.Replace(cfg, `interval = "50ms"`, `interval = "250ms"`, 1)
	if other != "" {
		cfg = strings.Replace(cfg, "  [group.streams]\n  max = "+strconv.Itoa(nWS+nGRPC)+"\n", "", 1)
	}
	s := startSluice(t, writeConfig(t, "", up.url, cfg))
	admin := "http://" + str(s.log.wait(t, "the admin line", message("admin API, metrics and dashboard"))["addr"])
	c := client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pid := s.cmd.Process.Pid

	measure := func(what string) {
		// Ordinary requests, 20 at once, over two control intervals: the
		// law's figures are those of the second.
		var okAll, n int
		var lat []time.Duration
		refusedAll := map[string]int{}
		stop := make(chan struct{})
		loaded := make(chan struct{})
		go func() {
			defer close(loaded)
			for {
				select {
				case <-stop:
					return
				default:
				}
				ok, l, refused := ordinary(c, s, 400, 20)
				okAll, n, lat = okAll+ok, n+400, append(lat, l...)
				for k, v := range refused {
					refusedAll[k] += v
				}
			}
		}()
		awaitTicks(t, c, admin, 3)
		g := groupView(t, c, admin, "all")
		close(stop)
		<-loaded
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		if okAll != n {
			t.Errorf("%s: %d of %d ordinary requests admitted; refused %v", what, okAll, n, refusedAll)
		}
		law := "none"
		if p := g.Latency.P99; p != nil {
			law = time.Duration(*p * float64(time.Second)).String()
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		t.Logf("%s: %d ordinary requests, p50 %v p99 %v (client); the law's p99 %s over a control interval of them; streams %d; sluice RSS %.1f MiB, %d file descriptors",
			what, n, quantile(lat, 0.5), quantile(lat, 0.99), law, g.Streams.Open, float64(rssOf(t, pid))/(1<<20), len(fds))
	}
	for i := range 3 {
		measure(fmt.Sprintf("before, round %d", i+1))
	}
	t0 := time.Now()
	ws := openWebSockets(t, ctx, s, nWS)
	watches := openWatches(t, ctx, s, c, admin, nGRPC)
	t.Logf("opened %d WebSockets and %d gRPC streams in %v", len(ws), len(watches), time.Since(t0))
	if g := groupView(t, c, admin, "all"); other == "" && g.Streams.Open != nWS+nGRPC {
		t.Fatalf("streams %+v, want %d open", g.Streams, nWS+nGRPC)
	}
	for i := range 3 {
		measure(fmt.Sprintf("with the streams open, round %d", i+1))
	}
}

// streamsSpareFiles is what TestLabIdleStreams' processes need open beyond
// two descriptors per WebSocket: listeners, the gRPC streams' connections,
// the admin API's, logs.
const streamsSpareFiles = 150

// raiseOpenFiles raises this process's RLIMIT_NOFILE (which the sluice it
// starts inherits) to need: the soft limit, and the hard one with it where
// the process may (CAP_SYS_RESOURCE, up to fs.nr_open). It returns the soft
// limit it got, and why, when that is less than need.
func raiseOpenFiles(need uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur >= need {
		return lim.Cur, nil
	}
	var short error
	if lim.Max < need {
		err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: need, Max: need})
		if err == nil {
			return need, nil
		}
		short = fmt.Errorf("%d file descriptors needed; the hard limit is %d and cannot be raised here (%v: it takes CAP_SYS_RESOURCE, up to fs.nr_open)", need, lim.Max, err)
	}
	lim.Cur = min(need, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, short
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}
