package proxy

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/proxy/h1"
)

// methodWantsLength reports whether a bodyless request with this method should
// still say "Content-Length: 0", as net/http's Transport does.
func methodWantsLength(m string) bool { return m == "POST" || m == "PUT" || m == "PATCH" }

// writeRequestHead writes the request line and fields of r for an HTTP/1.1
// upstream: path (r's path as gate.NormalPath made it, escaped) with r's query,
// the client's fields minus hop-by-hop ones and those named by Connection, the
// forwarding fields (see forwardedOf), the upgrade fields when upgrade (see
// upgradeOffer) is not "", and the framing of the body as mode sends it.
func (p *Proxy) writeRequestHead(bw *bufio.Writer, r *http.Request, path, upgrade string, mode bodyMode) {
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	if path == "*" {
		bw.WriteString(path)
	} else {
		bw.WriteString(p.up.prefix)
		bw.WriteString(path)
		writeQuery(bw, r)
	}
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	switch {
	case p.hostHeader != "":
		bw.WriteString(p.hostHeader)
	case r.Host != "" && h1.ValidFieldValue(r.Host):
		bw.WriteString(r.Host)
	default:
		bw.WriteString(p.up.host)
	}
	bw.WriteString("\r\n")

	conn := r.Header["Connection"]
	for k, vv := range r.Header {
		if requestSkipped(k) || h1.ConnectionListed(conn, k) || !h1.ValidFieldName(k) {
			continue
		}
		for _, v := range vv {
			if !h1.ValidFieldValue(v) {
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

// writeQuery writes r's query, with its "?", as the client sent it; nothing
// when it has none.
func writeQuery(bw *bufio.Writer, r *http.Request) {
	if u := r.RequestURI; u != "" && u[0] == '/' {
		if i := strings.IndexByte(u, '?'); i >= 0 {
			bw.WriteString(u[i:])
		}
		return
	}
	if r.URL.ForceQuery || r.URL.RawQuery != "" {
		bw.WriteByte('?')
		bw.WriteString(r.URL.RawQuery)
	}
}

// forwarded holds the forwarding fields of one request.
type forwarded struct {
	prior     []string // a trusted peer's X-Forwarded-For values, passed on in order
	forwarded []string // a trusted peer's Forwarded values, passed on
	realIP    []string // a trusted peer's X-Real-IP values, passed on
	ip        string   // the peer's address, appended to X-Forwarded-For; "" if none
	proto     string   // X-Forwarded-Proto
	host      string   // X-Forwarded-Host; "" for none
}

// forwardedOf decides r's forwarding fields. A peer that the trusted proxies
// hold (a proxy in front) has its X-Forwarded-For extended with its address,
// and its X-Forwarded-Proto, X-Forwarded-Host, Forwarded and X-Real-IP passed
// on. Any other peer's are replaced: X-Forwarded-For is the peer's address
// alone, X-Forwarded-Proto the scheme it connected with, Forwarded and
// X-Real-IP are dropped, and X-Forwarded-Host is set only when the proxy
// rewrites Host (to the client's).
func (p *Proxy) forwardedOf(r *http.Request) forwarded {
	ip, trusted := p.trustedProxies().Peer(r.RemoteAddr)
	f := forwarded{ip: ip, proto: "http"}
	if r.TLS != nil {
		f.proto = "https"
	}
	if trusted {
		f.prior = r.Header["X-Forwarded-For"]
		f.forwarded, f.realIP = r.Header["Forwarded"], r.Header["X-Real-Ip"]
		if v := r.Header["X-Forwarded-Proto"]; len(v) > 0 && v[0] != "" && h1.ValidFieldValue(v[0]) {
			f.proto = v[0]
		}
		if v := r.Header["X-Forwarded-Host"]; len(v) > 0 && v[0] != "" && h1.ValidFieldValue(v[0]) {
			f.host = v[0]
		}
	}
	if f.host == "" && p.hostHeader != "" && h1.ValidFieldValue(r.Host) {
		f.host = r.Host
	}
	return f
}

// forEach calls fn with every X-Forwarded-For element, in order; fn must not
// retain f.
func (f *forwarded) forEach(fn func(string)) {
	for _, v := range f.prior {
		if v = strings.Trim(v, " \t"); v != "" && h1.ValidFieldValue(v) {
			fn(v)
		}
	}
	if f.ip != "" {
		fn(f.ip)
	}
}

// writeForwarded writes the forwarding fields of r (see forwardedOf).
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
	writeFields(bw, "Forwarded: ", f.forwarded)
	writeFields(bw, "X-Real-Ip: ", f.realIP)
}

// writeFields writes a field line of prefix ("Name: ") for each of values
// that holds no line break.
func writeFields(bw *bufio.Writer, prefix string, values []string) {
	for _, v := range values {
		if h1.ValidFieldValue(v) {
			bw.WriteString(prefix)
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
}
