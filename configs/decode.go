package configs

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/internal/check"
	"github.com/sluicehq/sluice/internal/durtext"
)

// utf8BOM is the UTF-8 byte order mark, which a TOML file may start with.
const utf8BOM = "\xef\xbb\xbf"

// badText returns the problem of data that is not TOML text, or nil. TOML
// files are UTF-8 (a UTF-8 byte order mark allowed) with no control
// characters but tab and line ends (a carriage return alone, allowed in
// multi-line strings only, is left to the parser). The TOML library skips a
// UTF-16 byte order mark and reads on, so a file that starts with one can
// load as a config that has nothing in it; a byte that is not UTF-8 is a
// syntax error to it, and a control character that starts a line is put on
// the line before. This check runs first and says what is wrong and where: a
// UTF-16 byte order mark, NUL bytes first (UTF-16 text of ASCII characters
// without a mark), or the line and column of the first byte that is not
// UTF-8 or is a control character.
func badText(name string, data []byte) *Error {
	const fix = "; save the file as UTF-8"
	switch {
	case bytes.HasPrefix(data, []byte("\xff\xfe")):
		return &Error{File: name, Line: 1, Msg: "not UTF-8: the file starts with a UTF-16 (little-endian) byte order mark" + fix}
	case bytes.HasPrefix(data, []byte("\xfe\xff")):
		return &Error{File: name, Line: 1, Msg: "not UTF-8: the file starts with a UTF-16 (big-endian) byte order mark" + fix}
	case bytes.IndexByte(data[:min(len(data), 2)], 0) >= 0:
		return &Error{File: name, Line: 1, Msg: "not UTF-8: NUL bytes, as in UTF-16 without a byte order mark" + fix}
	}
	text := bytes.TrimPrefix(data, []byte(utf8BOM))
	at := func(i int) (line, column int) {
		start := bytes.LastIndexByte(text[:i], '\n') + 1
		return 1 + bytes.Count(text[:i], []byte("\n")), 1 + utf8.RuneCount(text[start:i])
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			line, col := at(i)
			return &Error{File: name, Line: line, Msg: fmt.Sprintf("not UTF-8: byte 0x%02x at column %d%s", text[i], col, fix)}
		case (r < 0x20 || r == 0x7f) && r != '\t' && r != '\n' && r != '\r':
			line, col := at(i)
			return &Error{File: name, Line: line, Msg: fmt.Sprintf("control character %U at column %d: TOML allows none but tab and line ends", r, col)}
		}
		i += size
	}
	return nil
}

// decoder fills a Config from the generic tree the TOML library parsed
// (tables as map[string]any, arrays as []any or []map[string]any, and
// string, int64, float64, bool and time.Time leaves). Unlike decoding
// straight into the struct, it does not stop at the first problem: an
// unknown key, a value of the wrong type or a malformed duration is
// recorded with its path and line, the field keeps its default, and
// decoding goes on.
type decoder struct {
	ck *checker
}

// fail records a problem at path and marks the path so that validation does
// not report its stand-in value again.
func (d *decoder) fail(path, format string, args ...any) {
	d.ck.errorf(path, format, args...)
	if d.ck.src != nil {
		d.ck.src.markBad(path)
	}
}

// table decodes the TOML table m into the struct rv, addressable.
func (d *decoder) table(path string, m map[string]any, rv reflect.Value) {
	fields := tomlFields(rv.Type())
	for _, key := range d.sortedKeys(path, m) {
		p := join(path, key)
		i, ok := fields[key]
		if !ok {
			d.ck.errorf(p, "unknown key%s", suggest(rv.Type(), key, fields))
			d.standIn(path, key, m, rv, fields)
			continue
		}
		d.value(p, m[key], rv.Field(i))
	}
}

// sortedKeys orders the keys of m as they appear in the file, so that
// problems on one line come out in a stable order.
func (d *decoder) sortedKeys(path string, m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		oa, ob := d.ck.src.offset(join(path, a)), d.ck.src.offset(join(path, b))
		return cmp.Or(cmp.Compare(oa, ob), strings.Compare(a, b))
	})
	return keys
}

// value decodes one TOML value v into rv.
func (d *decoder) value(path string, v any, rv reflect.Value) {
	t := rv.Type()
	switch {
	case t == durtext.Text || t == durtext.Type:
		s, ok := v.(string)
		if !ok {
			d.fail(path, `must be a duration string such as "250ms", got %s`, describe(v))
			return
		}
		dur, err := durtext.Parse(s)
		if err != nil {
			d.fail(path, "%v", err)
			return
		}
		rv.SetInt(int64(dur))
	case t.Kind() == reflect.String:
		s, ok := v.(string)
		if !ok {
			d.fail(path, "must be a string, got %s", describe(v))
			return
		}
		rv.SetString(s)
	case t.Kind() == reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.fail(path, "must be true or false, got %s", describe(v))
			return
		}
		rv.SetBool(b)
	case t.Kind() == reflect.Int:
		n, ok := v.(int64)
		if !ok {
			d.fail(path, "must be an integer, got %s", describe(v))
			return
		}
		if rv.OverflowInt(n) {
			d.fail(path, "integer %d is too large", n)
			return
		}
		rv.SetInt(n)
	case t.Kind() == reflect.Float64:
		switch n := v.(type) {
		case float64:
			rv.SetFloat(n)
		case int64:
			rv.SetFloat(float64(n))
		default:
			d.fail(path, "must be a number, got %s", describe(v))
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		d.strings(path, v, rv)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		d.tables(path, v, rv)
	case t.Kind() == reflect.Map:
		d.stringMap(path, v, rv)
	case t.Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(path, "must be a table, got %s", describe(v))
			return
		}
		d.table(path, m, rv)
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(path, "must be a table, got %s", describe(v))
			return
		}
		p := reflect.New(t.Elem())
		reset(p.Interface())
		d.table(path, m, p.Elem())
		rv.Set(p)
	default:
		panic("configs: no decoder for " + t.String()) // a schema bug, caught by the tests
	}
}

// strings decodes an array of strings.
func (d *decoder) strings(path string, v any, rv reflect.Value) {
	arr, ok := v.([]any)
	if !ok {
		d.fail(path, "must be an array of strings, got %s", describe(v))
		return
	}
	out := reflect.MakeSlice(rv.Type(), 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			d.fail(index(path, i), "must be a string, got %s", describe(e))
			continue
		}
		out = reflect.Append(out, reflect.ValueOf(s).Convert(rv.Type().Elem()))
	}
	rv.Set(out)
}

// tables decodes an array of tables ([[group]] or an inline array of
// inline tables); each element starts from its type's static defaults.
func (d *decoder) tables(path string, v any, rv reflect.Value) {
	var elems []map[string]any
	switch arr := v.(type) {
	case []map[string]any:
		elems = arr
	case []any:
		for i, e := range arr {
			m, ok := e.(map[string]any)
			if !ok {
				d.fail(index(path, i), "must be a table, got %s", describe(e))
				return
			}
			elems = append(elems, m)
		}
	default:
		d.fail(path, "must be an array of tables ([[%s]]), got %s", path, describe(v))
		return
	}
	out := reflect.MakeSlice(rv.Type(), len(elems), len(elems))
	for i, m := range elems {
		e := out.Index(i)
		reset(e.Addr().Interface())
		d.table(index(path, i), m, e)
	}
	rv.Set(out)
}

// stringMap decodes a table of strings, such as match.headers.
func (d *decoder) stringMap(path string, v any, rv reflect.Value) {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(path, "must be a table of strings, got %s", describe(v))
		return
	}
	out := reflect.MakeMapWithSize(rv.Type(), len(m))
	for _, k := range d.sortedKeys(path, m) {
		s, ok := m[k].(string)
		if !ok {
			d.fail(join(path, k), "must be a string, got %s", describe(m[k]))
			continue
		}
		out.SetMapIndex(reflect.ValueOf(k), reflect.ValueOf(s))
	}
	rv.Set(out)
}

// tomlFields maps the TOML key of each field of the struct type t to its
// index.
func tomlFields(t reflect.Type) map[string]int {
	fields := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = i
	}
	return fields
}

// describe names the TOML type of v and shows the value, for messages.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:37] + "..."
		}
		return "string " + strconv.Quote(x)
	case int64:
		return "integer " + strconv.FormatInt(x, 10)
	case float64:
		return "float " + check.Float(x)
	case bool:
		return "boolean " + strconv.FormatBool(x)
	case time.Time:
		return "a date-time"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

// moved gives a hint for keys an operator may reasonably write that are
// spelled differently here, by table type and key.
var moved = map[reflect.Type]map[string]string{
	reflect.TypeFor[Server](): {
		"upstream": `; the upstream is set in [upstream] as url = "http://host:port"`,
	},
	reflect.TypeFor[spec.Targets](): {
		"latency_p50":   `; write latency = "200ms" and quantile = 0.5`,
		"latency_p90":   `; write latency = "200ms" and quantile = 0.9`,
		"latency_p95":   `; write latency = "200ms" and quantile = 0.95`,
		"latency_p99":   `; write latency = "200ms" and quantile = 0.99`,
		"latency_p999":  `; write latency = "200ms" and quantile = 0.999`,
		"latency_p99.9": `; write latency = "200ms" and quantile = 0.999`,
	},
	reflect.TypeFor[spec.Group](): {
		"limit":   `; a fixed concurrency limit is [group.concurrency] law = "fixed" and limit`,
		"circuit": `; the circuit breaker is the upstream's: [upstream.circuit]`,
		"max_concurrency": `; the most requests in the upstream at once is [group.concurrency] max, ` +
			`the bound of an adaptive law (or limit, with law = "fixed")`,
		"concurrency_limit": `; the concurrency limit is [group.concurrency] limit, with law = "fixed" ` +
			`(an adaptive law moves it between min and max)`,
	},
	reflect.TypeFor[spec.Concurrency](): {
		"max_concurrency": `; the largest limit of an adaptive law is max (with law = "fixed", limit)`,
	},
}

// standIn decodes the value of the unknown key in table m (of struct rv,
// at path) as the key it most likely means, when that key is a table or an
// array of tables the file does not also spell right: its problems are then
// reported too, at the file's lines, under the right key. Else a typo such
// as [[groups]] would hide every problem of every group until it is fixed.
func (d *decoder) standIn(path, key string, m map[string]any, rv reflect.Value, fields map[string]int) {
	best := nearest(key, fields)
	if best == "" || m[best] != nil || d.ck.src == nil {
		return
	}
	f := rv.Field(fields[best])
	t, v := f.Type(), m[key]
	_, shaped := v.(map[string]any)
	switch t.Kind() {
	case reflect.Slice:
		t = t.Elem()
		_, shaped = v.([]map[string]any) // an array of tables
	case reflect.Pointer:
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || !shaped {
		return // a plain value, or not the shape of the key meant: nothing to read as it
	}
	d.ck.src.alias(join(path, key), join(path, best))
	d.value(join(path, best), m[key], f)
}

// alias gives the keys under path to (to, to.x, to[i]...) the lines of
// those under from, for a stand-in decoded at to (decoder.standIn).
func (s *source) alias(from, to string) {
	for k, pos := range s.lines {
		if rest, ok := strings.CutPrefix(k, from); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			if _, taken := s.lines[to+rest]; !taken {
				s.lines[to+rest] = pos
			}
		}
	}
}

// suggest returns a hint for an unknown key: a known spelling (moved: the
// key, or one within two edits of it), or the nearest known key.
func suggest(t reflect.Type, key string, fields map[string]int) string {
	if h, ok := moved[t][key]; ok {
		return h
	}
	for _, k := range slices.Sorted(maps.Keys(moved[t])) {
		if len(k) > 6 && EditDistance(key, k) <= 2 {
			return moved[t][k]
		}
	}
	if best := nearest(key, fields); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// nearest returns the known key nearest an unknown one, within two edits
// and half its length; "" for none.
func nearest(key string, fields map[string]int) string {
	best, bestDist := "", 3
	for name := range fields {
		if dist := EditDistance(key, name); dist < bestDist || dist == bestDist && name < best {
			best, bestDist = name, dist
		}
	}
	if best == "" || bestDist > len(key)/2 {
		return ""
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, in bytes: the
// fewest single-byte insertions, deletions and substitutions that turn one
// into the other. It serves to suggest a known key for a misspelled one,
// here and in the admin API's PATCH. A string longer than 64 bytes is no
// misspelling of a key: for it EditDistance returns math.MaxInt without the
// quadratic work, so hostile input stays cheap. Safe for concurrent use.
func EditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
