package proxy

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// h2Abandon is an h2c exchange's answer to its client going away, as
// h1.Conn.ClientGone is an HTTP/1.1 exchange's: an ordinary request's
// upstream stream is not reset but finished, its answer read and dropped,
// within the upstream timeout, so that the request keeps its slot until the
// upstream's work ends. A reset (RST_STREAM) tells a server to stop, and
// net/http's and grpc-go's servers do cancel the handler's context on it,
// but a handler that does not watch its context (a worker pool, a CPU-bound
// job) works on, and the slot given back at the reset would let the next
// request in beside it. A stream (server-sent events, a gRPC call that
// became one) is cut at once: it holds a stream slot, not a request's, and
// nothing of its work is left to wait for.
//
// Concurrency: clientGone runs on the client context's AfterFunc goroutine,
// stream on a gRPC call's timer or the handler, end on the handler; mu
// orders them.
type h2Abandon struct {
	p      *Proxy
	cancel context.CancelCauseFunc // ends the upstream exchange
	stop   func() bool             // stops clientGone's AfterFunc

	mu     sync.Mutex
	stream bool        // a stream, or an exchange that holds no slot: a client gone cuts it
	gone   bool        // the client went away from an ordinary request (counted)
	timer  *time.Timer // the bound on finishing, once gone
	ended  bool
}

// errAbandonTimeout ends an abandoned h2c exchange that outlived the upstream
// timeout after its client went away.
var errAbandonTimeout = errors.New("proxy: upstream did not finish an abandoned request within the upstream timeout")

// watchAbandon returns the upstream context for an h2c exchange whose client's
// context is ctx: it outlives the client, and ends when the exchange is cut
// (its cancel function, with a cause) or, once the client went away, within
// the upstream timeout. An exchange that holds no slot (held false: see
// gate.Pass.HoldsSlot) is cut when its client goes, as a stream is: there is
// nothing for the upstream's work to keep. The caller must end a.
func (p *Proxy) watchAbandon(ctx context.Context, held bool) (up context.Context, a *h2Abandon) {
	a = &h2Abandon{p: p, stream: !held}
	up, a.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	a.stop = context.AfterFunc(ctx, a.clientGone)
	return up, a
}

// clientGone cuts a stream, or gives an ordinary exchange the upstream
// timeout to finish.
func (a *h2Abandon) clientGone() {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.ended:
	case a.stream:
		a.cancel(context.Canceled)
	default:
		a.gone = true
		a.p.stats.abandonedH2.Add(1)
		a.p.stats.abandonedH2InFlight.Add(1)
		a.timer = time.AfterFunc(a.p.upstreamTimeout, func() { a.cancel(errAbandonTimeout) })
	}
}

// becomeStream makes the exchange a stream's: cut at once if its client is
// gone already, and when it goes.
func (a *h2Abandon) becomeStream() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stream = true
	if a.gone {
		a.cancel(context.Canceled)
	}
}

// isGone reports whether the client went away from an ordinary request.
func (a *h2Abandon) isGone() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gone && !a.stream
}

// end ends the watch and the upstream context; later calls do nothing.
func (a *h2Abandon) end() {
	a.stop()
	a.mu.Lock()
	a.ended = true
	if a.gone {
		a.timer.Stop()
		a.p.stats.abandonedH2InFlight.Add(-1)
		a.gone = false
	}
	a.mu.Unlock()
	a.cancel(nil)
}

// drainAbandoned reads what is left of an abandoned response, whose client is
// gone, and drops it, up to maxDrain bytes: it reports whether the response
// ended whole (its trailers are then in), else the upstream's error.
func drainAbandoned(body io.Reader) (whole bool, err error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	for dropped := 0; dropped <= maxDrain; {
		n, err := body.Read(*bp)
		dropped += n
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
	return false, errDrainLimit
}
