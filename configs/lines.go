package configs

import (
	"strings"

	"github.com/BurntSushi/toml"
)

// The TOML library reports a line for syntax errors but keeps the line of
// each key to itself (and, for arrays of tables, keeps only the last one).
// It does list every key in document order (MetaData.Keys). So keyLines
// scans the already parsed document for where each key starts, in the same
// order, and pairs the two lists. The scanner only has to find key starts in
// valid TOML; if its count ever disagrees with the library's, no lines are
// given at all rather than wrong ones.

// keyKind is what kind of line a key starts.
type keyKind uint8

const (
	keyValue      keyKind = iota // key = value, also inside an inline table
	keyTable                     // [table]
	keyArrayTable                // [[array]]
)

type keyStart struct {
	keyPos
	kind keyKind
}

// keyLines maps the path of every key in data (as the decoder spells it,
// "group[1].rate.burst") to where it starts. keys is MetaData.Keys() for
// the same data.
func keyLines(data string, keys []toml.Key) map[string]keyPos {
	starts := scanKeys(data)
	if len(starts) != len(keys) {
		return nil
	}
	lines := make(map[string]keyPos, len(keys))
	count := map[string]int{} // array of tables, by its plain name → elements so far
	for i, k := range keys {
		if starts[i].kind == keyArrayTable {
			name := k.String()
			count[name]++
			// A new element starts with no elements of nested arrays.
			for other := range count {
				if strings.HasPrefix(other, name+".") {
					delete(count, other)
				}
			}
		}
		path, array := "", ""
		for j := range k {
			path = join(path, k[j])
			if n := count[toml.Key(k[:j+1]).String()]; n > 0 {
				array, path = path, index(path, n-1)
			}
		}
		if _, seen := lines[path]; !seen {
			lines[path] = starts[i].keyPos
		}
		// The array itself ("group", for a problem with the whole array, such
		// as an unknown name) starts at its first element's header.
		if _, seen := lines[array]; starts[i].kind == keyArrayTable && !seen {
			lines[array] = starts[i].keyPos
		}
	}
	return lines
}

// scanKeys returns where each key of a valid TOML document starts, in
// document order: table headers, array-of-tables headers, and the keys of
// key/value pairs, inline tables included.
func scanKeys(data string) []keyStart {
	s := &scanner{s: data, line: 1}
	if strings.HasPrefix(data, utf8BOM) { // skipped by the library too
		s.i = len(utf8BOM)
	}
	s.document()
	return s.out
}

type scanner struct {
	s    string
	i    int
	line int
	out  []keyStart
}

func (s *scanner) start(kind keyKind) keyStart {
	return keyStart{keyPos{line: s.line, offset: s.i}, kind}
}

func (s *scanner) peek(prefix string) bool { return strings.HasPrefix(s.s[s.i:], prefix) }

// advance moves n bytes on, counting newlines.
func (s *scanner) advance(n int) {
	end := min(s.i+n, len(s.s))
	s.line += strings.Count(s.s[s.i:end], "\n")
	s.i = end
}

// space skips blanks, newlines (if nl) and comments.
func (s *scanner) space(nl bool) {
	for s.i < len(s.s) {
		switch c := s.s[s.i]; {
		case c == ' ' || c == '\t' || c == '\r':
			s.i++
		case c == '\n' && nl:
			s.advance(1)
		case c == '#':
			for s.i < len(s.s) && s.s[s.i] != '\n' {
				s.i++
			}
		default:
			return
		}
	}
}

func (s *scanner) document() {
	for {
		s.space(true)
		if s.i >= len(s.s) {
			return
		}
		start := s.i
		switch {
		case s.peek("[["):
			s.out = append(s.out, s.start(keyArrayTable))
			s.advance(2)
			s.key()
			s.skipPrefix("]]")
		case s.peek("["):
			s.out = append(s.out, s.start(keyTable))
			s.advance(1)
			s.key()
			s.skipPrefix("]")
		default:
			s.keyValue(false)
		}
		if s.i == start { // not valid TOML after all; never loop forever
			s.advance(1)
		}
	}
}

func (s *scanner) skipPrefix(p string) {
	s.space(false)
	if s.peek(p) {
		s.advance(len(p))
	}
}

// keyValue skips "key = value" and records the key.
func (s *scanner) keyValue(nl bool) {
	s.out = append(s.out, s.start(keyValue))
	s.key()
	s.space(nl)
	if s.peek("=") {
		s.advance(1)
	}
	s.space(nl)
	s.value()
}

// key skips a possibly dotted, possibly quoted key.
func (s *scanner) key() {
	for s.i < len(s.s) {
		s.space(false)
		if s.i >= len(s.s) {
			return
		}
		switch c := s.s[s.i]; c {
		case '"':
			s.quoted('"', 1, true)
		case '\'':
			s.quoted('\'', 1, false)
		case '.':
			s.advance(1)
		case '=', ']', '\n', '#', '}', ',':
			return
		default:
			for s.i < len(s.s) && !strings.ContainsRune(" \t\r\n=.]#\"'},", rune(s.s[s.i])) {
				s.i++
			}
		}
	}
}

// value skips one value: a string, array, inline table or scalar.
func (s *scanner) value() {
	switch {
	case s.peek(`"""`):
		s.quoted('"', 3, true)
	case s.peek(`'''`):
		s.quoted('\'', 3, false)
	case s.peek(`"`):
		s.quoted('"', 1, true)
	case s.peek(`'`):
		s.quoted('\'', 1, false)
	case s.peek("["):
		s.sequence("]", s.value)
	case s.peek("{"):
		s.sequence("}", func() { s.keyValue(true) })
	default: // number, boolean, date-time (which may hold a space)
		for s.i < len(s.s) && !strings.ContainsRune(",]}#\r\n", rune(s.s[s.i])) {
			s.i++
		}
	}
}

// sequence skips an array or inline table: items, each skipped by item,
// separated by commas, up to end.
func (s *scanner) sequence(end string, item func()) {
	s.advance(1)
	for s.i < len(s.s) {
		s.space(true)
		if s.peek(end) {
			s.advance(1)
			return
		}
		start := s.i
		if s.peek(",") {
			s.advance(1)
		} else {
			item()
		}
		if s.i == start {
			s.advance(1)
		}
	}
}

// quoted skips a string opened by n (1 or 3) quotes q, with backslash
// escapes if esc. A one-line string stops at a newline; a multi-line one
// ends at three quotes, of a run of up to five (the first two of five then
// belong to the string).
func (s *scanner) quoted(q byte, n int, esc bool) {
	s.advance(n)
	closing := strings.Repeat(string(q), n)
	for s.i < len(s.s) {
		c := s.s[s.i]
		switch {
		case esc && c == '\\':
			s.advance(2)
		case c == '\n' && n == 1:
			return
		case s.peek(closing):
			run, longest := 0, n
			if n == 3 {
				longest = 5
			}
			for s.i+run < len(s.s) && s.s[s.i+run] == q && run < longest {
				run++
			}
			s.advance(run)
			return
		default:
			s.advance(1)
		}
	}
}
