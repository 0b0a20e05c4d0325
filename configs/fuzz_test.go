package configs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	gotoml "github.com/pelletier/go-toml/v2"
)

// FuzzParse feeds the loader arbitrary bytes. It must never panic; a
// failure must be an Errors of messages; a config that loads must come from
// UTF-8 text, validate, and render to TOML that loads back to the same
// config; and the key scanner must agree with the TOML library, key for key
// and line for line, on every document Parse hands it (UTF-8, accepted by
// the library) that is valid TOML. The library accepts a few documents that
// TOML forbids (a multi-line string closed by six quotes after an escaped
// backslash, 0="""\\""""""): there the scanner may count otherwise, and
// Parse then names no lines rather than wrong ones. What is valid TOML is
// decided by a second parser written apart from the first, go-toml.
// The seed corpus is every test file and example.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"testdata/*/*.toml", "examples/*.toml", "default.toml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("a = [{b = 1}, {c = '''x\n]'''}]\n[[d]]\n[[d.e]]\n[d.f]\ng.h = \"\"\"\\\"\"\"\"\"\n"))
	// Closing runs of four and five quotes, partly the string's own.
	f.Add([]byte("a = '''x''''\nb = '''y'''''\nc = \"\"\"z\"\"\"\"\n[d]\n"))
	f.Add([]byte(`0="""\\""""""`))
	f.Add([]byte("\xff\xfe[a]\nb = 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var raw map[string]any
		md, err := toml.Decode(string(data), &raw)
		if err == nil && badText("", data) == nil && validTOML(data) {
			checkScan(t, string(data), md.Keys())
		}
		c, err := Parse("fuzz.toml", data)
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %v is not an Errors", err)
			}
			for _, e := range es {
				if e.Msg == "" || e.File != "fuzz.toml" {
					t.Fatalf("bad problem %#v", e)
				}
			}
			return
		}
		if !utf8.Valid(data) || bytes.HasPrefix(data, []byte("\xff\xfe")) || bytes.HasPrefix(data, []byte("\xfe\xff")) {
			t.Fatal("a file that is not UTF-8 loaded")
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("a loaded config does not validate: %v", err)
		}
		roundTrip(t, c)
		gateRoundTrip(t, c)
	})
}

// validTOML reports whether go-toml, a parser written apart from the one
// Parse uses, accepts data as a TOML document.
func validTOML(data []byte) bool {
	var v map[string]any
	return gotoml.Unmarshal(data, &v) == nil
}

// checkScan checks the key scanner on a valid document: as many keys as the
// library lists, each at the start of a key and on the line it names.
func checkScan(t *testing.T, data string, keys []toml.Key) {
	t.Helper()
	starts := scanKeys(data)
	if len(starts) != len(keys) {
		t.Fatalf("scanner found %d keys, the library %d", len(starts), len(keys))
	}
	for i, st := range starts {
		if want := 1 + strings.Count(data[:st.offset], "\n"); st.line != want {
			t.Fatalf("key %s: line %d, but its offset %d is on line %d", keys[i], st.line, st.offset, want)
		}
		if c := data[st.offset]; strings.IndexByte(" \t\r\n=#,]}", c) >= 0 || (st.kind != keyValue) != (c == '[') {
			t.Fatalf("key %s: offset %d is not the start of a key: %.20q", keys[i], st.offset, data[st.offset:])
		}
	}
}
