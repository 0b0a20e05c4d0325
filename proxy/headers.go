package proxy

import (
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
// 100-continue itself) and the forwarding fields the proxy writes itself.
func requestSkipped(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization",
		"Proxy-Authenticate", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
		"Content-Length", "Host", "Expect",
		"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host":
		return true
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
// a trailer (RFC 9110 §6.5.1: framing, routing and the like).
func trailerForbidden(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer",
		"Transfer-Encoding", "Upgrade", "Content-Length", "Content-Type",
		"Content-Encoding", "Content-Range", "Host", "Authorization",
		"Set-Cookie", "Cache-Control", "Expect", "Max-Forwards", "Pragma", "Range":
		return true
	}
	return false
}

// clientIP returns the host part of a net/http RemoteAddr ("1.2.3.4:5678",
// "[::1]:80"), without brackets; an address without a port is returned as it
// is, brackets trimmed. It returns "" when nothing usable is left (a unix socket
// peer). It does not allocate.
func clientIP(remoteAddr string) string {
	s := remoteAddr
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host := s[:i]
		if strings.IndexByte(host, ':') < 0 || (len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']') {
			s = host // "1.2.3.4:80" or "[::1]:80"; a bare IPv6 address keeps its colons
		}
	}
	if len(s) > 1 && s[0] == '[' && s[len(s)-1] == ']' {
		s = s[1 : len(s)-1]
	}
	if s == "" || s == "@" || len(s) > 64 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == ',' || c >= 0x7f {
			return "" // not an address; it must not reach a header
		}
	}
	return s
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
