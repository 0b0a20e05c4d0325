package configs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzParse feeds the loader arbitrary bytes. It must never panic; the key
// scanner must agree with the TOML library on every document the library
// accepts; a failure must be an Errors of messages; and a config that loads
// must validate and render to TOML that loads back to the same config.
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
	f.Fuzz(func(t *testing.T, data []byte) {
		var raw map[string]any
		if md, err := toml.Decode(string(data), &raw); err == nil {
			if n, want := len(scanKeys(string(data))), len(md.Keys()); n != want {
				t.Fatalf("scanner found %d keys, the library %d", n, want)
			}
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
		if err := c.Validate(); err != nil {
			t.Fatalf("a loaded config does not validate: %v", err)
		}
		roundTrip(t, c)
	})
}
