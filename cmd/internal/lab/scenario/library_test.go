package scenario

import (
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/cmd/internal/lab/load"
)

const testLibrary = `# Two proxies: a base and one like it.
[[contender]]
name = "base"
kind = "command"
command = ["proxy", "-c", "{{dir}}/p.conf"]
url = "http://127.0.0.1:{{port}}"
metrics = "http://127.0.0.1:{{port}}/metrics"
limit_metric = "limit"
files."p.conf" = "mode {{mode}}; extra {{extra}}"
vars = { mode = "base", extra = "", level = "library" }

[[contender]]
name = "fast"
like = "base"
vars.mode = "fast"
`

// TestLike resolves contenders against a library: fields left empty come
// from the library's entry, files and vars merge, and vars rank library <
// scenario [vars] < the contender's own.
func TestLike(t *testing.T) {
	lib, err := ParseLibrary("lib.toml", []byte(testLibrary))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lib.Names(), ","); got != "base,fast" || lib.Header != "Two proxies: a base and one like it." {
		t.Fatalf("names %q, header %q", got, lib.Header)
	}
	src := `# Three contenders built on the library.
[vars]
extra = "from the scenario"
level = "scenario"
[load]
phases = [{ rate = "1C", for = "1s" }]
[[contender]]
like = "fast"
[[contender]]
name = "faster"
like = "fast"
url = "http://127.0.0.1:{{port}}/x"
vars = { mode = "faster", level = "contender" }
files."more.conf" = "more"
[[contender]]
name = "mine"
kind = "command"
command = ["mine"]
url = "http://127.0.0.1:1"
`
	s, err := ParseWith("three.toml", []byte(src), lib)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Contenders) != 3 {
		t.Fatalf("contenders %+v", s.Contenders)
	}
	fast, faster, mine := s.Contenders[0], s.Contenders[1], s.Contenders[2]
	if fast.Name != "fast" || fast.Kind != KindCommand || fast.Command[0] != "proxy" || fast.LimitMetric != "limit" ||
		fast.Vars["mode"] != "fast" || fast.Vars["extra"] != "from the scenario" || fast.Vars["level"] != "scenario" {
		t.Errorf("fast: %+v", fast)
	}
	if faster.URL != "http://127.0.0.1:{{port}}/x" || faster.Vars["mode"] != "faster" || faster.Vars["level"] != "contender" ||
		faster.Files["p.conf"] == "" || faster.Files["more.conf"] != "more" || faster.Like != "fast" {
		t.Errorf("faster: %+v", faster)
	}
	if mine.Vars["extra"] != "from the scenario" || mine.Vars["mode"] != "" {
		t.Errorf("mine: scenario vars %+v", mine.Vars)
	}
	// The library's entries are not changed by what scenarios do.
	if base, _ := lib.Get("fast"); base.Vars["level"] != "library" || len(base.Files) != 1 {
		t.Errorf("library changed: %+v", base)
	}
}

func TestLibraryProblems(t *testing.T) {
	_, err := ParseLibrary("bad.toml", []byte(`[[contender]]
name = "a"
like = "nothing"
[[contender]]
name = "b"
kind = "command"
colour = "red"
[[contender]]
name = "c"
kind = "command"
command = ["c"]
url = "http://x"
[[contender]]
name = "c"
like = "c"
[[contender]]
name = "e"
like = "c"
vars = { "Bad-Name" = "1" }
`))
	if err == nil {
		t.Fatal("bad library parsed")
	}
	for _, want := range []string{"# header", `like "nothing": no such contender earlier`, `unknown key "contender.colour"`,
		`"b": command is required`, `name "Bad-Name"`, `"c" listed twice`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
	lib, _ := ParseLibrary("lib.toml", []byte(testLibrary))
	_, err = ParseWith("s.toml", []byte("# s\n[vars]\n\"x y\" = \"1\"\n[load]\nphases = [{ rate = \"1\", for = \"1s\" }]\n[[contender]]\nlike = \"slow\"\n[[contender]]\nname = \"d\"\nkind = \"direct\"\nvars = { a = \"1\" }\n"), lib)
	for _, want := range []string{`like "slow": no such contender in the library (known: base, fast)`, `vars: name "x y"`, "takes no command, url, files, metrics or vars"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("scenario errors lack %q:\n%v", want, err)
		}
	}
	if _, err := Parse("s.toml", []byte("# s\n[load]\nphases = [{ rate = \"1\", for = \"1s\" }]\n[[contender]]\nlike = \"fast\"\n")); err == nil || !strings.Contains(err.Error(), "(known: none)") {
		t.Errorf("like without a library: %v", err)
	}
}

func FuzzParseLibrary(f *testing.F) {
	src, _ := os.ReadFile("../contenders.toml")
	f.Add(string(src))
	f.Add(testLibrary)
	f.Fuzz(func(t *testing.T, src string) {
		lib, err := ParseLibrary("fuzz.toml", []byte(src))
		if err != nil {
			return
		}
		for _, name := range lib.Names() {
			c, ok := lib.Get(name)
			if !ok || c.Like != "" && c.Name == "" || len(c.validate(0)) > 0 {
				t.Fatalf("library entry %q: %+v", name, c)
			}
		}
	})
}

// TestContenderRetry: a contender's own retry replaces the scenario's for
// its clients only, a like contender keeps it, and a bad one is refused.
func TestContenderRetry(t *testing.T) {
	lib, err := ParseLibrary("lib.toml", []byte(testLibrary))
	if err != nil {
		t.Fatal(err)
	}
	src := `# The same storm, two kinds of clients.
[load]
phases = [{ rate = "1C", for = "1s" }]
retry = { attempts = 3, mode = "immediate" }
[[contender]]
like = "fast"
[[contender]]
name = "fast-client"
like = "fast"
retry = { attempts = 3, mode = "client" }
`
	s, err := ParseWith("storm.toml", []byte(src), lib)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []load.RetryMode{load.Immediate, load.Client} {
		p, err := s.LoadParamsFor(s.Contenders[i], "http://127.0.0.1:1")
		if err != nil || p.Retry.Mode != want || p.Retry.Attempts != 3 {
			t.Errorf("%s: retry %+v (%v), want mode %q", s.Contenders[i].Name, p.Retry, err, want)
		}
	}
	bad := strings.Replace(src, `mode = "client"`, `mode = "polite"`, 1)
	if _, err := ParseWith("storm.toml", []byte(bad), lib); err == nil || !strings.Contains(err.Error(), `contender[1] "fast-client": retry: load: retry mode`) {
		t.Errorf("a bad contender retry: %v", err)
	}
}
