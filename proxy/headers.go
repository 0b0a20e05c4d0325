package proxy

import (
	"io"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/proxy/h1"
)

// requestSkipped reports whether the canonical request header k is not copied to
// the upstream as it is: hop-by-hop fields (RFC 9110 §7.6.1, plus the
// Proxy-Authorization credentials meant for this hop), framing the proxy
// regenerates (Content-Length, Transfer-Encoding), Expect (the server answers
// 100-continue itself), the forwarding fields the proxy writes itself (see
// forwardedOf), and a forwarding field's name spelled with underscores
// ("X_Forwarded_For"), which CGI-style upstreams read as the field itself
// (nginx drops every name with an underscore by default).
func requestSkipped(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization",
		"Proxy-Authenticate", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
		"Content-Length", "Host", "Expect",
		"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded", "X-Real-Ip":
		return true
	}
	return strings.IndexByte(k, '_') >= 0 && h1.ForwardingAlias(k)
}

// trailersOut returns the trailers an h2c request forwards for r, whose
// trailers (r.Trailer) are filled in when its body ends: their names less
// those h1.TrailerForbidden names, and body, r's body, which fills their values
// in from r.Trailer as it ends. (net/http's Transport declares the names when
// it sends the head, and reads the values when the body ends.)
func trailersOut(r *http.Request, body io.ReadCloser) (http.Header, io.ReadCloser) {
	if len(r.Trailer) == 0 || body == nil {
		return nil, body
	}
	out := make(http.Header, len(r.Trailer))
	for k := range r.Trailer {
		if !h1.TrailerForbidden(k) {
			out[k] = nil
		}
	}
	return out, trailedBody{body, r.Trailer, out}
}

// trailedBody is a request body that copies its request's trailers, those
// out names, into out when it ends.
type trailedBody struct {
	io.ReadCloser
	in, out http.Header
}

func (b trailedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		for k := range b.out {
			b.out[k] = b.in[k]
		}
	}
	return n, err
}

// isIdempotent reports whether a request may be sent again after a reused
// upstream connection failed before any response arrived (RFC 9110 §9.2.2): an
// idempotent method, or an Idempotency-Key as net/http's Transport honours it.
func isIdempotent(method string, hasKey bool) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return hasKey
}

// leaveUntyped keeps net/http's server from sniffing a Content-Type onto a
// response that came without one (a nil value is what suppresses it): the
// client must see the upstream's fields, not a guess made from the first bytes
// of the body.
func leaveUntyped(h http.Header) {
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil
	}
}

// requestLineFault says what is wrong with r's method or request-target for a
// request line ("" for class if nothing): a method that is not a token, a
// target with a space or a control byte, "*" with another method than
// OPTIONS (RFC 9112 §3.2.4), and over HTTP/2 a :path that is not an absolute
// path. net/http's HTTP/1 server refuses most of these itself (it splits the
// request line at spaces and refuses control bytes); HTTP/2's :method and
// :path reach the handler as the client sent them, and would reach the
// upstream's request line raw ("POST\t /d1 HTTP/1.1"). class is the
// Sluice-Error value: "method" or "path".
func requestLineFault(r *http.Request) (class, why string) {
	for i := 0; i < len(r.Method); i++ {
		if !h1.IsTokenByte(r.Method[i]) {
			return "method", "the method is not a token"
		}
	}
	u := r.RequestURI
	if u == "*" {
		if r.Method != http.MethodOptions {
			return "path", `the request-target "*" is for OPTIONS only`
		}
		return "", ""
	}
	if r.ProtoMajor >= 2 && (u == "" || u[0] != '/') {
		return "path", "the :path is not an absolute path"
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c == 0x7f {
			return "path", "the request-target holds a space or a control byte"
		}
	}
	return "", ""
}
