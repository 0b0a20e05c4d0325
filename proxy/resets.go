package proxy

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Rapid reset (CVE-2023-44487): a client opens HTTP/2 streams and resets each
// at once, so that the server starts work for requests nobody waits for,
// without ever reaching the stream limit.
//
// net/http's server carries Go's fix: it runs at most MaxConcurrentStreams
// handlers of a connection at once (NewServer: 100), queues at most four times
// as many streams more, starts none for a stream reset while queued, and ends
// a connection whose queue grows beyond that with GOAWAY (ENHANCE_YOUR_CALM).
// The proxy adds:
//
//   - a reset stream costs no upstream connection: a handler whose client is
//     gone returns before the gate; no connection is dialled for a done
//     context (h1.Pool.Get); a connection its request never left goes back
//     to the pool; and one it left on gets the upstream timeout to finish
//     (holding its request's slot) and serves the next request
//     (h1.Conn.ClientGone), instead of being closed;
//   - one client connection's requests dial at most maxDials upstream
//     connections at once; a request that finds none idle waits for a dial of
//     its own or for one to come back to the pool (a burst of streams reset
//     at once would otherwise dial one each before their resets are seen);
//   - per connection (NewServer's server), as Envoy counts premature resets,
//     the streams its client ends within prematureReset of opening them: a
//     connection with more than minEarlyResets of them, more than half of its
//     streams, may forward at most maxResettingInFlight requests at once
//     (beyond, a stream is answered 503, Sluice-Error: resets), and one with
//     more than maxEarlyResets is closed.
//
// Stats counts the early resets, the streams refused and the connections
// closed (ResetStreams, ResetRefused, ResetConnections).
const (
	prematureReset       = time.Second
	minEarlyResets       = 4
	maxResettingInFlight = 2
	maxEarlyResets       = 100
	maxDials             = 4
)

// h2Client is what the proxy counts of one client connection's HTTP/2
// streams. Concurrency: safe; the connection's handlers count at once.
type h2Client struct {
	conn                     net.Conn
	streams, early, inFlight atomic.Int64
	closed                   atomic.Bool
	dials                    chan struct{} // the upstream dials its requests make at once
}

// h2ClientKey keys a connection's h2Client in its requests' contexts.
type h2ClientKey struct{}

// serverConnContext is NewServer's http.Server.ConnContext: a request finds
// its connection's guard (connContext) and stream counts.
func serverConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(connContext(ctx, c), h2ClientKey{}, &h2Client{conn: c, dials: make(chan struct{}, maxDials)})
}

// dialSlotsOf returns the dial slots of ctx's client connection (nil for a
// request not served by NewServer's server): its requests dial at most
// maxDials upstream connections at once.
func dialSlotsOf(ctx context.Context) chan struct{} {
	if hc, ok := ctx.Value(h2ClientKey{}).(*h2Client); ok {
		return hc.dials
	}
	return nil
}

// openStream counts r, an HTTP/2 request, in its connection's streams. On a
// connection that resets its streams early, with maxResettingInFlight of
// them forwarded already, it answers r 503 and returns false. hc is nil for
// a request not served by NewServer's server.
func (p *Proxy) openStream(w http.ResponseWriter, r *http.Request) (hc *h2Client, ok bool) {
	hc, _ = r.Context().Value(h2ClientKey{}).(*h2Client)
	if hc == nil {
		return nil, true
	}
	if e := hc.early.Load(); e > minEarlyResets && 2*e > hc.streams.Load() && hc.inFlight.Load() >= maxResettingInFlight {
		p.stats.resetRefused.Add(1)
		w.Header()[headerError] = resetsValue
		http.Error(w, "proxy: this connection resets most of its streams; too many in flight", http.StatusServiceUnavailable)
		return nil, false
	}
	hc.streams.Add(1) // the streams refused are not counted: they are no one's share
	hc.inFlight.Add(1)
	return hc, true
}

var resetsValue = one("resets")

// closeStream ends what openStream began for r, which began at start: a
// stream its client ended within prematureReset is an early reset, and a
// connection with more than maxEarlyResets of them, more than half of its
// streams, is closed.
func (hc *h2Client) closeStream(p *Proxy, r *http.Request, start time.Time) {
	hc.inFlight.Add(-1)
	if r.Context().Err() == nil || time.Since(start) >= prematureReset {
		return
	}
	p.stats.resetStreams.Add(1)
	if e := hc.early.Add(1); e > maxEarlyResets && 2*e > hc.streams.Load() && hc.closed.CompareAndSwap(false, true) {
		p.stats.resetConns.Add(1)
		_ = hc.conn.Close()
	}
}
