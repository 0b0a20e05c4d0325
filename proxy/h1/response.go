package h1

import (
	"bufio"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
)

// ProtocolError is a malformed or unsupported message from the upstream.
type ProtocolError struct{ msg string }

func (e *ProtocolError) Error() string { return "proxy: upstream protocol error: " + e.msg }

// ProtoErr returns a *ProtocolError with the formatted message.
func ProtoErr(format string, a ...any) error { return &ProtocolError{fmt.Sprintf(format, a...)} }

var errHeadTooLarge = &ProtocolError{"response head too large"}

// ResponseHead is what the proxy needs to know of an upstream response head; the
// fields themselves go straight into the client's header map.
type ResponseHead struct {
	Status    int
	minor     int    // HTTP/1.minor
	Length    int64  // Content-Length, or -1 when absent
	Chunked   bool   // Transfer-Encoding: chunked
	Close     bool   // the upstream will close the connection after this response
	Upgrade   bool   // Connection names "upgrade"
	UpgradeTo string // the Upgrade fields, joined by ", "
}

// Bodyless reports whether the response can carry no body (RFC 9112 §6.3).
func (h *ResponseHead) Bodyless(method string) bool {
	return method == "HEAD" || h.Status < 200 || h.Status == 204 || h.Status == 304
}

// Scratch is reusable memory for parsing heads; one per upstream connection.
type Scratch struct {
	line []byte // a line longer than the reader's buffer
	vals []byte // every kept field value, back to back
	ents []headEntry
	conn []string // Connection values naming other fields
}

type headEntry struct {
	key      string
	off, end int32
}

// LineEnding says which line endings a line may have.
type LineEnding uint8

const (
	// CRLFOrLF: CRLF or a bare LF, as RFC 9112 §2.2 lets a recipient accept in
	// a head, and as net/http does.
	CRLFOrLF LineEnding = iota
	// CRLFOnly: CRLF alone, as in chunked framing (RFC 9112 §7.1, erratum 7633;
	// net/http since CVE-2025-22871): a bare LF there is read differently by
	// different parsers, which is how a request or response is smuggled.
	CRLFOnly
)

// ErrBareLF is a chunk line or trailer line that ends in LF without CR.
var ErrBareLF = &ProtocolError{"chunked framing line ends with a bare LF"}

// ReadLine returns the next line without its line ending, valid until the next
// read from br; *budget bytes may still be read, and is decreased.
func (sc *Scratch) ReadLine(br *bufio.Reader, budget *int, end LineEnding) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		sc.line = append(sc.line[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(sc.line) > *budget {
				return nil, errHeadTooLarge
			}
			line, err = br.ReadSlice('\n')
			sc.line = append(sc.line, line...)
		}
		line = sc.line
	}
	if err != nil {
		return nil, err
	}
	*budget -= len(line)
	if *budget < 0 {
		return nil, errHeadTooLarge
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	} else if end == CRLFOnly {
		return nil, ErrBareLF
	}
	return line, nil
}

// parseStatusLine parses "HTTP/1.x SP 3DIGIT [SP reason]".
func parseStatusLine(line []byte, h *ResponseHead) error {
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[7] < '0' || line[7] > '9' || line[8] != ' ' {
		return ProtoErr("malformed status line %q", Clip(line))
	}
	h.minor = int(line[7] - '0')
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return ProtoErr("malformed status code in %q", Clip(line))
		}
		code = code*10 + int(c-'0')
	}
	if code < 100 || code > 599 {
		return ProtoErr("status code %d out of range", code)
	}
	if len(line) > 12 && line[12] != ' ' {
		return ProtoErr("malformed status line %q", Clip(line))
	}
	for _, c := range line[12:] {
		if c != '\t' && (c < 0x20 || c == 0x7f) {
			return ProtoErr("control character in reason phrase")
		}
	}
	h.Status = code
	return nil
}

// Clip returns at most the first 64 bytes of b, for an error's text.
func Clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// FieldMode says what a header block is: a response head or a trailer section.
type FieldMode uint8

const (
	ModeHead FieldMode = iota
	ModeTrailer
)

// ReadFields reads header field lines up to the empty line and stores the ones to
// forward in dst, with canonical keys; in ModeTrailer the keys get
// http.TrailerPrefix, which makes net/http send them as trailers. h collects the
// framing and connection fields of a head. *budget bounds the bytes read, and is
// decreased.
func (sc *Scratch) ReadFields(br *bufio.Reader, dst http.Header, h *ResponseHead, mode FieldMode, budget *int) error {
	sc.vals, sc.ents, sc.conn = sc.vals[:0], sc.ents[:0], sc.conn[:0]
	clIndex := -1
	for {
		end := CRLFOrLF
		if mode == ModeTrailer {
			end = CRLFOnly // part of the chunked framing, as net/http wants it
		}
		line, err := sc.ReadLine(br, budget, end)
		if err != nil {
			return err
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return ProtoErr("obsolete line folding") // RFC 9112 §5.2 lets a proxy refuse it
		}
		colon := -1
		for i, c := range line {
			if c == ':' {
				colon = i
				break
			}
		}
		if colon <= 0 {
			return ProtoErr("malformed header line %q", Clip(line))
		}
		name := line[:colon]
		// RFC 9112 §5.1: a proxy removes whitespace before the colon. Spaces
		// only: net/http refuses a tab there, and so does the proxy.
		for len(name) > 0 && name[len(name)-1] == ' ' {
			name = name[:len(name)-1]
		}
		key, ok := canonicalKey(name)
		if !ok {
			return ProtoErr("invalid header name %q", Clip(name))
		}
		value := trimOWS(line[colon+1:])
		for _, c := range value {
			if c != '\t' && (c < 0x20 || c == 0x7f) {
				return ProtoErr("control character in header %s", key)
			}
		}
		if mode == ModeTrailer {
			if !TrailerForbidden(key) {
				sc.add(http.TrailerPrefix+key, value)
			}
			continue
		}
		switch key {
		case "Connection":
			if err := sc.connection(value, h); err != nil {
				return err
			}
			continue
		case "Transfer-Encoding":
			if err := transferEncoding(value, h); err != nil {
				return err
			}
			continue
		case "Content-Length":
			n, ok := ParseContentLength(value)
			if !ok || (h.Length >= 0 && n != h.Length) {
				return ProtoErr("invalid Content-Length %q", Clip(value))
			}
			if h.Length >= 0 {
				continue // a repeated, identical value
			}
			h.Length = n
			clIndex = len(sc.ents)
		case "Upgrade":
			if h.UpgradeTo != "" {
				h.UpgradeTo += ", "
			}
			h.UpgradeTo += string(value)
			continue
		}
		if ResponseSkipped(key) {
			continue
		}
		sc.add(key, value)
	}
	if mode == ModeHead {
		if h.Chunked {
			// RFC 9112 §6.1: HTTP/1.0 has no Transfer-Encoding, and such a
			// message's framing is faulty (net/http reads the body raw to the
			// end of the connection; the proxy refuses it).
			if h.minor == 0 {
				return ProtoErr("Transfer-Encoding in an HTTP/1.0 response")
			}
			// RFC 9112 §6.3: Transfer-Encoding wins over Content-Length, and
			// a message with both ends its connection.
			if h.Length >= 0 {
				h.Close = true
			}
			h.Length = -1
		}
		// A 204 has no body (RFC 9110 §15.3.5): one announced may still come,
		// and would be read as the next response, so the connection ends.
		if h.Status == 204 && (h.Chunked || h.Length > 0) {
			h.Close = true
		}
		// The proxy's server frames the body itself: it keeps a Content-Length
		// only where one is allowed and means the body to come.
		if clIndex >= 0 && (h.Chunked || h.Status < 200 || h.Status == 204) {
			sc.ents[clIndex].key = ""
		}
	}
	sc.flush(dst)
	return nil
}

func (sc *Scratch) add(key string, value []byte) {
	off := len(sc.vals)
	sc.vals = append(sc.vals, value...)
	sc.ents = append(sc.ents, headEntry{key: key, off: int32(off), end: int32(len(sc.vals))})
}

// flush moves the collected fields into dst: one string for all values and one
// slice for all of their []string, whatever their number.
func (sc *Scratch) flush(dst http.Header) {
	if len(sc.ents) == 0 {
		return
	}
	s := string(sc.vals)
	strs := make([]string, len(sc.ents))
	for i, e := range sc.ents {
		if e.key == "" {
			continue
		}
		strs[i] = s[e.off:e.end]
		if old, ok := dst[e.key]; ok {
			dst[e.key] = append(old, strs[i])
		} else {
			dst[e.key] = strs[i : i+1 : i+1]
		}
	}
	for _, v := range sc.conn {
		for s := v; ; {
			tok, rest, ok := NextToken(s)
			if !ok {
				break
			}
			delete(dst, textproto.CanonicalMIMEHeaderKey(tok))
			s = rest
		}
	}
}

// connection records a Connection value (RFC 9110 §7.6.1).
func (sc *Scratch) connection(value []byte, h *ResponseHead) error {
	named := false
	for s := string(value); ; { // converted once per Connection field; rare beyond keep-alive
		tok, rest, ok := NextToken(s)
		if !ok {
			break
		}
		switch {
		case strings.EqualFold(tok, "close"):
			h.Close = true
		case strings.EqualFold(tok, "keep-alive"):
			if h.minor == 0 {
				h.Close = false
			}
		case strings.EqualFold(tok, "upgrade"):
			h.Upgrade = true
		default:
			named = true
		}
		s = rest
	}
	if named {
		sc.conn = append(sc.conn, string(value))
	}
	return nil
}

// transferEncoding records a Transfer-Encoding value. Only "chunked" is supported,
// as in net/http's Transport; anything else cannot be framed and is an error.
func transferEncoding(value []byte, h *ResponseHead) error {
	if h.Chunked || !strings.EqualFold(string(trimOWS(value)), "chunked") {
		return ProtoErr("unsupported Transfer-Encoding %q", Clip(value))
	}
	h.Chunked = true
	return nil
}

// ParseContentLength parses a Content-Length value: 1 to 18 digits. A list of
// values, even identical ones ("5, 5", which RFC 9110 §8.6 lets a recipient
// take), is refused, as net/http and nginx refuse it; repeated identical
// fields are taken (see ReadFields), as net/http takes them.
func ParseContentLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// IsTokenByte reports whether c may appear in a field name (RFC 9110 §5.6.2 tchar).
func IsTokenByte(c byte) bool {
	return tokenTable[c]
}

var tokenTable = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// CommonKeys interns the canonical names of frequent fields so that parsing them
// does not allocate.
var CommonKeys = func() map[string]string {
	m := make(map[string]string)
	for _, k := range []string{
		"Accept-Ranges", "Access-Control-Allow-Credentials", "Access-Control-Allow-Headers",
		"Access-Control-Allow-Methods", "Access-Control-Allow-Origin", "Access-Control-Expose-Headers",
		"Access-Control-Max-Age", "Age", "Allow", "Alt-Svc", "Cache-Control", "Connection",
		"Content-Disposition", "Content-Encoding", "Content-Language", "Content-Length",
		"Content-Location", "Content-Range", "Content-Security-Policy", "Content-Type", "Date",
		"Etag", "Expires", "Grpc-Message", "Grpc-Status", "Keep-Alive", "Last-Modified", "Link",
		"Location", "Pragma", "Proxy-Authenticate", "Proxy-Connection", "Referrer-Policy",
		"Retry-After", "Server", "Set-Cookie", "Strict-Transport-Security", "Te", "Trailer",
		"Transfer-Encoding", "Upgrade", "Vary", "Via", "Www-Authenticate", "X-Content-Type-Options",
		"X-Frame-Options", "X-Powered-By", "X-Request-Id", "X-Xss-Protection",
		"Ratelimit", "Ratelimit-Policy", "Sec-Websocket-Accept", "Sec-Websocket-Protocol",
		"Sec-Websocket-Extensions", "Sluice-Reason",
	} {
		m[k] = k
	}
	return m
}()

// canonicalKey returns the canonical form of a field name (net/textproto's: upper
// case at the start and after '-', lower case elsewhere), or ok == false if name
// is not a token. Frequent names cost no allocation.
func canonicalKey(name []byte) (string, bool) {
	var buf [64]byte
	if len(name) == 0 {
		return "", false
	}
	if len(name) > len(buf) {
		for _, c := range name {
			if !IsTokenByte(c) {
				return "", false
			}
		}
		return textproto.CanonicalMIMEHeaderKey(string(name)), true
	}
	upper := true
	for i, c := range name {
		if !IsTokenByte(c) {
			return "", false
		}
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
		upper = c == '-'
	}
	k := buf[:len(name)]
	if s, ok := CommonKeys[string(k)]; ok {
		return s, true
	}
	return string(k), true
}

// ReadResponseHead reads a response head from br into dst. *budget bounds its
// size, and is decreased.
func (sc *Scratch) ReadResponseHead(br *bufio.Reader, dst http.Header, budget *int) (ResponseHead, error) {
	h := ResponseHead{Length: -1}
	line, err := sc.ReadLine(br, budget, CRLFOrLF)
	if err != nil {
		return h, err
	}
	if err := parseStatusLine(line, &h); err != nil {
		return h, err
	}
	h.Close = h.minor == 0 // HTTP/1.0 closes unless it says keep-alive
	if err := sc.ReadFields(br, dst, &h, ModeHead, budget); err != nil {
		return h, err
	}
	return h, nil
}
