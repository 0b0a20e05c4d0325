package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"

	"github.com/sluicehq/sluice/proxy/h1"

	"github.com/sluicehq/sluice/gate"
)

// failClass is what went wrong with the upstream.
type failClass uint8

const (
	failConnect  failClass = iota // could not connect
	failTimeout                   // no progress in time
	failReset                     // closed or reset under us
	failProtocol                  // malformed response
	failLocal                     // this process or machine ran out of a resource: not the upstream's failure
)

var failNames = [...]string{"connect", "timeout", "reset", "protocol", "local"}

var connectionClose = one("close")

var failValues = func() (v [len(failNames)][]string) {
	for i := range v {
		v[i] = one(failNames[i])
	}
	return v
}()

var failBodies = func() (b [len(failNames)]struct {
	status int
	text   []byte
	length []string
	grpc   []string
}) {
	for i := range b {
		status, what := http.StatusBadGateway, "upstream "+failNames[i]
		switch failClass(i) {
		case failTimeout:
			status = http.StatusGatewayTimeout
		case failLocal:
			status, what = http.StatusServiceUnavailable, "sluice is out of local resources: file descriptors, buffers or ports"
		}
		text := strconv.Itoa(status) + " " + http.StatusText(status) + " (" + what + ")\n"
		b[i].status, b[i].text = status, []byte(text)
		b[i].length = one(strconv.Itoa(len(text)))
		grpc := "sluice: " + what + " failed"
		if failClass(i) == failLocal {
			grpc = "sluice: " + what
		}
		b[i].grpc = one(grpc)
	}
	return b
}()

// errUpstreamTimeout marks an upstream that did not answer within UpstreamTimeout.
var errUpstreamTimeout = errors.New("proxy: upstream timed out")

// isLocal reports whether err is this side's lack of a resource, not the
// upstream's failure: no file descriptor left for a socket (EMFILE for the
// process, ENFILE for the machine), no buffer or kernel memory (ENOBUFS,
// ENOMEM), no local port to connect from (EADDRNOTAVAIL).
func isLocal(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS) ||
		errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EADDRNOTAVAIL)
}

// classify names the class of an upstream error.
func classify(err error, dialing bool) failClass {
	var pe *h1.ProtocolError
	var ne net.Error
	switch {
	case isLocal(err):
		return failLocal
	case errors.As(err, &pe):
		return failProtocol
	case errors.Is(err, errUpstreamTimeout), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return failTimeout
	case dialing:
		return failConnect
	case errors.Is(err, syscall.ECONNREFUSED):
		return failConnect
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return failReset
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return failConnect
	}
	return failReset
}

// count adds one to the counter of class c.
func (s *counters) count(c failClass) {
	switch c {
	case failConnect:
		s.connect.Add(1)
	case failTimeout:
		s.timeout.Add(1)
	case failReset:
		s.reset.Add(1)
	case failLocal:
		s.local.Add(1)
	default:
		s.protocol.Add(1)
	}
}

// fail answers a request whose upstream exchange failed before any of the response
// was sent, with 502 or 504 and Sluice-Error (gRPC: UNAVAILABLE), and finishes it:
// dropped, or ignored if the request's context ended first (the client went away;
// what is written then reaches nobody, or a client whose connection broke).
//
// A local failure (isLocal: the fd limit, say) is no sign of the upstream's
// health: it is answered 503 with Sluice-Error: local and Retry-After: 1,
// finished as ignored (neither the breaker nor the gate's law counts it), and
// reported to OnLocalError.
func (p *Proxy) fail(ctx context.Context, w http.ResponseWriter, x *exchange, g grpcKind, ct string, err error, dialing bool) {
	c := classify(err, dialing)
	switch {
	case ctx.Err() != nil:
		x.finish(gate.Ignored)
	case c == failLocal:
		p.stats.count(c)
		x.finish(gate.Ignored)
		if p.onLocalError != nil {
			p.onLocalError(err)
		}
	default:
		p.stats.count(c)
		x.cause = failNames[c]
		x.finish(gate.Dropped)
	}
	h := w.Header()
	clear(h)
	if x.closeClient {
		h["Connection"] = connectionClose
	}
	h[headerError] = failValues[c]
	if c == failLocal {
		h["Retry-After"] = retryAfterOne
	}
	b := &failBodies[c]
	if g != grpcNone {
		writeGRPCStatus(w, g, ct, false, b.grpc, -1)
		return
	}
	h["Content-Type"] = textPlain
	h["Content-Length"] = b.length
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(b.status)
	_, _ = w.Write(b.text)
}

var retryAfterOne = one("1")
