package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/proxy/h1"

	"github.com/sluicehq/sluice/gate"
)

// newH2Transport returns the Transport for h2c to the upstream: net/http's own
// unencrypted HTTP/2 (Go 1.24+, prior knowledge, as gRPC speaks it), which handles
// streams, flow control and trailers. Pings find a dead connection in 45s at most
// even while a stream is idle.
func newH2Transport(up upstream, dial, idle time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}
	network, addr := up.network, up.addr
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	return &http.Transport{
		Protocols: &protos,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		DisableCompression: true,
		IdleConnTimeout:    idle,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: 30 * time.Second,
			PingTimeout:     15 * time.Second,
		},
	}
}

// forwardH2 sends r over h2c and streams the response back, flushing every read
// (gRPC messages must not wait in a buffer), with the upstream's trailers as
// trailers. It finishes x and returns true when the response was cut short.
//
// A gRPC call is bounded by its own deadline (grpc-timeout, which the upstream
// enforces); any other request must see the response head within the upstream
// timeout. Reads of the upstream's body are not timed: HTTP/2 pings detect a
// dead upstream. The client's side is held to the client timeout, as any
// HTTP/2 stream is (see clientSide).
func (p *Proxy) forwardH2(w http.ResponseWriter, r *http.Request, x *exchange, g grpcKind, ct, match string) (abort bool) {
	ctx := r.Context()
	cs := newClientSide(w, r, p.clientTimeout) // r.Body is now timed
	defer cs.h2.stop()
	// The upstream's request outlives its client (see h2Abandon).
	uctx, ab := p.watchAbandon(ctx, x.pass.HoldsSlot())
	defer ab.end()
	out := p.h2Request(r, x, match).WithContext(uctx)
	var timer *time.Timer
	if g == grpcNone {
		timer = time.AfterFunc(p.upstreamTimeout, func() { ab.cancel(errUpstreamTimeout) })
	}
	resp, err := p.h2.RoundTrip(out)
	if timer != nil {
		timer.Stop()
	}
	if err != nil {
		if berr := cs.h2.clientBodyErr(); berr != nil {
			// The upstream exchange ended for want of the client's body
			// (stalled, reset): nothing to learn about the upstream.
			x.finish(gate.Ignored)
			clientBodyFailed(w, r, berr)
			return false
		}
		if context.Cause(uctx) == errUpstreamTimeout {
			err = errUpstreamTimeout
		}
		p.fail(ctx, w, x, g, ct, err, false)
		return false
	}
	defer resp.Body.Close()
	_, trailersOnly := resp.Header[headerGRPCStatus]
	var ls *liveStream
	var call *grpcCall
	switch {
	case resp.StatusCode != http.StatusOK:
	case isEventStream(resp.Header):
		// Server-sent events: a stream from its head on (see streams.go).
		// Refused, its upstream stream is reset.
		ab.becomeStream()
		st, rej, ok := x.openStream(time.Now())
		if !ok {
			writeRejection(w, g, ct, &rej)
			return false
		}
		body := resp.Body
		ls = p.streams.add(st, func() { _ = body.Close() })
		defer p.streams.remove(ls)
	case g != grpcNone && !trailersOnly:
		// A gRPC call: a request while it ends as a unary call does, a
		// stream once it outlives its headers by grpcStreamAfter (see
		// grpcCall).
		call = p.watchCall(x, resp.Body, time.Now(), ab)
	}

	h := w.Header()
	for k, vv := range resp.Header {
		if !h1.ResponseSkipped(k) {
			h[k] = vv
		}
	}
	for k := range resp.Trailer {
		h.Add("Trailer", k)
	}
	leaveUntyped(h)
	w.WriteHeader(resp.StatusCode)
	var clErr error
	if !trailersOnly {
		// The head goes out now: a stream's first message may be long in
		// coming. A gRPC trailers-only response (its status in the head) must
		// instead leave as one HEADERS frame that ends the stream, which the
		// server sends when the handler returns without a body.
		cs.dirty = true
		clErr = cs.flush()
	}
	var upErr error
	if clErr == nil {
		upErr, clErr = relayH2Body(&cs, resp.Body)
	}
	if clErr != nil && ab.isGone() {
		// The client went away from an ordinary request: its answer is read
		// to its end and dropped, and counts as the upstream's.
		var whole bool
		if whole, upErr = drainAbandoned(resp.Body); whole {
			clErr = nil
		}
	}
	for k, vv := range resp.Trailer {
		h[http.TrailerPrefix+k] = vv
	}
	if call != nil {
		switch call.end() {
		case callStream:
			ls = call.ls
			defer p.streams.remove(ls)
		case callRefused:
			// Beyond the streams bound when it outlived its headers: its
			// upstream stream was reset, and the call ends with the
			// refusal's status.
			upErr = nil
			refuseInTrailers(h, g, ct, &call.rej)
		}
	}
	if ls != nil && ls.gone.Load() {
		// Cut by CloseStreams: the call ends with its own status, not as a
		// failure of the upstream; the client's connection had its GOAWAY.
		upErr = nil
		if g != grpcNone {
			h[http.TrailerPrefix+headerGRPCStatus] = grpcUnavailableValue
			h[http.TrailerPrefix+headerGRPCMessage] = grpcShutdownMessage
		}
	}

	ab.end() // the answer is over: no longer abandoned work, before the slot comes back
	o, abort := p.responseOutcome(ctx, x, resp.StatusCode, g, h, upErr, clErr)
	x.finish(o)
	return abort
}

// h2Request returns the request forwardH2 sends the upstream for r: its path
// as the gate matched it (match, with x.path as the raw path when they
// differ) under the upstream's prefix, its query, the outgoing fields (see
// outgoingHeader), Host rewritten when Params.Host says so, no body for an
// empty one, and the trailers that may follow (see trailersOut).
func (p *Proxy) h2Request(r *http.Request, x *exchange, match string) *http.Request {
	out := new(http.Request)
	*out = *r
	path, raw := match, ""
	if x.path != match {
		raw = x.path
	}
	if p.up.prefix != "" {
		unescaped, _ := url.PathUnescape(p.up.prefix)
		path = unescaped + path
		if raw != "" {
			raw = p.up.prefix + raw
		}
	}
	out.URL = &url.URL{Scheme: "http", Host: p.up.host, Path: path, RawPath: raw, RawQuery: r.URL.RawQuery}
	out.RequestURI = ""
	out.Close = false
	if p.hostHeader != "" {
		out.Host = p.hostHeader
	}
	out.Header = p.outgoingHeader(r)
	if r.ContentLength == 0 {
		out.Body = nil
	}
	out.Trailer, out.Body = trailersOut(r, out.Body)
	return out
}

// relayH2Body copies an h2c upstream's response body to the client, flushing
// every read, until it ends. A read that fails because the client's own body
// stalled or was reset is the client's error, not the upstream's.
func relayH2Body(cs *clientSide, body io.Reader) (upErr, clErr error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	for {
		n, err := body.Read(*bp)
		if n > 0 {
			if clErr = cs.write((*bp)[:n]); clErr == nil {
				clErr = cs.flush()
			}
			if clErr != nil {
				return nil, clErr
			}
		}
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			if cs.h2.clientBodyErr() != nil {
				return nil, err // the upstream's stream ended for want of the client's body
			}
			return err, nil
		}
	}
}

// outgoingHeader copies r's fields for an h2c request: without hop-by-hop fields
// (keeping "TE: trailers", which gRPC needs), with the forwarding fields (see
// forwardedOf).
func (p *Proxy) outgoingHeader(r *http.Request) http.Header {
	conn := r.Header["Connection"]
	out := make(http.Header, len(r.Header)+2)
	for k, vv := range r.Header {
		if k == "Te" {
			if h1.HasToken(vv, "trailers") {
				out[k] = []string{"trailers"}
			}
			continue
		}
		if requestSkipped(k) || h1.ConnectionListed(conn, k) {
			continue
		}
		out[k] = vv
	}
	f := p.forwardedOf(r)
	var xff []string
	f.forEach(func(v string) { xff = append(xff, v) })
	if len(xff) > 0 {
		out["X-Forwarded-For"] = []string{strings.Join(xff, ", ")}
	}
	out["X-Forwarded-Proto"] = []string{f.proto}
	if f.host != "" {
		out["X-Forwarded-Host"] = []string{f.host}
	}
	if len(f.forwarded) > 0 {
		out["Forwarded"] = f.forwarded
	}
	if len(f.realIP) > 0 {
		out["X-Real-Ip"] = f.realIP
	}
	return out
}
