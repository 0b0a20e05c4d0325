package proxy

import (
	"io"
	"net/http"
	"strings"
)

// nextToken splits the first element off a comma-separated header list (RFC 9110
// §5.6.1), trimming optional whitespace; empty elements are skipped. ok is false
// when s holds no more elements. It does not allocate.
func nextToken(s string) (tok, rest string, ok bool) {
	for s != "" {
		i := strings.IndexByte(s, ',')
		if i < 0 {
			tok, s = s, ""
		} else {
			tok, s = s[:i], s[i+1:]
		}
		tok = strings.Trim(tok, " \t")
		if tok != "" {
			return tok, s, true
		}
	}
	return "", "", false
}

// hasToken reports whether any of the comma-separated lists in values holds token,
// compared case-insensitively.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for s := v; ; {
			tok, rest, ok := nextToken(s)
			if !ok {
				break
			}
			if strings.EqualFold(tok, token) {
				return true
			}
			s = rest
		}
	}
	return false
}

// connectionListed reports whether the canonical header key k is named by a
// Connection header (RFC 9110 §7.6.1: such fields are hop-by-hop). conn holds the
// Connection values; the usual "close", "keep-alive" and "upgrade" name no field
// that is forwarded anyway.
func connectionListed(conn []string, k string) bool {
	return len(conn) > 0 && hasToken(conn, k)
}

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
	return strings.IndexByte(k, '_') >= 0 && forwardingAlias(k)
}

// forwardingAlias reports whether k, with its underscores read as dashes, names
// a forwarding field.
func forwardingAlias(k string) bool {
	for _, f := range [...]string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Real-Ip"} {
		if len(k) != len(f) {
			continue
		}
		same := true
		for i := 0; i < len(k) && same; i++ {
			c := k[i]
			if c == '_' {
				c = '-'
			}
			same = c == f[i] || c|0x20 == f[i]|0x20 && c|0x20 >= 'a' && c|0x20 <= 'z'
		}
		if same {
			return true
		}
	}
	return false
}

// responseSkipped reports whether the canonical response header k is dropped
// rather than copied to the client: hop-by-hop fields and framing, which the
// proxy's own server regenerates.
func responseSkipped(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
		"Te", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// trailerForbidden reports whether the canonical field k must not be forwarded as
// a trailer (RFC 9110 §6.5.1: framing, routing and the like), nor the
// forwarding fields, underscore spellings included, which the proxy writes in
// a request's head alone (see forwardedOf): from a client's trailers, an
// upstream that merges trailers into the head would take them for the
// proxy's.
func trailerForbidden(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer",
		"Transfer-Encoding", "Upgrade", "Content-Length", "Content-Type",
		"Content-Encoding", "Content-Range", "Host", "Authorization",
		"Set-Cookie", "Cache-Control", "Expect", "Max-Forwards", "Pragma", "Range",
		"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded", "X-Real-Ip":
		return true
	}
	return strings.IndexByte(k, '_') >= 0 && forwardingAlias(k)
}

// trailersOut returns the trailers an h2c request forwards for r, whose
// trailers (r.Trailer) are filled in when its body ends: their names less
// those trailerForbidden names, and body, r's body, which fills their values
// in from r.Trailer as it ends. (net/http's Transport declares the names when
// it sends the head, and reads the values when the body ends.)
func trailersOut(r *http.Request, body io.ReadCloser) (http.Header, io.ReadCloser) {
	if len(r.Trailer) == 0 || body == nil {
		return nil, body
	}
	out := make(http.Header, len(r.Trailer))
	for k := range r.Trailer {
		if !trailerForbidden(k) {
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
		if !isTokenByte(r.Method[i]) {
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
