package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/permit/permitclient"
)

// The front-ends' end-to-end tests: the real binary with [permit] and
// [rls], clients in other processes (this test binary, run again as a
// permit client: see permitClientMain) and gRPC clients built from
// go-control-plane's generated stubs, as Envoy's are.

// Environment of a permit client process (permitClientMain).
const (
	permitClientAddr      = "SLUICE_TEST_PERMIT_ADDR"      // the permit service; set: run as a client
	permitClientTransport = "SLUICE_TEST_PERMIT_TRANSPORT" // "grpc" or "http"
	permitClientHold      = "SLUICE_TEST_PERMIT_HOLD"      // N: take N permits of "leased", never release them
)

// permitClientRounds is how many permits of "jobs" a client process asks
// for, one after the other.
const permitClientRounds = 150

// permitClientMain is the test binary run as a permit client process. It
// asks the permit service for permits of group "jobs" and writes one line
// per event to stdout: "+" once granted, "-" just before the release,
// "refused REASON STATUS" for a refusal. Every client process writes to the
// same pipe, so the lines come out in the order they happened: a "-" is
// written before its release, which comes before the grant to the next
// holder, which comes before that holder's "+". With permitClientHold it
// takes that many permits of "leased", writes "holding", and waits to be
// killed.
func permitClientMain() int {
	o := permitclient.Options{}
	if os.Getenv(permitClientTransport) == "http" {
		o.Transport = permitclient.HTTP
	}
	c, err := permitclient.New(os.Getenv(permitClientAddr), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	if n, _ := strconv.Atoi(os.Getenv(permitClientHold)); n > 0 {
		for range n {
			if _, err := c.Acquire(ctx, permitclient.Request{Group: "leased"}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		fmt.Println("holding")
		select {}
	}
	for range permitClientRounds {
		p, err := c.Acquire(ctx, permitclient.Request{Group: "jobs"})
		var refused *permitclient.RefusedError
		switch {
		case errors.As(err, &refused):
			fmt.Printf("refused %s %d\n", refused.Reason, refused.Status)
			continue
		case err != nil:
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("+")
		time.Sleep(200 * time.Microsecond) // the job: the permit is held while it runs
		fmt.Println("-")
		if err := p.Done(permitclient.Success); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// permitConfig has a group "jobs" of 3 slots and no queue, and a group
// "leased" of 2 slots with a queue (no CoDel), whose permits have a lease
// of 300ms; the permit service on a unix socket in dir, the admin API on
// loopback.
const permitConfig = `
[upstream]
url = "UPSTREAM"
[server]
listen = "127.0.0.1:0"
[admin]
listen = "127.0.0.1:0"
[[group]]
name = "jobs"
match = { path_prefix = "/jobs/" }
  [group.concurrency]
  law = "fixed"
  limit = 3
  [group.queue]
  max = 0
[[group]]
name = "leased"
match = { path_prefix = "/leased/" }
  [group.concurrency]
  law = "fixed"
  limit = 2
  [group.queue]
  max = 10
  max_wait = "1m"
  codel_target = "0s"
[permit]
listen = "unix://DIR/permit.sock"
  [[permit.group]]
  name = "leased"
  lease = "300ms"
`

// frontDaemon is a running sluice with front-ends: where they listen.
type frontDaemon struct {
	*sluice
	config       string // the config file
	admin, front string // the admin API's URL, the front-end's address
}

// startFronts starts sluice with config (UPSTREAM and DIR filled in; DIR
// holds rls-token, rlsToken) and waits for the front-end's start line,
// msg.
func startFronts(t *testing.T, config, msg string) *frontDaemon {
	t.Helper()
	up := startUpstream(t)
	dir, err := os.MkdirTemp("", "sl") // short: a unix socket's path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "rls-token"), []byte(rlsToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, dir, up.url, strings.ReplaceAll(config, "DIR", dir))
	s := startSluice(t, path)
	d := &frontDaemon{sluice: s, config: path}
	d.admin = "http://" + str(s.log.wait(t, "the admin line", message("admin API, metrics and dashboard"))["addr"])
	rec := s.log.wait(t, "the front-end's line", message(msg))
	d.front = str(rec["addr"])
	if str(rec["network"]) == "unix" {
		d.front = "unix://" + d.front
	}
	return d
}

// status returns the front-end name of GET /v1/status.
func (d *frontDaemon) status(t *testing.T, name string) (listen string, token bool, counts map[string]uint64) {
	t.Helper()
	var st struct {
		Fronts []struct {
			Name   string            `json:"name"`
			Listen string            `json:"listen"`
			Token  bool              `json:"token"`
			Counts map[string]uint64 `json:"counts"`
		} `json:"fronts"`
	}
	if err := json.Unmarshal([]byte(httpGet(t, d.admin+"/v1/status")), &st); err != nil {
		t.Fatal(err)
	}
	for _, f := range st.Fronts {
		if f.Name == name {
			return f.Listen, f.Token, f.Counts
		}
	}
	t.Fatalf("/v1/status has no front %q: %+v", name, st.Fronts)
	return "", false, nil
}

// httpGet returns the body of a GET that answers 200.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// metric returns the value of the sample named series (name{labels} as
// the text format writes it) in /metrics, or -1 when there is none.
func (d *frontDaemon) metric(t *testing.T, series string) float64 {
	t.Helper()
	for line := range strings.Lines(httpGet(t, d.admin+"/metrics")) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

// TestPermitLimitAcrossClientProcesses runs permit clients in five
// processes, over both transports, against one group of 3 slots: at no
// point do more than 3 hold a permit, and every refusal says why.
func TestPermitLimitAcrossClientProcesses(t *testing.T) {
	d := startFronts(t, permitConfig, "permit service (HTTP/JSON and gRPC)")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	const procs = 5
	cmds := make([]*exec.Cmd, procs)
	stderrs := make([]bytes.Buffer, procs)
	for i := range cmds {
		tr := []string{"grpc", "http"}[i%2]
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), permitClientAddr+"="+d.front, permitClientTransport+"="+tr)
		cmd.Stdout, cmd.Stderr = pw, &stderrs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	pw.Close() // the clients hold the write end: EOF once they all exit

	held, peak, granted, refused := 0, 0, 0, map[string]int{}
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "+":
			held++
			granted++
			peak = max(peak, held)
			if held > 3 {
				t.Errorf("%d permits held at once, over the limit of 3", held)
			}
		case line == "-":
			held--
		case strings.HasPrefix(line, "refused "):
			refused[strings.TrimPrefix(line, "refused ")]++
		default:
			t.Errorf("client line %q", line)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("client %d: %v\n%s", i, err, stderrs[i].String())
		}
	}
	total := granted
	for _, n := range refused {
		total += n
	}
	if total != procs*permitClientRounds || peak < 1 || held != 0 {
		t.Fatalf("%d granted, refusals %v (%d in all, want %d), peak %d, %d still held", granted, refused, total, procs*permitClientRounds, peak, held)
	}
	for why := range refused {
		if why != "concurrency 503" {
			t.Errorf("refusal %q: want reason concurrency, status 503 (no queue)", why)
		}
	}
	t.Logf("%d granted, refused %v, at most %d at once", granted, refused, peak)

	// The daemon counted the same, in /v1/status and the metrics.
	listen, token, counts := d.status(t, "permit")
	if listen != d.front || token || counts["granted"] != uint64(granted) || counts["held"] != 0 || counts["released"] != uint64(granted) {
		t.Fatalf("/v1/status permit: %s token=%v %v; want %s, no token, %d granted and released, none held", listen, token, counts, d.front, granted)
	}
	if v := d.metric(t, `sluice_front_decisions_total{decision="granted",front="permit",group="jobs"}`); v != float64(granted) {
		t.Fatalf("sluice_front_decisions_total granted = %v, want %d", v, granted)
	}
}

// TestPermitRefusalAndKilledClient: a refusal carries the proxy's reason,
// status and Retry-After; a client process killed with SIGKILL while it
// holds permits gets its slots taken back when their leases (300ms)
// expire, counted as expired; and sluice status shows the service.
func TestPermitRefusalAndKilledClient(t *testing.T) {
	d := startFronts(t, permitConfig, "permit service (HTTP/JSON and gRPC)")
	c, err := permitclient.New(d.front, permitclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	var ps []permitclient.Permit
	for range 3 {
		p, err := c.Acquire(ctx, permitclient.Request{Group: "jobs"})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	_, err = c.Acquire(ctx, permitclient.Request{Group: "jobs"})
	var refused *permitclient.RefusedError
	if !errors.As(err, &refused) || refused.Reason != "concurrency" || refused.Status != 503 || refused.RetryAfter <= 0 || refused.Group != "jobs" {
		t.Fatalf("fourth permit of 3: %v, want refused: concurrency, 503, a Retry-After", err)
	}
	for _, p := range ps {
		if err := p.Done(permitclient.Success); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Acquire(ctx, permitclient.Request{Group: "nope"}); err == nil || errors.As(err, &refused) {
		t.Fatalf("a permit of no group: %v, want an error that is not a refusal", err)
	}

	// A client process takes both slots of "leased" and is killed.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), permitClientAddr+"="+d.front, permitClientHold+"=2")
	out, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "holding\n" {
		cmd.Process.Kill()
		t.Fatalf("holding client: %q %v\n%s", line, err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// Two permits, the second asked while the first is held, each waiting
	// in the queue: both slots come back when the dead client's leases
	// expire.
	wctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	var ours []permitclient.Permit
	for range 2 {
		p, err := c.Acquire(wctx, permitclient.Request{Group: "leased", Wait: waitLimit})
		if err != nil {
			t.Fatalf("a permit of leased after its holder died: %v", err)
		}
		if p.Lease != 300*time.Millisecond {
			t.Errorf("lease %v, want leased's 300ms", p.Lease)
		}
		ours = append(ours, p)
	}
	// Our own two permits are held or, on a machine slow enough to let
	// 300 ms pass, expired too: the accounts are judged exactly either way.
	_, _, counts := d.status(t, "permit")
	if counts["expired"] < 2 || counts["expired"]+counts["held"] != 4 {
		t.Fatalf("/v1/status permit counts %v, want the dead client's 2 expired and ours held or expired (4 in all)", counts)
	}
	expired := 2
	for _, p := range ours {
		switch err := p.Done(permitclient.Success); {
		case errors.Is(err, permitclient.ErrExpired):
			expired++
		case err != nil:
			t.Fatal(err)
		}
	}
	_, _, counts = d.status(t, "permit")
	if counts["expired"] != uint64(expired) || counts["held"] != 0 {
		t.Fatalf("/v1/status permit counts %v after our releases, want %d expired, 0 held", counts, expired)
	}
	if v := d.metric(t, `sluice_permit_releases_total{group="leased",result="expired"}`); v != float64(expired) {
		t.Fatalf("sluice_permit_releases_total expired = %v, want %d", v, expired)
	}

	st, err := exec.Command(binary(t), "status", "-admin", d.admin).CombinedOutput()
	if err != nil || !strings.Contains(string(st), "permit "+d.front+" · no token (socket mode) · ") || !strings.Contains(string(st), fmt.Sprintf("expired %d", expired)) {
		t.Fatalf("sluice status: %v\n%s", err, st)
	}
}

// rlsConfig maps domain "edge": remote_address to a per-client bucket of
// 3 (refilled at one token per 8000 s: none within a test; Envoy sees 3
// per MINUTE x 400),
// on TCP with a token. generic_key=checkout maps nowhere until a reload.
const rlsConfig = `
[upstream]
url = "UPSTREAM"
[server]
listen = "127.0.0.1:0"
[admin]
listen = "127.0.0.1:0"
[[group]]
name = "per-client"
key = "ip"
match = { path_prefix = "/per-client/" }
  [group.rate]
  rate = 0.000125
  burst = 3
[[group]]
name = "checkout"
match = { path_prefix = "/checkout/" }
  [group.rate]
  rate = 0.000125
  burst = 5
[rls]
listen = "127.0.0.1:0"
token_file = "DIR/rls-token"
  [[rls.domain]]
  name = "edge"
    [[rls.domain.descriptor]]
    entries = [{ key = "remote_address" }]
    group = "per-client"
`

const rlsToken = "0123456789abcdef0123456789abcdef"

// bearer sends the rate limit service's token with every call, as Envoy's
// grpc_service.initial_metadata does.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return false }

func rlsRequest(domain string, hits uint32, kv ...string) *rlsv3.RateLimitRequest {
	d := &rlv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return &rlsv3.RateLimitRequest{Domain: domain, HitsAddend: hits, Descriptors: []*rlv3.RateLimitDescriptor{d}}
}

// TestRLSWithEnvoysStubs sends RateLimitRequests as Envoy does (domain,
// descriptors, hits_addend) with go-control-plane's generated client: the
// quota is kept exactly, an unknown domain or descriptor is OK with no
// limit, a malformed request is a gRPC status, a call without the token is
// refused, and a SIGHUP reload maps a new descriptor.
func TestRLSWithEnvoysStubs(t *testing.T) {
	d := startFronts(t, rlsConfig, "Envoy rate limit service (rate quotas only)")
	dial := func(creds ...grpc.DialOption) rlsv3.RateLimitServiceClient {
		conn, err := grpc.NewClient("passthrough:///"+d.front, append(creds, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return rlsv3.NewRateLimitServiceClient(conn)
	}
	c := dial(grpc.WithPerRPCCredentials(bearer(rlsToken)))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ask := func(req *rlsv3.RateLimitRequest) *rlsv3.RateLimitResponse {
		t.Helper()
		resp, err := c.ShouldRateLimit(ctx, req)
		if err != nil {
			t.Fatalf("ShouldRateLimit(%v): %v", req, err)
		}
		return resp
	}

	if _, err := dial().ShouldRateLimit(ctx, rlsRequest("edge", 0, "remote_address", "198.51.100.7")); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a call without the token: %v, want Unauthenticated", err)
	}

	// A bucket of 3 per address: OK, OK, OK, then OVER_LIMIT.
	for i, want := range []uint32{2, 1, 0} {
		resp := ask(rlsRequest("edge", 0, "remote_address", "198.51.100.7"))
		st := resp.GetStatuses()[0]
		if lim := st.GetCurrentLimit(); resp.GetOverallCode() != rlsv3.RateLimitResponse_OK || st.GetLimitRemaining() != want ||
			lim.GetRequestsPerUnit() != 3 || lim.GetUnit() != rlsv3.RateLimitResponse_RateLimit_MINUTE || lim.GetUnitMultiplier().GetValue() != 400 {
			t.Fatalf("call %d: %v, want OK with %d remaining of 3 per MINUTE x 400", i+1, resp, want)
		}
	}
	resp := ask(rlsRequest("edge", 0, "remote_address", "198.51.100.7"))
	if resp.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT || resp.GetStatuses()[0].GetDurationUntilReset().AsDuration() <= 0 {
		t.Fatalf("fourth call: %v, want OVER_LIMIT with a duration until reset", resp)
	}
	var names []string
	for _, h := range resp.GetResponseHeadersToAdd() {
		names = append(names, h.GetKey())
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "RateLimit-Policy") || !strings.Contains(got, "Retry-After") {
		t.Fatalf("response headers %s: want RateLimit-Policy and Retry-After", got)
	}
	// Another address has its own bucket; hits_addend is the cost.
	if resp := ask(rlsRequest("edge", 3, "remote_address", "198.51.100.8")); resp.GetOverallCode() != rlsv3.RateLimitResponse_OK ||
		resp.GetStatuses()[0].GetLimitRemaining() != 0 {
		t.Fatalf("hits_addend 3 of 3: %v, want OK with none remaining", resp)
	}
	if resp := ask(rlsRequest("edge", 1, "remote_address", "198.51.100.8")); resp.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("a hit after hits_addend 3 of 3: %v, want OVER_LIMIT", resp)
	}

	// Unknown domain, unmapped descriptor: OK with no limit.
	for _, req := range []*rlsv3.RateLimitRequest{rlsRequest("elsewhere", 0, "remote_address", "198.51.100.7"),
		rlsRequest("edge", 0, "generic_key", "checkout")} {
		resp := ask(req)
		if resp.GetOverallCode() != rlsv3.RateLimitResponse_OK || resp.GetStatuses()[0].GetCurrentLimit() != nil {
			t.Fatalf("%v: %v, want OK with no limit", req, resp)
		}
	}
	// Malformed: a gRPC status, and the service goes on.
	for _, req := range []*rlsv3.RateLimitRequest{rlsRequest("", 0, "remote_address", "x"), {Domain: "edge"},
		rlsRequest("edge", 0), rlsRequest("edge", 0, "", "x")} {
		if _, err := c.ShouldRateLimit(ctx, req); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("%v: %v, want InvalidArgument", req, err)
		}
	}

	// A reload maps generic_key=checkout onto the checkout group and reads
	// a new token.
	const newToken = "fedcba9876543210fedcba9876543210"
	if err := os.WriteFile(filepath.Join(filepath.Dir(d.config), "rls-token"), []byte(newToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(d.config)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, "    [[rls.domain.descriptor]]\n    entries = [{ key = \"generic_key\", value = \"checkout\" }]\n    group = \"checkout\"\n"...)
	if err := os.WriteFile(d.config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	d.signal(t, syscall.SIGHUP)
	d.log.wait(t, "the reload", message("config reloaded"))
	if _, err := c.ShouldRateLimit(ctx, rlsRequest("edge", 0, "generic_key", "checkout")); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("the old token after the reload: %v, want Unauthenticated", err)
	}
	c = dial(grpc.WithPerRPCCredentials(bearer(newToken)))
	if resp := ask(rlsRequest("edge", 0, "generic_key", "checkout")); resp.GetStatuses()[0].GetLimitRemaining() != 4 {
		t.Fatalf("checkout after the reload: %v, want OK with 4 of 5 remaining", resp)
	}

	listen, token, counts := d.status(t, "rls")
	if listen != d.front || !token || counts["over_limit"] != 2 || counts["invalid"] != 4 || counts["unknown_domain"] != 1 || counts["unmatched"] != 1 {
		t.Fatalf("/v1/status rls: %s token=%v %v; want 2 over limit, 4 invalid, 1 unknown domain, 1 unmatched", listen, token, counts)
	}
	if v := d.metric(t, `sluice_front_decisions_total{decision="over_limit",front="rls",group="per-client"}`); v != 2 {
		t.Fatalf("sluice_front_decisions_total over_limit = %v, want 2", v)
	}
}
