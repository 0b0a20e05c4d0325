package h1

// ParseChunkSize parses the line that starts an HTTP/1.1 chunk (RFC 9112 §7.1):
// a hexadecimal size, optional whitespace, and optional extensions after ';',
// which are ignored. A size of more than 16 digits (leading zeros too, as
// net/http counts them) or beyond 2^63-1 is refused.
func ParseChunkSize(line []byte) (int64, error) {
	var n int64
	i := 0
	for ; i < len(line); i++ {
		c := line[i]
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			goto rest
		}
		if i == 16 || n >= 1<<59 { // net/http's bound is 16 digits
			return 0, ProtoErr("chunk size too large")
		}
		n = n<<4 | int64(d)
	}
rest:
	if i == 0 {
		return 0, ProtoErr("malformed chunk size %q", Clip(line))
	}
	for ; i < len(line) && (line[i] == ' ' || line[i] == '\t'); i++ {
	}
	if i < len(line) && line[i] != ';' {
		return 0, ProtoErr("malformed chunk size %q", Clip(line))
	}
	for ; i < len(line); i++ {
		if c := line[i]; c != '\t' && (c < 0x20 || c == 0x7f) {
			return 0, ProtoErr("control character in chunk extension")
		}
	}
	return n, nil
}

// AppendChunkHeader appends the size line of a chunk of n bytes.
func AppendChunkHeader(b []byte, n int) []byte {
	const hex = "0123456789abcdef"
	var tmp [16]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = hex[n&0xf]
		n >>= 4
		if n == 0 {
			break
		}
	}
	b = append(b, tmp[i:]...)
	return append(b, '\r', '\n')
}
