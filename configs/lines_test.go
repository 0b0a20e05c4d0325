package configs

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestKeyLines checks the line of every key of a document written to trip
// a scanner: strings holding "#", "[", "=" and quotes, multi-line strings
// and arrays, inline tables inside arrays, quoted and dotted keys, nested
// arrays of tables.
func TestKeyLines(t *testing.T) {
	doc := `# [not.a.table]
title = "a # not a comment, [not a table], x = 1" # comment [x]
"quoted.key" = 'C:\dir "x" # y'
dotted.key = 1

[server] # comment
listen = """
[fake]
key = "value"
"""
ml = '''
''' #
arr = [
  1, # [x]
  "]",
  [2, 3],
]
when = 1979-05-27 07:32:00Z
[[group]]
name = "a\"b"
tables = [{ x = 1 }, { y = "}" }]
  [[group.sub]]
  n = 1
  [[group.sub]]
  n = 2
  [group.rate]
  burst = 5
[[group]]
name = "c"
  [[group.sub]]
  n = 3
`
	var v map[string]any
	md, err := toml.Decode(doc, &v)
	if err != nil {
		t.Fatal(err)
	}
	got := keyLines(doc, md.Keys())
	want := map[string]int{
		"title": 2, `"quoted.key"`: 3, "dotted.key": 4,
		"server": 6, "server.listen": 7, "server.ml": 11, "server.arr": 13, "server.when": 18,
		"group": 19, "group[0]": 19, "group[0].name": 20, "group[0].tables": 21, "group[0].tables.x": 21, "group[0].tables.y": 21,
		"group[0].sub": 22, "group[0].sub[0]": 22, "group[0].sub[0].n": 23, "group[0].sub[1]": 24, "group[0].sub[1].n": 25,
		"group[0].rate": 26, "group[0].rate.burst": 27,
		"group[1]": 28, "group[1].name": 29, "group[1].sub": 30, "group[1].sub[0]": 30, "group[1].sub[0].n": 31,
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k].line != want[k] {
			t.Errorf("line of %s = %d, want %d", k, got[k].line, want[k])
		}
		if pos := got[k]; pos.line != 1+strings.Count(doc[:pos.offset], "\n") || strings.ContainsRune(" \t\n=", rune(doc[pos.offset])) {
			t.Errorf("offset of %s (%d) is not the start of a key on line %d: %.10q", k, pos.offset, pos.line, doc[pos.offset:])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected key %s at line %d", k, got[k].line)
		}
	}
}

// TestKeyLinesMismatch checks that lines are dropped, not guessed, when the
// scan and the decoder disagree on the number of keys.
func TestKeyLinesMismatch(t *testing.T) {
	if got := keyLines("a = 1\nb = 2\n", []toml.Key{{"a"}}); got != nil {
		t.Errorf("keyLines with a missing key = %v, want nil", got)
	}
}

// TestParentPath checks the walk from a key to its tables, which is how a
// default value finds the line of its table.
func TestParentPath(t *testing.T) {
	var chain []string
	for p := `group[1].match.headers."x.y[0]"`; p != ""; p = parentPath(p) {
		chain = append(chain, p)
	}
	want := `group[1].match.headers."x.y[0]" group[1].match.headers group[1].match group[1] group`
	if strings.Join(chain, " ") != want {
		t.Errorf("chain = %q\nwant    %q", strings.Join(chain, " "), want)
	}
}
