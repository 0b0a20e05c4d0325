package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/proxy/breaker"
)

func TestForwardBasics(t *testing.T) {
	seen := make(chan *http.Request, 1)
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Clone(context.Background())
		w.Header().Set("X-Up", "1")
		w.Header().Set("Connection", "X-Hop-Resp")
		w.Header().Set("X-Hop-Resp", "secret")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "created "+r.URL.RequestURI())
	}), false)
	adm := newFinishes(t)
	g := testGate(t, roomyGroup)
	_, base := startWatched(t, adm, Params{Upstream: up.URL + "/base/", Gate: g}, ServerParams{})

	req, _ := http.NewRequest("GET", base+"/items/7?q=a%20b&x=1", nil)
	req.Host = "api.example.com"
	req.Header.Set("X-Custom", "kept")
	req.Header.Set("Connection", "X-Hop")
	req.Header.Set("X-Hop", "dropped")
	req.Header.Set("Te", "trailers")
	req.Header.Set("Proxy-Authorization", "Basic Zm9vOmJhcg==")
	resp, err := newClient(t, false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	if resp.StatusCode != http.StatusCreated || string(body) != "created /base/items/7?q=a%20b&x=1" {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Up") != "1" || resp.Header.Get("X-Hop-Resp") != "" || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("response fields %v", resp.Header)
	}
	r := recv(t, seen, "the upstream request")
	if r.Host != "api.example.com" {
		t.Errorf("upstream saw Host %q, want the client's", r.Host)
	}
	if r.Header.Get("X-Custom") != "kept" || r.Header.Get("X-Hop") != "" || r.Header.Get("Te") != "" || r.Header.Get("Proxy-Authorization") != "" {
		t.Errorf("upstream fields %v", r.Header)
	}
	if r.Proto != "HTTP/1.1" {
		t.Errorf("upstream proto %s", r.Proto)
	}
	f := adm.outcome(t)
	if f.outcome != gate.Success || f.latency <= 0 {
		t.Errorf("finish %+v, want a success with a latency", f)
	}
	adm.noMoreFinishes(t)
	// The gate got it: the slot is free and the latency is its sample.
	st := groupStatus(t, g, "all")
	if st.InFlight != 0 || st.Completed[gate.Success] != 1 || st.Latency.Successes != 1 ||
		st.Latency.Max < f.latency*99/100 || st.Latency.Max > f.latency*101/100 {
		t.Errorf("gate: %d in flight, %d successes, latency %+v; want the exchange's %v", st.InFlight, st.Completed[gate.Success], st.Latency, f.latency)
	}
}

// TestForwardedHeaders: the forwarding fields of a peer that is not trusted are
// replaced, a trusted peer's are extended or kept; over HTTP/1.1 and h2c, with
// the trusted set given to a gateless proxy or read from the gate's config.
func TestForwardedHeaders(t *testing.T) {
	type got struct{ xff, proto, host, fhost, fwd string }
	seen := make(chan got, 1)
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- got{strings.Join(r.Header["X-Forwarded-For"], "|"), r.Header.Get("X-Forwarded-Proto"), r.Host,
			r.Header.Get("X-Forwarded-Host"), strings.Join(r.Header["Forwarded"], "|")}
	}), false)
	loopback, err := gate.ParseTrustedProxies([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	elsewhere, _ := gate.ParseTrustedProxies([]string{"10.0.0.0/8"})
	gateTrusting := testGate(t, "[server]\ntrusted_proxies = [\"127.0.0.1\"]\n"+roomyGroup)
	spoof := map[string]string{"X-Forwarded-For": "6.6.6.6", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil", "Forwarded": "for=6.6.6.6"}
	chain := map[string]string{"X-Forwarded-For": "203.0.113.9, 10.0.0.2", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "public.example", "Forwarded": "for=203.0.113.9;proto=https"}
	for _, tc := range []struct {
		name   string
		params Params
		h2c    bool
		in     map[string]string
		want   got
	}{
		{"nothing incoming", Params{}, false, nil, got{"127.0.0.1", "http", "front.example", "", ""}},
		{"untrusted peer: replaced", Params{}, false, spoof, got{"127.0.0.1", "http", "front.example", "", ""}},
		{"another peer trusted: replaced", Params{TrustedProxies: elsewhere}, false, spoof, got{"127.0.0.1", "http", "front.example", "", ""}},
		{"trusted peer: extended and kept", Params{TrustedProxies: loopback}, false, chain,
			got{"203.0.113.9, 10.0.0.2, 127.0.0.1", "https", "front.example", "public.example", "for=203.0.113.9;proto=https"}},
		{"trusted by the gate's config", Params{Gate: gateTrusting}, false, chain,
			got{"203.0.113.9, 10.0.0.2, 127.0.0.1", "https", "front.example", "public.example", "for=203.0.113.9;proto=https"}},
		{"host rewrite", Params{Host: "internal.svc"}, false, nil, got{"127.0.0.1", "http", "internal.svc", "front.example", ""}},
		{"host rewrite, untrusted X-Forwarded-Host", Params{Host: "internal.svc"}, false, spoof, got{"127.0.0.1", "http", "internal.svc", "front.example", ""}},
		{"h2c untrusted", Params{Protocol: ProtocolH2C}, true, spoof, got{"127.0.0.1", "http", "front.example", "", ""}},
		{"h2c trusted", Params{Protocol: ProtocolH2C, TrustedProxies: loopback}, true, chain,
			got{"203.0.113.9, 10.0.0.2, 127.0.0.1", "https", "front.example", "public.example", "for=203.0.113.9;proto=https"}},
		{"h2c untrusted with host", Params{Protocol: ProtocolH2C, Host: "internal.svc"}, true, map[string]string{"X-Forwarded-For": "6.6.6.6"},
			got{"127.0.0.1", "http", "internal.svc", "front.example", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upstream := up
			if tc.h2c {
				upstream = startUpstream(t, up.Config.Handler, true)
			}
			tc.params.Upstream = upstream.URL
			_, base := startProxy(t, tc.params, ServerParams{})
			req, _ := http.NewRequest("GET", base+"/", nil)
			req.Host = "front.example"
			for k, v := range tc.in {
				req.Header.Set(k, v)
			}
			resp, err := newClient(t, false).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if g := recv(t, seen, "the upstream request"); g != tc.want {
				t.Errorf("upstream saw %+v, want %+v", g, tc.want)
			}
		})
	}
}

func TestOutcomeByStatus(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		if code == 302 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(code)
	}), false)
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: up.URL}, ServerParams{})
	c := newClient(t, false)
	for code, want := range map[int]gate.Outcome{200: gate.Success, 204: gate.Success, 302: gate.Success, 304: gate.Success,
		400: gate.Ignored, 404: gate.Ignored, 429: gate.Ignored, 500: gate.Dropped, 502: gate.Dropped, 503: gate.Dropped} {
		resp, err := c.Get(fmt.Sprintf("%s/?code=%d", base, code))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("status %d, want %d passed through", resp.StatusCode, code)
		}
		if f := adm.outcome(t); f.outcome != want {
			t.Errorf("status %d: outcome %v, want %v", code, f.outcome, want)
		}
	}
}

func TestUpstreamDownFailsFastAndOpensCircuit(t *testing.T) {
	adm := newFinishes(t)
	g := testGate(t, roomyGroup)
	px, base := startWatched(t, adm, Params{Upstream: "http://" + closedAddr(t), Gate: g,
		Breaker: breaker.Params{ConsecutiveFailures: 3, Cooldown: time.Hour}}, ServerParams{})
	c := newClient(t, false)
	for i := 0; i < 3; i++ {
		resp, err := c.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Sluice-Error") != "connect" {
			t.Fatalf("request %d: status %d, Sluice-Error %q, body %q", i, resp.StatusCode, resp.Header.Get("Sluice-Error"), body)
		}
		if f := adm.outcome(t); f.outcome != gate.Dropped {
			t.Fatalf("request %d: outcome %v, want dropped", i, f.outcome)
		}
	}
	if px.Breaker().State() != breaker.Open {
		t.Fatalf("breaker %v after 3 connection failures, want open", px.Breaker().State())
	}
	resp, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Sluice-Reason") != "circuit_open" || ra < 3599 {
		t.Fatalf("status %d reason %q Retry-After %q; want a 503 circuit_open for the cooldown", resp.StatusCode, resp.Header.Get("Sluice-Reason"), resp.Header.Get("Retry-After"))
	}
	adm.noMoreFinishes(t)
	// The gate saw three admitted requests fail, and counted the open
	// circuit's answer as a rejection of the group: an open circuit answers
	// before admission, so nothing holds a slot.
	st := groupStatus(t, g, "all")
	if st.Completed[gate.Dropped] != 3 || st.Rejected[adaptive.RejectCircuitOpen] != 1 || st.InFlight != 0 || st.Arrived != 4 {
		t.Errorf("gate: %d dropped, %d circuit_open, %d in flight, %d arrived; want 3, 1, 0, 4",
			st.Completed[gate.Dropped], st.Rejected[adaptive.RejectCircuitOpen], st.InFlight, st.Arrived)
	}
	if ps := px.Stats(); ps.ConnectErrors != 3 || ps.CircuitRejected != 1 {
		t.Errorf("stats %+v", ps)
	}
}

// TestCircuitOpenWithoutGate: with no gate, an open circuit still answers 503
// circuit_open with the cooldown as Retry-After.
func TestCircuitOpenWithoutGate(t *testing.T) {
	px, base := startProxy(t, Params{Upstream: "http://" + closedAddr(t),
		Breaker: breaker.Params{ConsecutiveFailures: 1, Cooldown: time.Minute}}, ServerParams{})
	c := newClient(t, false)
	for i, want := range []int{http.StatusBadGateway, http.StatusServiceUnavailable} {
		resp, err := c.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("request %d: status %d, want %d", i, resp.StatusCode, want)
		}
		if want == http.StatusServiceUnavailable {
			ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			if resp.Header.Get("Sluice-Reason") != "circuit_open" || ra < 59 || ra > 90 {
				t.Errorf("reason %q Retry-After %q", resp.Header.Get("Sluice-Reason"), resp.Header.Get("Retry-After"))
			}
		}
	}
	if px.Breaker().State() != breaker.Open {
		t.Errorf("breaker %v, want open", px.Breaker().State())
	}
}

func TestUpstreamTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}), false)
	adm := newFinishes(t)
	px, base := startWatched(t, adm, Params{Upstream: up.URL, UpstreamTimeout: 100 * time.Millisecond}, ServerParams{})
	resp, err := newClient(t, false).Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout || resp.Header.Get("Sluice-Error") != "timeout" {
		t.Fatalf("status %d Sluice-Error %q, want 504 timeout", resp.StatusCode, resp.Header.Get("Sluice-Error"))
	}
	if f := adm.outcome(t); f.outcome != gate.Dropped {
		t.Errorf("outcome %v, want dropped", f.outcome)
	}
	if px.Stats().Timeouts != 1 {
		t.Errorf("stats %+v", px.Stats())
	}
}

// rawUpstream serves each connection with fn.
func rawUpstream(t *testing.T, fn func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fn(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// readHead reads a request head from br, returning false at EOF.
func readReqHead(br *bufio.Reader) bool {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return false
		}
		if line == "\r\n" {
			return true
		}
	}
}

func TestUpstreamProtocolErrors(t *testing.T) {
	for _, tc := range []struct {
		name, response string
		status         int
		class          string
		cut            bool // the head went out; the body is cut
	}{
		{"garbage", "SSH-2.0-OpenSSH\r\n\r\n", 502, "protocol", false},
		{"closed before answering", "", 502, "reset", false},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 200, "reset", true},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 200, "protocol", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
				if readReqHead(br) {
					io.WriteString(c, tc.response)
				}
			})
			adm := newFinishes(t)
			px, base := startWatched(t, adm, Params{Upstream: up}, ServerParams{})
			resp, err := newClient(t, false).Get(base + "/")
			if err != nil {
				if !tc.cut {
					t.Fatal(err)
				}
				// The head never left the proxy's buffer: the client sees the
				// connection end instead of a response. Still a visible failure.
				if f := adm.outcome(t); f.outcome != gate.Dropped {
					t.Errorf("outcome %v, want dropped", f.outcome)
				}
				return
			}
			_, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.cut && rerr == nil {
				t.Error("a cut response reached the client as complete")
			}
			if !tc.cut && resp.Header.Get("Sluice-Error") != tc.class {
				t.Errorf("Sluice-Error %q, want %q", resp.Header.Get("Sluice-Error"), tc.class)
			}
			if f := adm.outcome(t); f.outcome != gate.Dropped {
				t.Errorf("outcome %v, want dropped", f.outcome)
			}
			st := px.Stats()
			if n := map[string]uint64{"protocol": st.ProtocolErrors, "reset": st.ResetErrors}[tc.class]; n != 1 {
				t.Errorf("stats %+v, want one %s error", st, tc.class)
			}
		})
	}
}

// TestClientCancelFinishesUpstreamExchange: a client that cancels a request
// the upstream is still working on (over HTTP/1, its connection closed; over
// HTTP/2, its stream reset) leaves the upstream exchange to finish: the
// upstream is not told (its request's context lives on), its answer is read
// and dropped, and the exchange finishes as that answer says, holding its
// slot until then (see h1.Conn.ClientGone; TestAbandonedRequestKeepsItsSlot
// judges the limit).
func TestClientCancelFinishesUpstreamExchange(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		arrived := make(chan struct{}, 1)
		proceed := make(chan struct{})
		upstreamCtx := make(chan error, 1)
		up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			arrived <- struct{}{}
			<-proceed
			upstreamCtx <- r.Context().Err()
			io.WriteString(w, "an answer nobody waits for")
		}), false)
		adm := newFinishes(t)
		px, base := startWatched(t, adm, Params{Upstream: up.URL}, ServerParams{})
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/slow", nil)
		errc := make(chan error, 1)
		go func() {
			resp, err := newClient(t, h2).Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		recv(t, arrived, "the request at the upstream")
		cancel()
		if err := recv(t, errc, "the client's error"); err == nil {
			t.Fatalf("h2 %v: the cancelled request succeeded", h2)
		}
		waitFor(t, "the proxy seeing the client gone", func() bool { return px.Stats().AbandonedInFlight == 1 })
		close(proceed)
		if err := recv(t, upstreamCtx, "the upstream's answer"); err != nil {
			t.Errorf("h2 %v: the upstream's request was cancelled (%v): its connection was cut", h2, err)
		}
		if f := adm.outcome(t); f.outcome != gate.Success {
			t.Errorf("h2 %v: outcome %v, want success (the upstream answered)", h2, f.outcome)
		}
		if st := px.Stats(); st.Abandoned != 1 || st.AbandonedInFlight != 0 {
			t.Errorf("h2 %v: %d abandoned, %d in flight; want 1, 0", h2, st.Abandoned, st.AbandonedInFlight)
		}
	}
}

// rejectGroups: per tenant, one request per 100 s; everything else one at a
// time, with a queue of one that waits at most 50 ms.
const rejectGroups = `
[[group]]
name = "tenant"
match = { path_prefix = "/rate" }
key = "header:X-Tenant"
  [group.rate]
  rate = 0.01
[[group]]
name = "one"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 1
  max_wait = "50ms"
  codel_target = "0s"
`

// TestRejections runs requests into a real gate's limits and checks what the
// client gets: 429 with the RateLimit fields for a quota, 503 for overload,
// and no request reaching the upstream.
func TestRejections(t *testing.T) {
	hold := make(chan struct{})
	entered := make(chan struct{}, 1)
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-hold
		}
	}), false)
	g := testGate(t, rejectGroups)
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: up.URL, Gate: g}, ServerParams{})
	c := newClient(t, false)
	do := func(method, path, tenant string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader("a body that is never read"))
		req.Header.Set("X-Tenant", tenant)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}

	if resp := do("POST", "/rate", "a"); resp.StatusCode != 200 {
		t.Fatalf("tenant a's first request: %d", resp.StatusCode)
	}
	adm.outcome(t)
	resp := do("POST", "/rate", "a")
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || ra < 100 || ra > 150 || resp.Header.Get("Sluice-Reason") != "rate" ||
		resp.Header.Get("RateLimit-Policy") != `"tenant";q=1;w=100` || resp.Header.Get("RateLimit") != `"tenant";r=0;t=100` {
		t.Errorf("rate rejection: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := do("POST", "/rate", "b"); resp.StatusCode != 200 {
		t.Fatalf("tenant b has a quota of its own: %d", resp.StatusCode)
	}
	adm.outcome(t)

	// One request holds the only slot; the next waits 50 ms in the queue and
	// gives up.
	held := make(chan *http.Response, 1)
	go func() {
		resp, err := c.Get(base + "/hold")
		if err == nil {
			resp.Body.Close()
		}
		held <- resp
	}()
	recv(t, entered, "the held request at the upstream")
	resp = do("GET", "/", "")
	ra, _ = strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 503 || ra < 1 || ra > 2 || resp.Header.Get("Sluice-Reason") != "queue_timeout" || resp.Header.Get("RateLimit") != "" {
		t.Errorf("overload rejection: %d %v", resp.StatusCode, resp.Header)
	}
	close(hold)
	if resp := recv(t, held, "the held response"); resp == nil || resp.StatusCode != 200 {
		t.Errorf("held request: %v", resp)
	}
	adm.outcome(t)
	adm.noMoreFinishes(t)
}

func TestRequestBodies(t *testing.T) {
	type seenReq struct {
		length  int64
		te      []string
		sum     [32]byte
		trailer string
	}
	seen := make(chan seenReq, 1)
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("upstream read: %v", err)
		}
		seen <- seenReq{r.ContentLength, r.TransferEncoding, sha256.Sum256(b), r.Trailer.Get("X-Sum")}
		fmt.Fprint(w, len(b))
	}), false)
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: up.URL}, ServerParams{})
	c := newClient(t, false)
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
	}{
		{"empty post", 0, false},
		{"small inline", 1000, false},
		{"at the inline limit", inlineBodyMax, false},
		{"streamed", 3 << 20, false},
		{"chunked", 200 << 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Repeat([]byte("0123456789abcdef"), tc.size/16+1)[:tc.size]
			var body io.Reader = bytes.NewReader(data)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length
			}
			req, _ := http.NewRequest("POST", base+"/upload", body)
			if tc.chunked {
				req.Trailer = http.Header{"X-Sum": nil}
				req.Body = &trailerSetter{ReadCloser: io.NopCloser(body), req: req, value: "abc"}
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != strconv.Itoa(tc.size) {
				t.Fatalf("upstream read %s bytes, want %d", got, tc.size)
			}
			s := recv(t, seen, "the upstream request")
			if s.sum != sha256.Sum256(data) {
				t.Error("the body changed on the way")
			}
			if tc.chunked {
				if s.length != -1 || len(s.te) != 1 || s.te[0] != "chunked" || s.trailer != "abc" {
					t.Errorf("chunked upload arrived as length %d, TE %q, trailer %q", s.length, s.te, s.trailer)
				}
			} else if s.length != int64(tc.size) {
				t.Errorf("upstream Content-Length %d, want %d", s.length, tc.size)
			}
			if f := adm.outcome(t); f.outcome != gate.Success {
				t.Errorf("outcome %v", f.outcome)
			}
		})
	}
}

// trailerSetter sets a request trailer when its body ends, as a client that
// computes a checksum while sending would.
type trailerSetter struct {
	io.ReadCloser
	req   *http.Request
	value string
}

func (b *trailerSetter) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.req.Trailer.Set("X-Sum", b.value)
	}
	return n, err
}

func TestResponseBodies(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 5<<20)
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			w.Write(big)
		case "/chunked":
			w.Header().Set("Trailer", "X-Checksum")
			for i := 0; i < 100; i++ {
				w.Write(big[:10000])
				w.(http.Flusher).Flush()
			}
			w.Header().Set("X-Checksum", "done")
		case "/head":
			w.Header().Set("Content-Length", "1234")
		}
	}), false)
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: up.URL}, ServerParams{})
	c := newClient(t, false)

	resp, err := c.Get(base + "/big")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(b, big) || resp.ContentLength != int64(len(big)) {
		t.Errorf("big: %d bytes, Content-Length %d", len(b), resp.ContentLength)
	}
	adm.outcome(t)

	resp, err = c.Get(base + "/chunked")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(b) != 1000000 || resp.Trailer.Get("X-Checksum") != "done" {
		t.Errorf("chunked: %d bytes, trailer %q", len(b), resp.Trailer.Get("X-Checksum"))
	}
	adm.outcome(t)

	resp, err = c.Head(base + "/head")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ContentLength != 1234 {
		t.Errorf("HEAD: Content-Length %d, want 1234", resp.ContentLength)
	}
	adm.outcome(t)
}

func TestEarlyHints(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "page")
	}), false)
	_, base := startProxy(t, Params{Upstream: up.URL}, ServerParams{})
	var hints []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		hints = append(hints, fmt.Sprint(code, " ", h["Link"]))
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", base+"/", nil)
	resp, err := newClient(t, false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(hints) != 1 || hints[0] != "103 [</app.css>; rel=preload]" || string(b) != "page" || resp.Header.Get("Link") != "" {
		t.Errorf("hints %q, body %q, final Link %q", hints, b, resp.Header.Get("Link"))
	}
}

func TestRetryOnStaleConnection(t *testing.T) {
	// An upstream that answers one request per connection without saying so,
	// and closes the connection when the next request arrives (as a server
	// whose idle timeout fires just then): that request fails before any
	// response and must be sent again.
	up := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if readReqHead(br) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
		readReqHead(br)
	})
	adm := newFinishes(t)
	px, base := startWatched(t, adm, Params{Upstream: up}, ServerParams{})
	c := newClient(t, false)
	for i := 0; i < 5; i++ {
		resp, err := c.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, b)
		}
		if f := adm.outcome(t); f.outcome != gate.Success {
			t.Fatalf("request %d: outcome %v", i, f.outcome)
		}
	}
	if px.Stats().Retries == 0 {
		t.Error("no retry was counted")
	}
}

func TestConnectionReuse(t *testing.T) {
	up := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for readReqHead(br) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	px, base := startProxy(t, Params{Upstream: up}, ServerParams{})
	c := newClient(t, false)
	for i := 0; i < 20; i++ {
		resp, err := c.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if st := px.Stats(); st.IdleConns != 1 || st.Retries != 0 {
		t.Errorf("stats %+v, want one idle connection reused throughout", st)
	}
}

func TestConnectRejected(t *testing.T) {
	_, base := startProxy(t, Params{Upstream: "http://" + closedAddr(t)}, ServerParams{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("CONNECT: status %d, want 405", resp.StatusCode)
	}
}
