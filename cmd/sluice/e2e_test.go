package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/admin/api"
)

// prelude starts every test config: a free loopback port, the upstream, a
// fast control loop. The groups that follow turn the CPU and memory targets
// off (but where they are under test) so that a busy test machine sheds
// nothing, and end with a catch-all group so that the default one, which has
// those targets, is not appended.
const prelude = `
[server]
listen = "127.0.0.1:0"
shutdown_grace = "20s"
[upstream]
url = "UPSTREAM"
[admin]
listen = "127.0.0.1:0"
[control]
interval = "50ms"
`

// noResources turns the CPU and memory targets off.
const noResources = `
  [group.targets]
  cpu = 0.0
  memory = 0.0
`

// catchAll is a roomy last group.
const catchAll = `
[[group]]
name = "all"
  [group.concurrency]
  law = "fixed"
  limit = 1000
` + noResources

// TestE2ELimitNeverOvershot: with a fixed limit of 4 and a long queue, the
// upstream never has more than 4 requests in it: first with requests held in
// the upstream and let go one at a time, then with 16 clients hammering.
func TestE2ELimitNeverOvershot(t *testing.T) {
	up := startUpstream(t)
	s := startSluice(t, writeConfig(t, "", up.url, prelude+`
[[group]]
name = "four"
  [group.concurrency]
  law = "fixed"
  limit = 4
  [group.queue]
  max = 1000
  max_wait = "20s"
  codel_target = "0s"
`+noResources))
	c := client(t)

	const held = 12
	var results []<-chan result
	for i := 0; i < held; i++ {
		results = append(results, goDo(c, "GET", s.url("/hold")))
	}
	up.await(t, 4)
	// Each request let go frees a slot for exactly one waiter.
	for i := 0; i < held-4; i++ {
		up.free(1)
		up.await(t, 1)
	}
	up.free(4)
	for i, ch := range results {
		if r := recv(t, ch, "a held response"); r.err != nil || r.status != 200 {
			t.Fatalf("held request %d: %d %v", i, r.status, r.err)
		}
	}
	if p := up.peak.Load(); p != 4 {
		t.Fatalf("peak at the upstream %d with requests held, want 4", p)
	}

	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				if r := do(c, "GET", s.url("/fast")); r.err != nil || r.status != 200 {
					errs <- fmt.Sprintf("%d %v %s", r.status, r.err, r.header.Get("Sluice-Reason"))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("hammering: %s", e)
	}
	if p, n := up.peak.Load(), up.requests.Load(); p > 4 || n != held+16*40 {
		t.Errorf("peak at the upstream %d after %d requests, want at most 4 and %d", p, n, held+16*40)
	}
}

// TestE2ERejections: a client over its quota gets 429 with Retry-After, the
// reason and the RateLimit fields; an overloaded group answers 503 with
// Retry-After and the reason, and no RateLimit fields.
func TestE2ERejections(t *testing.T) {
	up := startUpstream(t)
	s := startSluice(t, writeConfig(t, "", up.url, prelude+`
[[group]]
name = "quota"
match = { path_prefix = "/quota" }
key = "header:X-Tenant"
  [group.rate]
  rate = 0.5
  [group.concurrency]
  law = "fixed"
  limit = 100
`+noResources+`
[[group]]
name = "tight"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 0
`+noResources))
	c := client(t)

	if r := do(c, "GET", s.url("/quota"), "X-Tenant", "a"); r.status != 200 {
		t.Fatalf("first request: %d %v", r.status, r.err)
	}
	r := do(c, "GET", s.url("/quota"), "X-Tenant", "a")
	ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 429 || ra < 2 || ra > 3 || r.body != "too many requests (rate)\n" {
		t.Errorf("over quota: %d Retry-After %q body %q; want 429, 2 or 3 s", r.status, r.header.Get("Retry-After"), r.body)
	}
	for k, want := range map[string]string{
		"Sluice-Reason":    "rate",
		"RateLimit-Policy": `"quota";q=1;w=2`,
		"RateLimit":        `"quota";r=0;t=2`,
		"Content-Type":     "text/plain; charset=utf-8",
	} {
		if got := r.header.Get(k); got != want {
			t.Errorf("429 %s: %q, want %q", k, got, want)
		}
	}

	hold := goDo(c, "GET", s.url("/tight/hold"))
	up.await(t, 1)
	r = do(c, "GET", s.url("/tight"))
	ra, _ = strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 503 || ra < 1 || ra > 2 || r.header.Get("Sluice-Reason") != "concurrency" || r.body != "service overloaded (concurrency)\n" {
		t.Errorf("overload: %d Retry-After %q reason %q body %q; want 503, 1 or 2 s, concurrency", r.status, r.header.Get("Retry-After"), r.header.Get("Sluice-Reason"), r.body)
	}
	if r.header.Get("RateLimit") != "" || r.header.Get("RateLimit-Policy") != "" {
		t.Errorf("overload carries RateLimit fields: %v", r.header)
	}
	up.free(1)
	if r := recv(t, hold, "the held response"); r.status != 200 {
		t.Errorf("held request: %d %v", r.status, r.err)
	}
}

// TestE2ETenantIsolation: a greedy tenant does not starve a polite one, with a
// per-key quota and, without any, by its fair share of the group's limit.
func TestE2ETenantIsolation(t *testing.T) {
	t.Run("quota", func(t *testing.T) {
		up := startUpstream(t)
		s := startSluice(t, writeConfig(t, "", up.url, prelude+`
[[group]]
name = "api"
key = "header:X-Tenant"
  [group.rate]
  rate = 1
  burst = 5
  [group.concurrency]
  law = "fixed"
  limit = 100
`+noResources))
		c := client(t)
		var ok, limited int
		for i := 0; i < 20; i++ {
			switch r := do(c, "GET", s.url("/"), "X-Tenant", "greedy"); {
			case r.status == 200:
				ok++
			case r.status == 429 && r.header.Get("Sluice-Reason") == "rate":
				limited++
			default:
				t.Fatalf("greedy: %d %v", r.status, r.err)
			}
		}
		if limited == 0 || ok < 5 {
			t.Fatalf("greedy: %d passed, %d limited; want its burst of 5 to pass and the rest limited", ok, limited)
		}
		for i := 0; i < 5; i++ {
			if r := do(c, "GET", s.url("/"), "X-Tenant", "polite"); r.status != 200 {
				t.Fatalf("polite request %d while greedy is limited: %d %s", i, r.status, r.header.Get("Sluice-Reason"))
			}
		}
	})

	t.Run("fair_share", func(t *testing.T) {
		up := startUpstream(t)
		s := startSluice(t, writeConfig(t, "", up.url, prelude+`
[[group]]
name = "api"
key = "header:X-Tenant"
  [group.concurrency]
  law = "fixed"
  limit = 4
  [group.queue]
  max = 100
  max_wait = "20s"
  codel_target = "0s"
`+noResources))
		c := client(t)
		var held []<-chan result
		held = append(held, goDo(c, "GET", s.url("/polite/hold"), "X-Tenant", "polite"))
		up.await(t, 1)
		for i := 0; i < 3; i++ {
			held = append(held, goDo(c, "GET", s.url("/greedy/hold"), "X-Tenant", "greedy"))
		}
		up.await(t, 3)
		// The group is at its limit and greedy holds 3 of 4 slots, more than
		// its share of 2: it is turned away instead of queueing.
		if r := do(c, "GET", s.url("/greedy/hold"), "X-Tenant", "greedy"); r.status != 429 || r.header.Get("Sluice-Reason") != "fair_share" {
			t.Fatalf("greedy over its share: %d %q, want 429 fair_share", r.status, r.header.Get("Sluice-Reason"))
		}
		// Polite, below its share, waits for the next free slot and gets it.
		held = append(held, goDo(c, "GET", s.url("/polite/hold"), "X-Tenant", "polite"))
		up.free(1)
		if got := recv(t, up.entered, "the next request at the upstream"); got != "/polite/hold" {
			t.Fatalf("the freed slot went to %s, want the polite tenant", got)
		}
		if r := do(c, "GET", s.url("/greedy/hold"), "X-Tenant", "greedy"); r.status != 429 || r.header.Get("Sluice-Reason") != "fair_share" {
			t.Fatalf("greedy again: %d %q, want 429 fair_share", r.status, r.header.Get("Sluice-Reason"))
		}
		up.free(4)
		for i, ch := range held {
			if r := recv(t, ch, "a held response"); r.status != 200 {
				t.Errorf("held request %d: %d %v", i, r.status, r.err)
			}
		}
		if p := up.peak.Load(); p > 4 {
			t.Errorf("peak at the upstream %d, want at most 4", p)
		}
	})
}

// TestE2ECriticalKeepsSucceeding: with memory beyond its target (0.01 % of
// the host's or the cgroup's memory, which any machine exceeds), only critical
// requests are admitted: they keep succeeding while sheddable (and default)
// ones are shed with 503.
func TestE2ECriticalKeepsSucceeding(t *testing.T) {
	up := startUpstream(t)
	// The host's memory, always known, is over any tiny target.
	s := startSluice(t, writeConfig(t, "", up.url, prelude+`
[probe]
source = "host"
[[group]]
name = "app"
priority = "header:X-Priority"
  [group.concurrency]
  law = "fixed"
  limit = 1000
  [group.targets]
  cpu = 0.0
  memory = 0.0001
`))
	c := client(t)
	// The guard acts once the first control ticks have read the memory:
	// until then sheddable requests pass.
	deadline := time.Now().Add(waitLimit)
	for {
		r := do(c, "GET", s.url("/"), "X-Priority", "sheddable")
		if r.status == 503 && r.header.Get("Sluice-Reason") == "memory" {
			break
		}
		if r.status != 200 || time.Now().After(deadline) {
			t.Fatalf("waiting for the memory guard: %d %q %v", r.status, r.header.Get("Sluice-Reason"), r.err)
		}
	}
	var chans []<-chan result
	var prios []string
	for i := 0; i < 10; i++ {
		for _, p := range []string{"critical", "sheddable", "default"} {
			chans = append(chans, goDo(c, "GET", s.url("/"), "X-Priority", p))
			prios = append(prios, p)
		}
	}
	for i, ch := range chans {
		r := recv(t, ch, "a response")
		switch {
		case prios[i] == "critical" && r.status != 200:
			t.Errorf("critical request %d: %d %q", i, r.status, r.header.Get("Sluice-Reason"))
		case prios[i] != "critical" && (r.status != 503 || r.header.Get("Sluice-Reason") != "memory"):
			t.Errorf("%s request %d: %d %q, want 503 memory", prios[i], i, r.status, r.header.Get("Sluice-Reason"))
		}
	}
}

// TestE2EQueueWaitsAtMostMaxWait: with the only slot held, a request waits in
// the queue for max_wait and is then turned away with queue_timeout, while the
// slot is still held.
func TestE2EQueueWaitsAtMostMaxWait(t *testing.T) {
	up := startUpstream(t)
	s := startSluice(t, writeConfig(t, "", up.url, prelude+`
[[group]]
name = "one"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 10
  max_wait = "300ms"
  codel_target = "0s"
`+noResources))
	c := client(t)
	hold := goDo(c, "GET", s.url("/hold"))
	up.await(t, 1)
	start := time.Now()
	r := do(c, "GET", s.url("/queued"))
	waited := time.Since(start)
	if r.status != 503 || r.header.Get("Sluice-Reason") != "queue_timeout" {
		t.Fatalf("queued request: %d %q %v, want 503 queue_timeout", r.status, r.header.Get("Sluice-Reason"), r.err)
	}
	// It came back while the slot was still held (so it did not wait for the
	// slot), and not before max_wait (so it did wait in the queue).
	if waited < 300*time.Millisecond {
		t.Errorf("turned away after %v, before max_wait", waited)
	}
	up.free(1)
	if r := recv(t, hold, "the held response"); r.status != 200 {
		t.Errorf("held request: %d %v", r.status, r.err)
	}
}

// TestE2EReload: SIGHUP with a bad file logs every problem and keeps the
// running config (and its state) serving; with a good one it swaps it in,
// keeps unchanged groups, and says which settings need a restart.
func TestE2EReload(t *testing.T) {
	up := startUpstream(t)
	dir := t.TempDir()
	v1 := prelude + `
[[group]]
name = "r"
match = { path_prefix = "/r" }
  [group.rate]
  rate = 0.01
  [group.concurrency]
  law = "fixed"
  limit = 100
` + noResources + catchAll
	path := writeConfig(t, dir, up.url, v1)
	s := startSluice(t, path)
	c := client(t)
	if r := do(c, "GET", s.url("/r")); r.status != 200 {
		t.Fatalf("first /r: %d", r.status)
	}
	if r := do(c, "GET", s.url("/r")); r.status != 429 {
		t.Fatalf("second /r: %d, want 429", r.status)
	}

	writeConfig(t, dir, up.url, prelude+`
[[group]]
name = "r"
match = { path_prefix = "/r" }
  [group.rate]
  rate = "fast"
  [group.concurency]
  law = "aimd"
`+catchAll)
	s.signal(t, syscall.SIGHUP)
	s.log.wait(t, "the refused reload", message("reload refused: the running config keeps serving"))
	for _, want := range []struct{ key, line string }{{"group[0].rate.rate", "16"}, {"group[0].concurency", "17"}} {
		s.log.wait(t, "the problem with "+want.key, message("config problem", "key", want.key, "line", want.line))
	}
	if r := do(c, "GET", s.url("/r")); r.status != 429 || r.header.Get("Sluice-Reason") != "rate" {
		t.Fatalf("/r after the bad reload: %d, want 429: the old quota, its state kept", r.status)
	}

	writeConfig(t, dir, up.url, strings.Replace(strings.Replace(v1, "rate = 0.01", "rate = 1000", 1),
		`shutdown_grace = "20s"`, `shutdown_grace = "20s"`+"\nidle_timeout = \"1m\"", 1))
	s.signal(t, syscall.SIGHUP)
	s.log.wait(t, "the restart-only change", message("settings that only a restart applies changed; they keep their running values", "settings", "server.idle_timeout"))
	s.log.wait(t, "the reload", message("config reloaded", "changed", "r", "unchanged", "all"))
	if r := do(c, "GET", s.url("/r")); r.status != 200 {
		t.Fatalf("/r after the good reload: %d, want 200", r.status)
	}
}

// TestE2EShutdown: SIGTERM stops accepting, lets the request in flight finish
// and exits 0 with the state file written; when the grace period runs out it
// cuts the request and exits 3; a second signal exits at once with 4.
func TestE2EShutdown(t *testing.T) {
	config := func(t *testing.T, up *upstream) (string, string) {
		dir := t.TempDir()
		state := filepath.Join(dir, "state.json")
		return writeConfig(t, dir, up.url, strings.Replace(prelude, "[control]", "[control]\nstate_file = \""+state+"\"", 1)+catchAll), state
	}
	t.Run("drains", func(t *testing.T) {
		up := startUpstream(t)
		path, state := config(t, up)
		s := startSluice(t, path)
		c := client(t)
		hold := goDo(c, "GET", s.url("/hold"))
		up.await(t, 1)
		s.signal(t, syscall.SIGTERM)
		s.log.wait(t, "the shutdown", message("signal: shutting down", "signal", "terminated"))
		waitRefused(t, s.addr)
		up.free(1)
		if r := recv(t, hold, "the response in flight"); r.status != 200 || r.body != "ok /hold" {
			t.Fatalf("request in flight: %d %q %v", r.status, r.body, r.err)
		}
		if code := s.wait(t); code != exitOK {
			t.Fatalf("exit code %d, want 0", code)
		}
		s.log.wait(t, "the drain", message("requests in flight finished"))
		if st := readState(t, state); st.Groups["all"].Limit != 1000 {
			t.Errorf("state file %+v", st)
		}
	})
	t.Run("grace_expires", func(t *testing.T) {
		up := startUpstream(t)
		path, state := config(t, up)
		s := startSluice(t, path, "-grace", "200ms")
		hold := goDo(client(t), "GET", s.url("/hold"))
		up.await(t, 1)
		s.signal(t, syscall.SIGINT)
		if code := s.wait(t); code != exitCut {
			t.Fatalf("exit code %d, want %d", code, exitCut)
		}
		s.log.wait(t, "the cut", message("grace period over: connections closed", "requests_cut", "1"))
		if r := recv(t, hold, "the cut response"); r.err == nil {
			t.Errorf("the request in flight got %d %q, want its connection cut", r.status, r.body)
		}
		readState(t, state)
	})
	t.Run("second_signal", func(t *testing.T) {
		up := startUpstream(t)
		path, state := config(t, up)
		s := startSluice(t, path)
		hold := goDo(client(t), "GET", s.url("/hold"))
		up.await(t, 1)
		s.signal(t, syscall.SIGTERM)
		s.log.wait(t, "the shutdown", message("signal: shutting down"))
		s.signal(t, syscall.SIGTERM)
		if code := s.wait(t); code != exitInterrupted {
			t.Fatalf("exit code %d, want %d", code, exitInterrupted)
		}
		s.log.wait(t, "the second signal", message("second signal: exiting at once; requests in flight are cut and the state file is not written"))
		recv(t, hold, "the cut response")
		if _, err := os.Stat(state); !os.IsNotExist(err) {
			t.Errorf("state file after a second signal: %v, want none", err)
		}
	})
}

// waitRefused waits until nothing accepts connections at addr any more.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return
		}
		c.Close()
	}
	t.Fatalf("%s still accepts connections", addr)
}

// stateFile is the part of the state file the tests read.
type stateFile struct {
	Groups map[string]struct {
		Law   string `json:"law"`
		Limit int    `json:"limit"`
	} `json:"groups"`
}

func readState(t *testing.T, path string) stateFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("state file: %v", err)
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state file: %v\n%s", err, b)
	}
	return st
}

// TestE2EUpstreamDown: a refused connection is a 502 at once, and after three
// in a row the circuit opens: 503 circuit_open, Retry-After the open duration.
func TestE2EUpstreamDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	s := startSluice(t, writeConfig(t, "", dead, strings.Replace(prelude, "[control]", `
  [upstream.circuit]
  failure_ratio = 0.0
  consecutive_failures = 3
  open_duration = "1m"
[control]`, 1)+catchAll))
	c := client(t)
	for i := 0; i < 3; i++ {
		if r := do(c, "GET", s.url("/")); r.status != 502 || r.header.Get("Sluice-Error") != "connect" {
			t.Fatalf("request %d: %d %q, want 502 connect", i, r.status, r.header.Get("Sluice-Error"))
		}
	}
	r := do(c, "GET", s.url("/"))
	ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 503 || r.header.Get("Sluice-Reason") != "circuit_open" || ra < 59 {
		t.Fatalf("after three failures: %d %q Retry-After %q, want 503 circuit_open for the minute", r.status, r.header.Get("Sluice-Reason"), r.header.Get("Retry-After"))
	}
}

// TestE2EGRPCShed: a gRPC call through h2c that the gate sheds (a second
// Watch stream in a group of one stream) gets UNAVAILABLE with the reason
// in its trailers; one it admits passes.
func TestE2EGRPCShed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)

	s := startSluice(t, writeConfig(t, "", "http://"+ln.Addr().String(), prelude+`
[[group]]
name = "watch"
match = { path = "/grpc.health.v1.Health/Watch" }
  [group.streams]
  max = 1
`+noResources+catchAll))
	cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	hc := healthpb.NewHealthClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	if resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "svc"}); err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check through sluice: %v %v", resp, err)
	}
	first, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Recv(); err != nil {
		t.Fatalf("first Watch: %v", err)
	}
	// The first Watch holds the one stream slot before the second opens:
	// a call becomes a stream only once it outlives its headers by 100 ms,
	// and on a busy machine the second's promotion could run first.
	admin := "http://" + str(s.log.wait(t, "the admin line", message("admin API, metrics and dashboard"))["addr"])
	awaitGroup(t, client(t), admin, "watch", "the first Watch as a stream", func(g api.Group) bool { return g.Streams.Open == 1 })
	second, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	// A request until it outlives its headers: its first message comes,
	// then the refusal, in its trailers.
	if _, err := second.Recv(); err != nil {
		t.Fatalf("second Watch's first message: %v", err)
	}
	_, err = second.Recv()
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("second Watch: %v, want Unavailable", err)
	}
	tr := second.Trailer()
	if got := tr.Get("sluice-reason"); len(got) != 1 || got[0] != "streams" {
		t.Errorf("sluice-reason %q", got)
	}
	if ms, _ := strconv.Atoi(strings.Join(tr.Get("grpc-retry-pushback-ms"), "")); ms < 1000 {
		t.Errorf("grpc-retry-pushback-ms %q", tr.Get("grpc-retry-pushback-ms"))
	}
	var trailer metadata.MD
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "svc"}, grpc.Trailer(&trailer)); err != nil {
		t.Errorf("Check while Watch is shed: %v", err)
	}
}

// TestE2EStateSurvivesRestart: drops make AIMD lower the limit; the state
// file written at exit holds it, and the next process starts from it.
func TestE2EStateSurvivesRestart(t *testing.T) {
	up := startUpstream(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	path := writeConfig(t, dir, up.url, strings.Replace(prelude, "[control]", `
  [upstream.circuit]
  failure_ratio = 0.0
  consecutive_failures = 0
[control]
state_file = "`+state+`"`, 1)+`
[[group]]
name = "app"
  [group.concurrency]
  law = "aimd"
  initial = 40
  min = 1
  max = 100
  backoff = 0.5
`+noResources)
	s := startSluice(t, path)
	s.log.wait(t, "the group at its initial limit", message("group", "name", "app", "limit", "40"))
	c := client(t)
	// Failures (500) are drops: AIMD halves the limit at the next tick.
	lowered := message("limit changed", "group", "app")
	deadline := time.Now().Add(waitLimit)
	for {
		if r := do(c, "GET", s.url("/fail")); r.status != 500 {
			t.Fatalf("/fail: %d %v", r.status, r.err)
		}
		if rec, _, _, _ := s.log.find(0, lowered); rec != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the limit never changed")
		}
	}
	s.signal(t, syscall.SIGTERM)
	if code := s.wait(t); code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	learned := readState(t, state).Groups["app"].Limit
	if learned >= 40 || learned < 1 {
		t.Fatalf("learned limit %d, want below the initial 40", learned)
	}

	s2 := startSluice(t, path)
	s2.log.wait(t, "the restore", message("limits restored from the state file", "groups", "1"))
	s2.log.wait(t, "the group at its learned limit", message("group", "name", "app", "limit", strconv.Itoa(learned)))
	if r := do(c, "GET", s2.url("/")); r.status != http.StatusOK {
		t.Errorf("after the restart: %d", r.status)
	}
}
