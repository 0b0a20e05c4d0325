package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/proxy/h1"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/internal/defaults"
	"github.com/sluicehq/sluice/proxy/breaker"
)

// Protocol selects how the proxy talks to the upstream.
type Protocol uint8

const (
	// ProtocolAuto (the default) forwards gRPC (HTTP/2 with an application/grpc
	// content type) over h2c and everything else over HTTP/1.1, which every
	// upstream speaks; WebSocket upgrades pass.
	ProtocolAuto Protocol = iota
	// ProtocolHTTP1 forwards everything over HTTP/1.1 (an upstream without h2c;
	// gRPC cannot pass).
	ProtocolHTTP1
	// ProtocolH2C forwards everything over h2c (an HTTP/2-only upstream; WebSocket
	// upgrades cannot pass).
	ProtocolH2C
)

// Params configures a Proxy. A zero field means its default.
type Params struct {
	// Upstream is "http://host[:port][/prefix]" or "unix:///path/to.sock". Required.
	Upstream string
	// Gate admits each request (gate.Gate.Classify, then EnterClass) and
	// learns every admitted request's outcome and upstream latency
	// (Pass.DoneAfter, timed from Pass.Admitted to the proxy's own reading
	// at the end: the gate must run on the real clock, its default); its
	// rejections are rendered as it says (Rejection.WriteResponse), or as
	// gRPC statuses. nil admits everything.
	Gate *gate.Gate
	// Protocol selects the upstream protocol; default ProtocolAuto.
	Protocol Protocol
	// TrustedProxies are the peers whose forwarding fields are believed, for
	// a proxy without a Gate; nil trusts nobody. With a Gate, leave it nil:
	// the gate's config says (server.trusted_proxies, Gate.TrustedProxies),
	// so that the address the upstream is told and the one the gate keys
	// quotas by are the same. See forwarding in the package doc.
	TrustedProxies *gate.TrustedProxies
	// Host is the Host header sent upstream; "" passes the client's Host on (a
	// sidecar's service sees the names its clients used). When set, the client's
	// Host goes in X-Forwarded-Host.
	Host string
	// DialTimeout bounds connecting to the upstream. Default 2s: a dead upstream
	// fails fast.
	DialTimeout time.Duration
	// UpstreamTimeout is the longest the proxy waits for the upstream to make
	// progress: for the response head, and between reads of the body (as nginx's
	// proxy_read_timeout) — a slow stream that keeps sending lives on. gRPC calls
	// are bounded by their own deadline instead. Default 30s.
	UpstreamTimeout time.Duration
	// ClientTimeout is the longest a client may take to make progress: between
	// reads of its request body and for each write of the response, over
	// HTTP/1 and on each HTTP/2 stream (gRPC's included: a stream whose client
	// sends nothing for longer, its request still open, ends; raise it for
	// streams that idle longer). It replaces http.Server's ReadTimeout and
	// WriteTimeout, which would cut long uploads and streams. Default 60s.
	ClientTimeout time.Duration
	// MaxIdleConns bounds the idle HTTP/1.1 connections kept to the upstream.
	// Default 256.
	MaxIdleConns int
	// IdleConnTimeout closes connections idle for longer. Default 90s.
	IdleConnTimeout time.Duration
	// MaxResponseHeaderBytes bounds an upstream response head. Default 64 KiB.
	MaxResponseHeaderBytes int
	// OnLocalError, if set, is called with every error of this side's own
	// making (no file descriptor, buffer or local port left: EMFILE, ENFILE,
	// ENOBUFS, ENOMEM, EADDRNOTAVAIL) that failed an upstream exchange. Such
	// a request is answered 503 with Sluice-Error: local and counts as no
	// failure of the upstream (the breaker ignores it). It is called on the
	// request's goroutine, as often as that happens: rate-limit what it logs.
	OnLocalError func(error)
	// Breaker configures the upstream's circuit breaker.
	Breaker breaker.Params
	// DisableBreaker turns the circuit breaker off.
	DisableBreaker bool
}

// Defaults: those of the upstream are the daemon's [upstream] defaults too
// (package internal/defaults holds them once).
const (
	defaultDialTimeout     = defaults.DialTimeout
	defaultUpstreamTimeout = defaults.UpstreamTimeout
	defaultClientTimeout   = 60 * time.Second
	defaultMaxIdleConns    = defaults.MaxIdleConns
	defaultIdleConnTimeout = defaults.IdleConnTimeout
	defaultMaxRespHeader   = 64 << 10
)

// Validate reports every problem with p, joined; nil if p is usable.
func (p Params) Validate() error {
	var errs []error
	if _, err := parseUpstream(p.Upstream); err != nil {
		errs = append(errs, err)
	}
	if p.Protocol > ProtocolH2C {
		errs = append(errs, fmt.Errorf("proxy: unknown protocol %d", p.Protocol))
	}
	if p.Gate != nil && p.TrustedProxies != nil {
		errs = append(errs, errors.New("proxy: trusted proxies come from the gate's config (server.trusted_proxies) when there is a gate: leave TrustedProxies nil"))
	}
	if !h1.ValidFieldValue(p.Host) {
		errs = append(errs, fmt.Errorf("proxy: host %q holds a line break", p.Host))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"dial timeout", p.DialTimeout},
		{"upstream timeout", p.UpstreamTimeout},
		{"client timeout", p.ClientTimeout},
		{"idle connection timeout", p.IdleConnTimeout},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("proxy: %s must not be negative, got %v", d.name, d.v))
		}
	}
	if p.MaxIdleConns < 0 {
		errs = append(errs, fmt.Errorf("proxy: max idle connections must not be negative, got %d", p.MaxIdleConns))
	}
	if p.MaxResponseHeaderBytes < 0 {
		errs = append(errs, fmt.Errorf("proxy: max response header bytes must not be negative, got %d", p.MaxResponseHeaderBytes))
	}
	if !p.DisableBreaker {
		if err := p.Breaker.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Proxy is an HTTP reverse proxy in front of one upstream: HTTP/1.1 (with
// WebSocket and other upgrades) and h2c (gRPC), with admission by a gate.Gate,
// outcome reporting and a circuit breaker.
//
// Per request: the circuit breaker may refuse at once (503, reason circuit_open,
// counted in the request's group by gate.Gate.Reject); the gate may reject (429
// or 503, see gate.Rejection); an admitted request is forwarded with its body
// streamed both ways, and its outcome and latency go back to the gate and the
// breaker exactly once. Upstream failures become 502
// (connection refused or reset, malformed response) or 504 (timeout) with a
// Sluice-Error header naming the class; for gRPC they become UNAVAILABLE.
//
// HTTP/1.1 requests go through the proxy's own client (upstream connection pool,
// no goroutine per request unless the body streams); h2c uses net/http's
// Transport.
//
// Concurrency: a Proxy is an http.Handler safe for concurrent use.
type Proxy struct {
	up         upstream
	gate       *gate.Gate
	protocol   Protocol
	trusted    *gate.TrustedProxies // without a gate; else the gate's
	hostHeader string

	upstreamTimeout time.Duration
	clientTimeout   time.Duration
	maxHead         int

	pool         *h1.Pool
	h2           *http.Transport
	breaker      *breaker.Breaker
	stats        counters
	streams      streamSet // the streams open through the proxy (streams.go)
	onLocalError func(error)

	// observe, when set (by this package's tests), sees every finished
	// exchange's outcome and latency, after the gate and the breaker.
	observe func(gate.Outcome, time.Duration)
}

// New returns a Proxy for p, or every problem with p.
func New(p Params) (*Proxy, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	up, _ := parseUpstream(p.Upstream)
	px := &Proxy{
		up:              up,
		gate:            p.Gate,
		protocol:        p.Protocol,
		trusted:         p.TrustedProxies,
		hostHeader:      p.Host,
		upstreamTimeout: orDuration(p.UpstreamTimeout, defaultUpstreamTimeout),
		clientTimeout:   orDuration(p.ClientTimeout, defaultClientTimeout),
		maxHead:         orInt(p.MaxResponseHeaderBytes, defaultMaxRespHeader),
		onLocalError:    p.OnLocalError,
	}
	dial := orDuration(p.DialTimeout, defaultDialTimeout)
	idle := orDuration(p.IdleConnTimeout, defaultIdleConnTimeout)
	px.pool = h1.NewPool(up.network, up.addr, dial, orInt(p.MaxIdleConns, defaultMaxIdleConns), idle, px.upstreamTimeout)
	if p.Protocol != ProtocolHTTP1 {
		px.h2 = newH2Transport(up, dial, idle)
	}
	if !p.DisableBreaker {
		b, err := breaker.New(p.Breaker, time.Now())
		if err != nil {
			return nil, err
		}
		px.breaker = b
	}
	return px, nil
}

func orDuration(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Close closes the idle upstream connections. Requests in flight finish; later
// ones dial anew.
func (p *Proxy) Close() error {
	p.pool.Close()
	if p.h2 != nil {
		p.h2.CloseIdleConnections()
	}
	return nil
}

// Breaker returns the upstream's circuit breaker, or nil if it is disabled.
func (p *Proxy) Breaker() *breaker.Breaker { return p.breaker }

// exchange is one request's bookkeeping: what must be reported once it finishes.
type exchange struct {
	p           *Proxy
	ticket      breaker.Ticket
	pass        gate.Pass // the zero Pass without a gate: its Done does nothing
	done        bool
	closeClient bool // the client's HTTP/1 connection must close after the response
	start       time.Time
	path        string // the request's path, normalised and escaped, as forwarded
	cause       string // what failed, for the breaker's account of why it opened
}

// finish reports the outcome to the breaker and the gate; later calls do
// nothing.
func (x *exchange) finish(o gate.Outcome) {
	if !x.done {
		x.finishAt(o, time.Now())
	}
}

// finishAt is finish with the end instant given. The gate gets the latency
// from admission to end: the upstream exchange, queue wait excluded.
func (x *exchange) finishAt(o gate.Outcome, end time.Time) {
	if x.done {
		return
	}
	x.done = true
	if x.p.breaker != nil {
		x.p.breaker.Record(x.ticket, o, end, x.cause)
	}
	lat := end.Sub(x.start)
	x.pass.DoneAfter(o, lat)
	if x.p.observe != nil {
		x.p.observe(o, lat)
	}
}

// ServeHTTP forwards r to the upstream, or rejects it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 {
		hc, ok := p.openStream(w, r) // see resets.go
		if !ok {
			return
		}
		if hc != nil {
			defer hc.closeStream(p, r, time.Now())
		}
	}
	if r.Context().Err() != nil {
		// The client is gone already (a stream reset at once; an HTTP/1
		// connection half-closed, seen by net/http's server before the
		// handler runs): nothing to forward. Over HTTP/1 the response is
		// aborted, or the server would answer 200 with an empty body for a
		// request nothing served.
		if r.ProtoMajor == 1 {
			panic(http.ErrAbortHandler)
		}
		return
	}
	if r.Method == http.MethodConnect {
		http.Error(w, "proxy: CONNECT is not supported", http.StatusMethodNotAllowed)
		return
	}
	if class, why := requestLineFault(r); class != "" {
		w.Header()[headerError] = []string{class}
		http.Error(w, "proxy: "+why, http.StatusBadRequest)
		return
	}
	var ct string
	if v := r.Header["Content-Type"]; len(v) > 0 {
		ct = v[0]
	}
	g := grpcKindOf(ct)
	path, match, err := gate.NormalPath(gate.RequestPath(r))
	if err != nil {
		refusePath(w, err)
		return
	}
	var class gate.Class
	if p.gate != nil {
		class = p.gate.ClassifyPath(r, match)
		if hw, ok := w.(*h1Writer); ok {
			class.Key = hw.c.safeKey(class.Key) // the gate may keep it beyond the request
		}
		if err := class.Err(); err != nil { // its key header sent twice
			refuse(w, keyValue, err)
			return
		}
	}
	// The clock is read once on the way in: by the gate when there is one
	// (its admission instant, Pass.Admitted), else here; the breaker reads
	// it only when its circuit is not closed.
	var ticket breaker.Ticket
	if p.breaker != nil {
		var ok bool
		if ticket, ok = p.breaker.AllowNow(); !ok {
			p.stats.circuitRejected.Add(1)
			p.rejectCircuitOpen(w, g, ct, class, p.breaker.RetryAfter(time.Now()))
			return
		}
	}
	// The exchange begins once the request is admitted: a refusal allocates
	// nothing (see serveH2 for why an exchange may live on the heap).
	x := exchange{p: p, path: path, ticket: ticket}
	if p.gate != nil {
		pass, rej, ok := p.gate.EnterClass(r.Context(), class)
		if !ok {
			if p.breaker != nil {
				p.breaker.Ignore(ticket)
			}
			writeRejection(w, g, ct, &rej)
			return
		}
		x.pass, x.start = pass, pass.Admitted()
	} else {
		x.start = time.Now()
	}
	if p.protocol == ProtocolH2C || (p.protocol == ProtocolAuto && r.ProtoMajor == 2 && g == grpcNative) {
		p.serveH2(w, r, x, class, g, ct, match)
		return
	}
	// Whatever happens below, even a panic, the outcome is reported once; a
	// panic is reported as dropped.
	defer x.finish(gate.Dropped)
	p.ended(w, &x, class, p.forwardH1(w, r, &x, g, ct))
}

// serveH2 is ServeHTTP's forwarding over h2c, with the exchange x0 on the
// heap: a gRPC call's watch may hold it beyond (see watchCall), which would
// otherwise put every request's exchange there, refusals' included.
func (p *Proxy) serveH2(w http.ResponseWriter, r *http.Request, x0 exchange, class gate.Class, g grpcKind, ct, match string) {
	x := &x0
	defer x.finish(gate.Dropped)
	p.ended(w, x, class, p.forwardH2(w, r, x, g, ct, match))
}

// ended finishes what forwarding x began: a response cut short (abort) ends
// visibly, and a cost header charges the rate stage what the request cost.
func (p *Proxy) ended(w http.ResponseWriter, x *exchange, class gate.Class, abort bool) {
	if abort {
		// The response was cut short: make the server end it visibly (no final
		// chunk; a stream reset) instead of passing a truncated body as whole.
		x.finish(gate.Dropped)
		panic(http.ErrAbortHandler)
	}
	if h := class.CostHeader(); h != "" {
		p.correctCost(w.Header()[h], class)
	}
}

// correctCost charges the rate stage of class's group the real cost the
// upstream's response declared in its cost header (rate.cost_header: a
// whole number from 0 to 1e6; anything else is ignored and the request
// costs what it was charged), see gate.Gate.CorrectCost.
func (p *Proxy) correctCost(v []string, class gate.Class) {
	if len(v) != 1 {
		return
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v[0]), 10, 64)
	if err != nil || n < 0 || n > maxCost {
		return
	}
	p.gate.CorrectCost(class, 0, n)
}

// maxCost is the highest real cost correctCost takes (rate.cost's bound).
const maxCost = 1_000_000

// rejectCircuitOpen answers a request that the open circuit refused: 503 with
// reason circuit_open, and a Retry-After when the cooldown ends. With a gate,
// the rejection is counted in the request's group (gate.Gate.Reject), so every
// rejection shows in the same read-outs.
func (p *Proxy) rejectCircuitOpen(w http.ResponseWriter, g grpcKind, ct string, c gate.Class, retryAfter time.Duration) {
	var rej gate.Rejection
	if p.gate != nil {
		rej = p.gate.Reject(c, adaptive.RejectCircuitOpen, retryAfter)
	} else {
		rej = gate.Rejection{Reason: adaptive.RejectCircuitOpen, RetryAfter: retryAfter}
	}
	writeRejection(w, g, ct, &rej)
}

// trustedProxies returns the peers whose forwarding fields are believed: the
// gate's (its config in force), or, without a gate, Params.TrustedProxies.
func (p *Proxy) trustedProxies() *gate.TrustedProxies {
	if p.gate != nil {
		return p.gate.TrustedProxies()
	}
	return p.trusted
}

// refusePath and refuse answer a request that the gate cannot place: 400 with
// Sluice-Error reason ("path": gate.NormalPath refuses its path, ".." above
// the root, an encoded slash or a backslash, "/..;/", a control character,
// a raw "#" or space; "key": its group's key header came twice), and the
// request reaches neither the gate nor the upstream, which might read it
// another way than the groups matched it.
func refusePath(w http.ResponseWriter, err error) { refuse(w, pathValue, err) }

func refuse(w http.ResponseWriter, reason []string, err error) {
	text := "400 Bad Request (" + err.Error() + ")\n"
	h := w.Header()
	h["Content-Type"] = textPlain
	h["X-Content-Type-Options"] = noSniff
	h[headerError] = reason
	h["Content-Length"] = one(strconv.Itoa(len(text)))
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, text)
}

// The Sluice-Error values of refuse: the path, or the key header sent
// twice (gate.ErrKeyTwice).
var pathValue, keyValue = one("path"), one("key")
