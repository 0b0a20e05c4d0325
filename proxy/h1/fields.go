package h1

import (
	"strings"
)

// NextToken splits the first element off a comma-separated header list (RFC 9110
// §5.6.1), trimming optional whitespace; empty elements are skipped. ok is false
// when s holds no more elements. It does not allocate.
func NextToken(s string) (tok, rest string, ok bool) {
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

// HasToken reports whether any of the comma-separated lists in values holds token,
// compared case-insensitively.
func HasToken(values []string, token string) bool {
	for _, v := range values {
		for s := v; ; {
			tok, rest, ok := NextToken(s)
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

// ConnectionListed reports whether the canonical header key k is named by a
// Connection header (RFC 9110 §7.6.1: such fields are hop-by-hop). conn holds the
// Connection values; the usual "close", "keep-alive" and "upgrade" name no field
// that is forwarded anyway.
func ConnectionListed(conn []string, k string) bool {
	return len(conn) > 0 && HasToken(conn, k)
}

// ForwardingAlias reports whether k, with its underscores read as dashes, names
// a forwarding field.
func ForwardingAlias(k string) bool {
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

// ResponseSkipped reports whether the canonical response header k is dropped
// rather than copied to the client: hop-by-hop fields and framing, which the
// proxy's own server regenerates.
func ResponseSkipped(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
		"Te", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// TrailerForbidden reports whether the canonical field k must not be forwarded as
// a trailer (RFC 9110 §6.5.1: framing, routing and the like), nor the
// forwarding fields, underscore spellings included, which the proxy writes in
// a request's head alone (see the proxy's forwardedOf): from a client's trailers, an
// upstream that merges trailers into the head would take them for the
// proxy's.
func TrailerForbidden(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer",
		"Transfer-Encoding", "Upgrade", "Content-Length", "Content-Type",
		"Content-Encoding", "Content-Range", "Host", "Authorization",
		"Set-Cookie", "Cache-Control", "Expect", "Max-Forwards", "Pragma", "Range",
		"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded", "X-Real-Ip":
		return true
	}
	return strings.IndexByte(k, '_') >= 0 && ForwardingAlias(k)
}

// ValidFieldName reports whether k is a token (RFC 9110 §5.6.2). Requests read by
// net/http always pass; the check guards requests built in-process.
func ValidFieldName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !tokenTable[k[i]] {
			return false
		}
	}
	return true
}

// ValidFieldValue reports whether v holds no CR, LF or NUL, which would let a
// value split the message (RFC 9110 §5.5).
func ValidFieldValue(v string) bool {
	return strings.IndexByte(v, '\n') < 0 && strings.IndexByte(v, '\r') < 0 && strings.IndexByte(v, 0) < 0
}

// EqualFold reports whether b equals the lower-case ASCII s, case aside.
func EqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
