package h1

import (
	"bytes"
	"net/http"
	"net/netip"

	"golang.org/x/net/http/httpguts"
)

// This file is sluice's HTTP/1 request parser: the one place where a request
// head is read and its framing decided. The proxy's own server (H1Server) serves
// from it; the rules are net/http's server's (its readRequest, textproto's
// ReadMIMEHeader, transfer.go), made stricter wherever net/http is lax in a way a
// proxy must not be (RFC 9112 §6 and §11): a head this parser refuses is
// answered with an error and the connection closed, never passed on.
//
// Stricter than net/http:
//   - the version is HTTP/1.0 or HTTP/1.1 exactly (net/http takes any HTTP/1.x:
//     "HTTP/1.2" is 400 here, HTTP/2.0 and later 505);
//   - Content-Length is 1 to 18 decimal digits (net/http takes 19, such as
//     "0000000000000000000");
//   - obsolete line folding is refused (net/http joins the lines; an empty
//     continuation line after Content-Length changes nothing for it but is read
//     otherwise by others);
//   - Transfer-Encoding with Content-Length, or in HTTP/1.0, is refused
//     (net/http drops the length, or the encoding);
//   - the request-target is origin-form, "*" for OPTIONS, absolute-form with
//     the http or https scheme and no user info, or authority-form for CONNECT,
//     its authority a plain host and port (net/http takes any scheme, user
//     info, percent-encodings).
//
// As net/http: up to four CR or LF bytes before a request that follows a POST
// are skipped (the "old buggy clients" of RFC 9112 §2.2); a head's lines may
// end in a bare LF (RFC 9112 §2.2 lets a recipient take it); field names are
// tokens with no whitespace before the colon; values hold no control byte but
// HTAB; HTTP/1.1 needs exactly one valid Host; one Transfer-Encoding, and it
// is "chunked" (anything else is 501); repeated identical Content-Lengths are
// one; an Expect other than 100-continue on HTTP/1.1 is 417.

// Span is the part [off, end) of a head.
type Span struct{ Off, End int32 }

// Of returns the bytes of b that s spans.
func (s Span) Of(b []byte) []byte { return b[s.Off:s.End] }

// Empty reports whether s spans nothing.
func (s Span) Empty() bool { return s.Off == s.End }

// Field is one field line of a head: its name and its value, with the
// value's surrounding whitespace trimmed.
type Field struct{ Name, Value Span }

// TargetForm is the form of a request-target (RFC 9112 §3.2).
type TargetForm uint8

const (
	FormOrigin    TargetForm = iota // "/path?query"
	FormAbsolute                    // "http://host/path?query"
	FormAsterisk                    // "*", OPTIONS only
	formAuthority                   // "host:port", CONNECT only
)

// RequestHead is a request head as the parser read it: offsets into the head's
// bytes, which the caller keeps.
type RequestHead struct {
	Method, Target Span
	Minor          uint8 // HTTP/1.minor: 0 or 1
	Form           TargetForm
	// For absolute-form: the authority and the path with its query ("" is
	// "/"). For the other forms, uri is the target.
	authority, URI Span

	Fields  []Field // every field line, Host included, in order
	Host    Span    // the request's host: the Host field's value, or the authority of absolute-form
	hasHost bool    // a Host field was sent

	Length         int64 // Content-Length; -1 when none
	Chunked        bool  // Transfer-Encoding: chunked
	Close          bool  // the client wants the connection closed after this exchange
	keepAlive10    bool  // HTTP/1.0 with Connection: keep-alive
	ExpectContinue bool  // Expect: 100-continue on HTTP/1.1
	upgrade        bool  // Connection names "upgrade"
}

// HasBody reports whether a body follows the head.
func (h *RequestHead) HasBody() bool { return h.Chunked || h.Length > 0 }

// HeadError is why a head is refused: the status to answer with and a short
// text for the body.
type HeadError struct {
	Status int
	Why    string
}

func (e *HeadError) Error() string { return e.Why }

var (
	errMalformed     = &HeadError{http.StatusBadRequest, "malformed request"}
	errBadMethod     = &HeadError{http.StatusBadRequest, "invalid method"}
	errBadTarget     = &HeadError{http.StatusBadRequest, "invalid request-target"}
	errBadVersion    = &HeadError{http.StatusBadRequest, "malformed HTTP version"}
	errVersion       = &HeadError{http.StatusHTTPVersionNotSupported, "unsupported HTTP version"}
	errFieldLine     = &HeadError{http.StatusBadRequest, "malformed header line"}
	errFolding       = &HeadError{http.StatusBadRequest, "obsolete line folding"}
	errFieldValue    = &HeadError{http.StatusBadRequest, "invalid header value"}
	errNoHost        = &HeadError{http.StatusBadRequest, "missing required Host header"}
	errHosts         = &HeadError{http.StatusBadRequest, "too many Host headers"}
	errBadHost       = &HeadError{http.StatusBadRequest, "malformed Host header"}
	errBadLength     = &HeadError{http.StatusBadRequest, "invalid Content-Length"}
	errLengths       = &HeadError{http.StatusBadRequest, "conflicting Content-Length headers"}
	errTEAndLength   = &HeadError{http.StatusBadRequest, "both Transfer-Encoding and Content-Length"}
	errTE10          = &HeadError{http.StatusBadRequest, "Transfer-Encoding in an HTTP/1.0 request"}
	errTEs           = &HeadError{http.StatusBadRequest, "too many Transfer-Encoding headers"}
	errTE            = &HeadError{http.StatusNotImplemented, "unsupported Transfer-Encoding"}
	errExpect        = &HeadError{http.StatusExpectationFailed, "unsupported Expect"}
	ErrReqTooLarge   = &HeadError{http.StatusRequestHeaderFieldsTooLarge, "request header too large"}
	errTooManyFields = &HeadError{http.StatusRequestHeaderFieldsTooLarge, "too many header fields"}
)

// maxReqFields bounds the field lines of a head (net/http's textproto bounds
// them by memory; MaxHeaderBytes bounds the bytes).
const maxReqFields = 1000

// HeadEnd returns the length of the head that begins b, through the empty line
// that ends it, or -1 when b does not hold all of it yet. *from is where the
// search resumes (0 at first); it is moved on for the next call.
func HeadEnd(b []byte, from *int) int {
	i := *from
	for {
		nl := bytes.IndexByte(b[i:], '\n')
		if nl < 0 {
			*from = len(b)
			return -1
		}
		i += nl
		switch {
		case i+1 < len(b) && b[i+1] == '\n':
			return i + 2
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			return i + 3
		case i+1 == len(b) || (i+2 == len(b) && b[i+1] == '\r'):
			*from = i // undecided: look at this line end again
			return -1
		}
		i++
	}
}

// Parse reads the head b (a whole head, as HeadEnd found it) into h, reusing
// h's memory. A head it refuses gets a *HeadError.
func (h *RequestHead) Parse(b []byte) *HeadError {
	fields := h.Fields[:0]
	*h = RequestHead{Fields: fields, Length: -1}
	line, rest := nextLine(b, 0)
	if err := h.requestLine(b, line); err != nil {
		return err
	}
	var te, cl int
	for {
		line, rest = nextLine(b, rest)
		if line.Empty() {
			break
		}
		if len(h.Fields) == maxReqFields {
			return errTooManyFields
		}
		f, err := FieldLine(b, line)
		if err != nil {
			return err
		}
		h.Fields = append(h.Fields, f)
		name, value := f.Name.Of(b), f.Value.Of(b)
		switch {
		case EqualFold(name, "host"):
			if h.hasHost {
				return errHosts
			}
			h.hasHost, h.Host = true, f.Value
			if !validHost(value) {
				return errBadHost
			}
		case EqualFold(name, "content-length"):
			n, ok := ParseContentLength(value)
			if !ok {
				return errBadLength
			}
			if cl > 0 && n != h.Length {
				return errLengths
			}
			cl++
			h.Length = n
		case EqualFold(name, "transfer-encoding"):
			te++
			h.Chunked = EqualFold(value, "chunked")
		case EqualFold(name, "connection"):
			h.connection(value)
		case EqualFold(name, "expect"):
			if h.Minor == 0 || !EqualFold(value, "100-continue") || h.ExpectContinue {
				return errExpect
			}
			h.ExpectContinue = true
		}
	}
	if h.Minor == 1 && !h.hasHost && string(h.Method.Of(b)) != "CONNECT" {
		return errNoHost
	}
	switch h.Form {
	case FormAbsolute:
		h.Host = h.authority // RFC 9112 §3.2.2: it wins over Host, as in net/http
	case formAuthority:
		h.Host = h.Target
	}
	if te > 0 {
		switch {
		case cl > 0:
			return errTEAndLength
		case h.Minor == 0:
			return errTE10
		case te > 1:
			return errTEs
		case !h.Chunked:
			return errTE
		}
		h.Length = -1
	}
	if h.Minor == 0 && !h.keepAlive10 {
		h.Close = true
	}
	return nil
}

// nextLine returns the line of b that starts at from, without its line ending
// (CRLF or LF), and where the next one starts. b ends in a line ending.
func nextLine(b []byte, from int) (line Span, next int) {
	nl := bytes.IndexByte(b[from:], '\n')
	end := from + nl
	next = end + 1
	if end > from && b[end-1] == '\r' {
		end--
	}
	return Span{int32(from), int32(end)}, next
}

// requestLine reads "method SP request-target SP HTTP/1.x".
func (h *RequestHead) requestLine(b []byte, line Span) *HeadError {
	l := line.Of(b)
	sp1 := bytes.IndexByte(l, ' ')
	if sp1 < 0 {
		return errMalformed
	}
	sp2 := bytes.IndexByte(l[sp1+1:], ' ')
	if sp2 < 0 {
		return errMalformed
	}
	sp2 += sp1 + 1
	method, target, version := l[:sp1], l[sp1+1:sp2], l[sp2+1:]
	if len(method) == 0 {
		return errBadMethod
	}
	for _, c := range method {
		if !tokenTable[c] {
			return errBadMethod
		}
	}
	switch string(version) {
	case "HTTP/1.1":
		h.Minor = 1
	case "HTTP/1.0":
		h.Minor = 0
	default:
		// HTTP/2 and later are answered 505, as net/http's server answers
		// them; another HTTP/1 minor is malformed here (testdata/requests).
		if len(version) == 8 && string(version[:5]) == "HTTP/" && version[5] >= '2' && isDigit(version[5]) && version[6] == '.' && isDigit(version[7]) {
			return errVersion
		}
		return errBadVersion
	}
	off := line.Off
	h.Method = Span{off, off + int32(sp1)}
	h.Target = Span{off + int32(sp1) + 1, off + int32(sp2)}
	h.URI = h.Target
	if len(target) == 0 {
		return errBadTarget
	}
	for _, c := range target {
		if c <= ' ' || c == 0x7f { // no control byte, as net/url refuses them
			return errBadTarget
		}
	}
	isConnect := string(method) == "CONNECT"
	switch {
	case target[0] == '/':
		if !validEscapes(target) {
			return errBadTarget
		}
		h.Form = FormOrigin
	case string(target) == "*":
		if string(method) != "OPTIONS" {
			return errBadTarget
		}
		h.Form = FormAsterisk
	case isConnect:
		if !validAuthority(target) {
			return errBadTarget
		}
		h.Form = formAuthority
	default:
		return h.absoluteTarget(target)
	}
	return nil
}

// absoluteTarget reads an absolute-form request-target: "http://" or
// "https://" (in any case), an authority without user info, then the path and
// query, if any.
func (h *RequestHead) absoluteTarget(target []byte) *HeadError {
	var n int
	switch {
	case len(target) >= 7 && EqualFold(target[:7], "http://"):
		n = 7
	case len(target) >= 8 && EqualFold(target[:8], "https://"):
		n = 8
	default:
		return errBadTarget
	}
	rest := target[n:]
	end := len(rest)
	if i := bytes.IndexAny(rest, "/?"); i >= 0 {
		end = i
	}
	authority := rest[:end]
	if !validAuthority(authority) || !validEscapes(rest[end:]) {
		return errBadTarget
	}
	t := h.Target.Off
	h.Form = FormAbsolute
	h.authority = Span{t + int32(n), t + int32(n+end)}
	h.URI = Span{t + int32(n+end), h.Target.End}
	return nil
}

// FieldLine reads "name: value" (RFC 9112 §5): a token, a colon, the value
// with its surrounding whitespace trimmed.
func FieldLine(b []byte, line Span) (Field, *HeadError) {
	l := line.Of(b)
	if l[0] == ' ' || l[0] == '\t' {
		return Field{}, errFolding
	}
	colon := bytes.IndexByte(l, ':')
	if colon <= 0 {
		return Field{}, errFieldLine
	}
	for _, c := range l[:colon] {
		if !tokenTable[c] {
			return Field{}, errFieldLine
		}
	}
	v := l[colon+1:]
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return Field{}, errFieldValue
		}
	}
	start, end := colon+1, len(l)
	for start < end && (l[start] == ' ' || l[start] == '\t') {
		start++
	}
	for end > start && (l[end-1] == ' ' || l[end-1] == '\t') {
		end--
	}
	off := line.Off
	return Field{Name: Span{off, off + int32(colon)}, Value: Span{off + int32(start), off + int32(end)}}, nil
}

// connection reads a Connection value: close, keep-alive (for HTTP/1.0) and
// upgrade, as net/http's shouldClose reads them.
func (h *RequestHead) connection(value []byte) {
	for len(value) > 0 {
		var tok []byte
		if i := bytes.IndexByte(value, ','); i >= 0 {
			tok, value = value[:i], value[i+1:]
		} else {
			tok, value = value, nil
		}
		tok = trimOWS(tok)
		switch {
		case EqualFold(tok, "close"):
			h.Close = true
		case EqualFold(tok, "keep-alive"):
			h.keepAlive10 = h.Minor == 0
		case EqualFold(tok, "upgrade"):
			h.upgrade = true
		}
	}
}

// validHost reports whether b is a Host value net/http takes: no byte
// outside those a host and port are spelled with.
func validHost(b []byte) bool {
	for _, c := range b {
		if !hostTable[c] {
			return false
		}
	}
	return true
}

// validAuthority reports whether b is an authority of a request-target the
// parser takes: a host of letters, digits, '.', '-' and '_' (or a bracketed
// IPv6 address), and an optional ":port" of digits. No user info, no percent-encoding, nothing net/url could refuse or
// read another way.
func validAuthority(b []byte) bool {
	host, port := b, []byte(nil)
	if len(b) > 0 && b[0] == '[' {
		end := bytes.IndexByte(b, ']')
		if end < 2 {
			return false
		}
		if a, err := netip.ParseAddr(string(b[1:end])); err != nil || !a.Is6() || a.Zone() != "" {
			return false
		}
		host, port = nil, b[end+1:]
		if len(port) > 0 && port[0] != ':' {
			return false
		}
	} else if i := bytes.IndexByte(b, ':'); i >= 0 {
		host, port = b[:i], b[i:]
	}
	if host != nil && len(host) == 0 {
		return false
	}
	for _, c := range host {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	if len(port) > 0 {
		if len(port) == 1 {
			return false // ":" and no port
		}
		for _, c := range port[1:] {
			if !isDigit(c) {
				return false
			}
		}
	}
	return true
}

// validEscapes reports whether every '%' in the path of a request-target
// (the part before any '?') begins a percent-encoded octet, '%' and two hex
// digits, as net/url requires of a request's path (its query is not read).
func validEscapes(target []byte) bool {
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		target = target[:i]
	}
	for i := 0; i < len(target); i++ {
		if target[i] == '%' {
			if i+2 >= len(target) || !isHex(target[i+1]) || !isHex(target[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

// hostTable holds the bytes of httpguts.ValidHostHeader, net/http's rule.
var hostTable = func() (t [256]bool) {
	for c := 0; c < 0x80; c++ {
		t[c] = httpguts.ValidHostHeader(string(rune(c)))
	}
	return t
}()

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
