package proxy

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
)

// methodWantsLength reports whether a bodyless request with this method should
// still say "Content-Length: 0", as net/http's Transport does.
func methodWantsLength(m string) bool { return m == "POST" || m == "PUT" || m == "PATCH" }

// writeRequestHead writes the request line and fields of r for an HTTP/1.1
// upstream: the client's fields minus hop-by-hop ones and those named by
// Connection, the forwarding fields (see Forwarding), the upgrade fields when
// upgrade (see upgradeOffer) is not "", and the framing of the body as mode sends
// it.
func (p *Proxy) writeRequestHead(bw *bufio.Writer, r *http.Request, upgrade string, mode bodyMode) {
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	switch uri := r.RequestURI; {
	case uri == "*":
		bw.WriteString(uri)
	case len(uri) > 0 && uri[0] == '/':
		bw.WriteString(p.up.prefix)
		bw.WriteString(uri)
	default: // absolute form, or a request not read by a server
		bw.WriteString(p.up.prefix)
		bw.WriteString(r.URL.RequestURI())
	}
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	switch {
	case p.hostHeader != "":
		bw.WriteString(p.hostHeader)
	case r.Host != "" && validFieldValue(r.Host):
		bw.WriteString(r.Host)
	default:
		bw.WriteString(p.up.host)
	}
	bw.WriteString("\r\n")

	conn := r.Header["Connection"]
	for k, vv := range r.Header {
		if requestSkipped(k) || connectionListed(conn, k) || !validFieldName(k) {
			continue
		}
		for _, v := range vv {
			if !validFieldValue(v) {
				continue
			}
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	p.writeForwarded(bw, r)
	if upgrade != "" {
		bw.WriteString("Connection: Upgrade\r\nUpgrade: ")
		bw.WriteString(upgrade)
		bw.WriteString("\r\n")
	}
	switch {
	case mode == bodyNone:
		if methodWantsLength(r.Method) {
			bw.WriteString("Content-Length: 0\r\n")
		}
	case r.ContentLength > 0:
		var buf [20]byte
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(buf[:0], r.ContentLength, 10))
		bw.WriteString("\r\n")
	default:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	bw.WriteString("\r\n")
}

// forwarded holds the X-Forwarded-* fields for one request.
type forwarded struct {
	prior []string // incoming X-Forwarded-For values passed on, in order
	ip    string   // the client's address, appended to X-Forwarded-For; "" if none
	proto string   // X-Forwarded-Proto
	host  string   // X-Forwarded-Host; "" for none
}

// forwardedOf decides the X-Forwarded-* fields of r as p.forwarding says: with
// ForwardAppend the hop in front is trusted (its X-Forwarded-For is extended, its
// X-Forwarded-Proto and X-Forwarded-Host are kept), with ForwardReplace nothing
// incoming is. X-Forwarded-Host is otherwise set only when the proxy rewrites Host.
func (p *Proxy) forwardedOf(r *http.Request) forwarded {
	f := forwarded{ip: clientIP(r.RemoteAddr), proto: "http"}
	if r.TLS != nil {
		f.proto = "https"
	}
	trust := p.forwarding == ForwardAppend
	if trust {
		f.prior = r.Header["X-Forwarded-For"]
		if v := r.Header["X-Forwarded-Proto"]; len(v) > 0 && v[0] != "" && validFieldValue(v[0]) {
			f.proto = v[0]
		}
		if v := r.Header["X-Forwarded-Host"]; len(v) > 0 && v[0] != "" && validFieldValue(v[0]) {
			f.host = v[0]
		}
	}
	if f.host == "" && p.hostHeader != "" && validFieldValue(r.Host) {
		f.host = r.Host
	}
	return f
}

// forEach calls fn with every X-Forwarded-For element, in order; fn must not
// retain f.
func (f *forwarded) forEach(fn func(string)) {
	for _, v := range f.prior {
		if v = strings.Trim(v, " \t"); v != "" && validFieldValue(v) {
			fn(v)
		}
	}
	if f.ip != "" {
		fn(f.ip)
	}
}

// writeForwarded writes the X-Forwarded-* fields of r.
func (p *Proxy) writeForwarded(bw *bufio.Writer, r *http.Request) {
	f := p.forwardedOf(r)
	sep := false
	f.forEach(func(v string) {
		if sep {
			bw.WriteString(", ")
		} else {
			bw.WriteString("X-Forwarded-For: ")
			sep = true
		}
		bw.WriteString(v)
	})
	if sep {
		bw.WriteString("\r\n")
	}
	bw.WriteString("X-Forwarded-Proto: ")
	bw.WriteString(f.proto)
	bw.WriteString("\r\n")
	if f.host != "" {
		bw.WriteString("X-Forwarded-Host: ")
		bw.WriteString(f.host)
		bw.WriteString("\r\n")
	}
}

// validFieldName reports whether k is a token (RFC 9110 §5.6.2). Requests read by
// net/http always pass; the check guards requests built in-process.
func validFieldName(k string) bool {
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

// validFieldValue reports whether v holds no CR, LF or NUL, which would let a
// value split the message (RFC 9110 §5.5).
func validFieldValue(v string) bool {
	return strings.IndexByte(v, '\n') < 0 && strings.IndexByte(v, '\r') < 0 && strings.IndexByte(v, 0) < 0
}
