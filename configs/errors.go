package configs

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/check"
)

// Error is one problem in a configuration. Its text is
//
//	FILE:LINE: PATH: MESSAGE
//
// where FILE is the name the config was loaded under, LINE the line of the
// key in the file, and PATH the full key path with array indexes, such as
// "group[1].rate.burst". Parts that are unknown are left out with their
// separator: "line 7: group[0].concurency: unknown key" for a file without
// a name, "admin.listen: ..." for a value that is not in any file (a
// default, or a config built in Go). MESSAGE is lower case and says what is
// wrong and, where it helps, what would be right.
type Error struct {
	File string // file name as given to Load or Parse; "" if none
	Line int    // 1-based line of the key; 0 if unknown
	Path string // full key path, such as "group[1].rate.burst"; "" for the file as a whole
	Msg  string // what is wrong
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a configuration, ordered by line, with
// problems that have no line last. Load, Parse, Validate and ReplaceGroup
// return their problems as an Errors; range over it to report each one.
type Errors []*Error

// Error joins the problems one per line, each indented by two spaces (not a
// tab: a log line quotes a tab as "\t"), after a "configs: " prefix.
func (es Errors) Error() string {
	switch len(es) {
	case 0:
		return "configs: no errors"
	case 1:
		return "configs: " + es[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "configs: %d problems:", len(es))
	for _, e := range es {
		b.WriteString("\n  " + e.Error())
	}
	return b.String()
}

// err returns es as an error: nil when empty.
func (es Errors) err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// sort orders es by line, problems without a line last, keeping the order
// in which they were found among equals.
func (es Errors) sort() {
	slices.SortStableFunc(es, func(a, b *Error) int {
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Line, b.Line)
	})
}

// source is what a config remembers of the file it was read from, so that
// problems found later can name a line.
type source struct {
	file     string
	lines    map[string]keyPos // key path → where it starts
	bad      map[string]bool   // key paths that failed to decode
	badBelow map[string]bool   // key paths with a descendant in bad
}

// keyPos is where a key starts: its 1-based line, and its byte offset, which
// orders keys that share a line.
type keyPos struct{ line, offset int }

// offset returns the byte offset of path in the file, or -1.
func (s *source) offset(path string) int {
	if pos, ok := s.lines[path]; ok && s != nil {
		return pos.offset
	}
	return -1
}

// line returns the line of path, or of its nearest ancestor in the file, or
// 0. A value filled in by a default has no line of its own; its table's line
// is the best place to point at.
func (s *source) line(path string) int {
	if s == nil {
		return 0
	}
	for p := path; p != ""; p = parentPath(p) {
		if pos, ok := s.lines[p]; ok {
			return pos.line
		}
	}
	return 0
}

// isBad reports whether path or one of its ancestors failed to decode:
// a problem found in such a stand-in value would only confuse.
func (s *source) isBad(path string) bool {
	return s != nil && len(s.bad) > 0 && (s.bad[path] || s.badAbove(path))
}

// isIncomplete reports whether path, an ancestor or a descendant failed to
// decode: a table that seems to lack a value may hold it, malformed.
func (s *source) isIncomplete(path string) bool {
	return s.isBad(path) || s != nil && s.badBelow[path]
}

// badAbove reports whether an ancestor of path failed to decode.
func (s *source) badAbove(path string) bool {
	for p := parentPath(path); p != ""; p = parentPath(p) {
		if s.bad[p] {
			return true
		}
	}
	return false
}

// markBad records that path failed to decode.
func (s *source) markBad(path string) {
	s.bad[path] = true
	for p := parentPath(path); p != "" && !s.badBelow[p]; p = parentPath(p) {
		s.badBelow[p] = true
	}
}

// checker collects problems, each located by key path.
type checker struct {
	src  *source
	errs Errors
	sh   *check.Checker // see shared
}

// errorf records a problem at path, unless path already failed to decode
// (its value is a stand-in and a second message would only confuse).
func (c *checker) errorf(path, format string, args ...any) {
	if c.src.isBad(path) {
		return
	}
	e := &Error{Path: path, Line: c.src.line(path), Msg: fmt.Sprintf(format, args...)}
	if c.src != nil {
		e.File = c.src.file
	}
	c.errs = append(c.errs, e)
}

// incompletef records a problem with the table at path as a whole (a value
// it lacks), unless something in it failed to decode.
func (c *checker) incompletef(path, format string, args ...any) {
	if c.src.isIncomplete(path) {
		return
	}
	c.errorf(path, format, args...)
}

// join builds the key path of key inside the table at parent.
func join(parent, key string) string { return check.Join(parent, key) }

// index builds the key path of element i of the array at parent.
func index(parent string, i int) string { return check.Index(parent, i) }

// parentPath strips the last key or index from path.
func parentPath(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	if strings.HasSuffix(path, `"`) {
		// A quoted last key: find its opening quote, skipping escapes.
		for i := len(path) - 2; i >= 0; i-- {
			if path[i] == '"' && (i == 0 || path[i-1] != '\\') {
				if i > 0 && path[i-1] == '.' {
					return path[:i-1]
				}
				return ""
			}
		}
		return ""
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}
