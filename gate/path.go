package gate

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// Errors of NormalPath: each names why a path is refused.
var (
	// ErrPathEscapes is a path whose ".." segments climb above the root.
	ErrPathEscapes = errors.New(`the path climbs above the root with ".."`)
	// ErrPathSeparator is a path with an encoded slash (%2F), a backslash or
	// an encoded one (%5C): upstreams disagree on whether it separates
	// segments.
	ErrPathSeparator = errors.New("the path holds an encoded slash or a backslash, which upstreams read in different ways")
	// ErrPathParameter is a "." or ".." segment with parameters (";x", or
	// "%3Bx"), which some upstreams (Tomcat, Jetty) read as a dot segment
	// and others as a name.
	ErrPathParameter = errors.New(`the path has a "." or ".." segment with ";" parameters, which upstreams read in different ways`)
	// ErrPathEncoding is a path with a malformed percent-encoding, or one of
	// a control character (%00 to %1F, %7F).
	ErrPathEncoding = errors.New("the path holds a malformed percent-encoding or an encoded control character")
	// ErrPathSpace is a path with a raw space or control character (which no
	// client sends: HTTP/1.1 cannot carry it, an HTTP/2 :path can), or with
	// an encoded space at either end of a segment's name ("/login%20"),
	// which some upstreams trim and others keep.
	ErrPathSpace = errors.New("the path holds a raw space or control character, or a segment that begins or ends with an encoded space, which upstreams read in different ways")
	// ErrPathFragment is a request-target with a raw "#": a fragment never
	// leaves the client, and upstreams cut the path there or not.
	ErrPathFragment = errors.New(`the path holds a raw "#" (a fragment, which clients never send)`)
)

// NormalPath normalises escaped, a request path as it came on the wire (its
// escaped form, without the query), so that groups are matched on the path
// the upstream is sent:
//
//   - percent-encoded unreserved characters (letters, digits, "-", ".", "_",
//     "~") are decoded, as RFC 3986 §6.2.2.2 makes them equivalent ("%2e" is
//     ".", "%41" is "A"); other encodings are kept, with upper-case hex
//     digits;
//   - empty segments are dropped ("//" is "/", as nginx's merge_slashes);
//   - "." segments are dropped and ".." segments remove the segment before
//     them (RFC 3986 §5.2.4); a path that ends in one keeps its trailing "/".
//
// It refuses, with one of the ErrPath errors, what upstreams read in
// different ways or no client sends: ".." above the root (nginx answers 400
// too), an encoded slash (%2F) or any backslash, raw or %5C (nginx decodes
// %2F into a separator for its own matching but forwards it encoded; Apache
// refuses it by default), a "." or ".." segment with ";" parameters raw or
// encoded (Tomcat reads "/..;/" as "/../"), a malformed encoding or one of a
// control character ("%00", "%0A"), a raw space or control character (an
// HTTP/2 :path can hold one), a segment whose name begins or ends with an
// encoded space ("/login%20": some upstreams trim it), and a raw "#".
//
// forward is the normalised path in its escaped form, to be sent upstream;
// match is its decoded form, which groups' path and path_prefix are compared
// with (and the key "path") once the ";" parameters of its segments are set
// aside (Gate.ClassifyPath does: "/login;jsessionid=x" and "/login%3Bx" are
// matched as "/login", as Tomcat and Spring route them). "*" (OPTIONS *) and
// "" are returned as "*" and "/". A path already normal (the common case: no
// "%", no "//", no dot segment, no backslash, no whitespace, control
// character or "#") is returned as it is for both, without allocating.
// NormalPath is idempotent: a normalised path normalises to itself.
func NormalPath(escaped string) (forward, match string, err error) {
	switch {
	case escaped == "*":
		return "*", "*", nil
	case escaped == "" || escaped[0] != '/':
		escaped = "/" + escaped
	}
	if isNormal(escaped) {
		return escaped, escaped, nil
	}
	forward, err = normalize(escaped)
	if err != nil {
		return "", "", err
	}
	if strings.IndexByte(forward, '%') < 0 {
		return forward, forward, nil
	}
	match, err = url.PathUnescape(forward)
	if err != nil { // cannot happen: normalize checked every escape
		return "", "", ErrPathEncoding
	}
	return forward, match, nil
}

// isNormal reports whether the absolute path p needs no work: no "%", no
// backslash, no whitespace, control character or "#", no empty segment but
// a trailing one, no dot segment and no ";" right after a leading dot of a
// segment.
func isNormal(p string) bool {
	start := 1 // of the current segment
	for i := 1; i <= len(p); i++ {
		if i < len(p) {
			switch c := p[i]; {
			case c == '%', c == '\\', c == '#', c <= ' ', c == 0x7f:
				return false
			case c == ';':
				if seg := p[start:i]; seg == "." || seg == ".." {
					return false
				}
			}
			if p[i] != '/' {
				continue
			}
		}
		switch seg := p[start:i]; seg {
		case ".", "..":
			return false
		case "":
			if i < len(p) {
				return false // "//" (a trailing "/" is fine)
			}
		}
		start = i + 1
	}
	return true
}

// normalize does NormalPath's work on an absolute path that is not normal.
func normalize(p string) (string, error) {
	out := make([]byte, 0, len(p))
	var seg []byte // the current segment, decoded as NormalPath says
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			last := i == len(p)
			switch string(seg) {
			case ".":
				if last {
					out = append(out, '/')
				}
			case "..":
				j := bytes.LastIndexByte(out, '/')
				if j < 0 {
					return "", ErrPathEscapes
				}
				out = out[:j]
				if last {
					out = append(out, '/')
				}
			case "":
				if last && (len(out) == 0 || out[len(out)-1] != '/') {
					out = append(out, '/')
				}
			default:
				if err := checkSegment(seg); err != nil {
					return "", err
				}
				out = append(out, '/')
				out = append(out, seg...)
			}
			seg = seg[:0]
			continue
		}
		switch c := p[i]; {
		case c == '\\':
			return "", ErrPathSeparator
		case c == '#':
			return "", ErrPathFragment
		case c <= ' ' || c == 0x7f:
			return "", ErrPathSpace
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return "", ErrPathEncoding
			}
			b := unhex(p[i+1])<<4 | unhex(p[i+2])
			i += 2
			switch {
			case b < ' ' || b == 0x7f:
				return "", ErrPathEncoding
			case b == '/' || b == '\\':
				return "", ErrPathSeparator
			case isUnreserved(b):
				seg = append(seg, b)
			default:
				seg = append(seg, '%', upperHex[b>>4], upperHex[b&15])
			}
		default:
			seg = append(seg, c)
		}
	}
	if len(out) == 0 {
		out = append(out, '/')
	}
	return string(out), nil
}

// checkSegment refuses a segment (escapes kept, in upper case) that
// upstreams read in different ways: a "." or ".." name with parameters
// (";" or "%3B" after it), or a name that begins or ends with an encoded
// space.
func checkSegment(seg []byte) error {
	name := seg
	if i := paramsAt(seg); i >= 0 {
		name = seg[:i]
		if n := string(name); n == "." || n == ".." {
			return ErrPathParameter
		}
	}
	if bytes.HasPrefix(name, encodedSpace) || bytes.HasSuffix(name, encodedSpace) {
		return ErrPathSpace
	}
	return nil
}

var encodedSpace = []byte("%20")

// paramsAt returns where the parameters of a segment (escapes kept, in
// upper case) begin, at its first ";" raw or encoded, or -1.
func paramsAt(seg []byte) int {
	for i, c := range seg {
		if c == ';' || c == '%' && i+2 < len(seg) && seg[i+1] == '3' && seg[i+2] == 'B' {
			return i
		}
	}
	return -1
}

const upperHex = "0123456789ABCDEF"

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// isUnreserved reports whether c is an RFC 3986 unreserved character, which
// means the same encoded or not.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// RequestPath returns r's path as it came on the wire, escaped, without the
// query: from the request-target (RequestURI) when it is in origin form
// ("/a/b?c"), else from the URL (absolute form, or a request built in
// process). NormalPath takes it.
func RequestPath(r *http.Request) string {
	if u := r.RequestURI; u != "" && u[0] == '/' {
		if i := strings.IndexByte(u, '?'); i >= 0 {
			return u[:i]
		}
		return u
	}
	if r.URL == nil {
		return "/"
	}
	if r.URL.Opaque != "" {
		return r.URL.Opaque
	}
	return r.URL.EscapedPath()
}
