package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/sluicehq/sluice/proxy/h1"
)

// clientWatch aborts the upstream connection of an HTTP/1 request when its
// client goes away, as context.AfterFunc on the request's context does, but
// without registering with the context on every request (AfterFunc's context,
// its stop function, the context's done channel and child set: four
// allocations a request). There is one per guarded client connection
// (guardConn), whose requests come one at a time.
//
// It stands in for AfterFunc only where the two agree: for a request whose
// context is the one net/http's server made (NewServer's handler notes it,
// served), which nothing cancels while the handler runs but the failure of the
// connection, seen by a read of it (the server's background read, or a
// body's) or a write. The guard reports every failed read but a timeout (one
// is how the server ends its background read; a body's own timeout ends the
// body's reader, which aborts the upstream itself); a failed write is the
// handler's own, which then aborts the upstream. The abort waits for the
// context to end, as the server ends it right after such a read: the handler,
// failing on the aborted upstream, then finds its context done and takes the
// failure for the client's, as with AfterFunc.
//
// Concurrency: arm and disarm are called by the request's handler, gone by the
// connection's reader; the mutex orders them.
type clientWatch struct {
	served context.Context // the context of the request being served; the handler's alone
	want   func()          // if set, called by arm: the own server's connection watches only then (h1Conn.wantWatch)
	// closeClient, if set, closes the client's socket; it runs after an
	// abort. The exchange aborted is finished, not cut (h1.Conn.ClientGone),
	// and holds its slot until the upstream answers, up to the upstream
	// timeout; nothing more of it is written to the client, whose socket
	// would otherwise stay open that long: two descriptors a held exchange,
	// and a proxy at overload out of them at half its limit. Only an
	// aborted exchange's: a client that half-closed after its request is
	// still sent an answer the handler gives at once (a refusal), as nginx
	// sends it.
	closeClient func()

	mu      sync.Mutex
	ctx     context.Context // the armed request's
	abort   func()          // armed: run when the client goes away
	gone    bool            // a read of the connection failed
	waiting bool            // a goroutine waits for ctx to run abort
}

// arm makes abort run once the client goes away and ctx, the request's, ends.
func (w *clientWatch) arm(ctx context.Context, abort func()) {
	if w.want != nil {
		w.want()
	}
	w.mu.Lock()
	w.ctx, w.abort = ctx, abort
	if w.gone {
		w.waitLocked()
	}
	w.mu.Unlock()
}

// disarm stops the abort; it reports false if the abort ran, or is running.
func (w *clientWatch) disarm() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	armed := w.abort != nil
	w.ctx, w.abort = nil, nil
	return armed
}

// clientGone says a read of the connection failed (not by a timeout).
func (w *clientWatch) clientGone() {
	w.mu.Lock()
	w.gone = true
	if w.abort != nil {
		w.waitLocked()
	}
	w.mu.Unlock()
}

// waitLocked starts the goroutine that runs the armed abort once its
// request's context ends, unless one is waiting. w.mu is held.
func (w *clientWatch) waitLocked() {
	if w.waiting {
		return
	}
	w.waiting = true
	go func(ctx context.Context) {
		for {
			<-ctx.Done()
			w.mu.Lock()
			switch w.ctx {
			case ctx:
				abort := w.abort
				w.ctx, w.abort, w.waiting = nil, nil, false
				w.mu.Unlock()
				abort()
				if w.closeClient != nil {
					w.closeClient()
				}
				return
			case nil:
				w.waiting = false // disarmed
				w.mu.Unlock()
				return
			}
			ctx = w.ctx // armed again, for a later request: wait for that one
			w.mu.Unlock()
		}
	}(w.ctx)
}

// guardKey keys a connection's guardConn in the contexts of its requests.
type guardKey struct{}

// connContext is NewServer's http.Server.ConnContext: a guarded connection's
// requests can find its guard.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if g, ok := c.(*guardConn); ok {
		return context.WithValue(ctx, guardKey{}, g)
	}
	return ctx
}

// watchedHandler is NewServer's handler: it notes each HTTP/1 request's
// context in its connection's watch (clientWatch.served), and gives a request
// over GuardTLSListener its r.TLS, before h serves it.
type watchedHandler struct{ h http.Handler }

func (h watchedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g, ok := r.Context().Value(guardKey{}).(*guardConn); ok {
		if r.ProtoMajor == 1 {
			g.watch.served = r.Context()
		}
		if g.tls != nil && r.TLS == nil {
			r.TLS = g.tls.connectionState() // the server sees no *tls.Conn
		}
	}
	h.h.ServeHTTP(w, r)
}

// clientWatchOf returns the watch of r's connection if r's context is the one
// its server made (see clientWatch; the own server's connections have one
// too, h1Conn.watch); else nil.
func clientWatchOf(r *http.Request) *clientWatch {
	if r.ProtoMajor != 1 {
		return nil
	}
	ctx := r.Context()
	if c, ok := ctx.Value(h1ConnKey{}).(*h1Conn); ok {
		if c.watch.served != ctx {
			return nil
		}
		return &c.watch
	}
	g, ok := ctx.Value(guardKey{}).(*guardConn)
	if !ok || g.watch.served != ctx {
		return nil
	}
	return &g.watch
}

// clientStop stops what aborts a request's upstream connection when its client
// goes away: the connection's watch or the context's AfterFunc.
type clientStop struct {
	watch *clientWatch
	after func() bool
}

// watchClient makes c abort once r's client goes away.
func watchClient(r *http.Request, c *h1.Conn) clientStop {
	if w := clientWatchOf(r); w != nil {
		w.arm(r.Context(), c.AbortFn)
		return clientStop{watch: w}
	}
	return clientStop{after: context.AfterFunc(r.Context(), c.AbortFn)}
}

// stop stops the abort; it reports false if the abort ran, or is running.
func (s clientStop) stop() bool {
	if s.watch != nil {
		return s.watch.disarm()
	}
	return s.after()
}

// isTimeout reports whether err is a deadline's. A connection's read fails
// with a *net.OpError, looked at without errors.As, whose reflection would
// cost more than the rest of the guard's read: the server's background read
// ends this way on every request.
func isTimeout(err error) bool {
	if ne, ok := err.(net.Error); ok {
		return ne.Timeout()
	}
	return errors.Is(err, os.ErrDeadlineExceeded)
}
