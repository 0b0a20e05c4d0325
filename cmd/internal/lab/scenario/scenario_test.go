package scenario

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
)

const minimal = `# A minimal scenario.
[load]
phases = [{ rate = "1C", for = "10s" }]
`

func TestParseMinimal(t *testing.T) {
	s, err := Parse("dir/tiny.toml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "tiny" || s.Header != "A minimal scenario." {
		t.Fatalf("name %q header %q", s.Name, s.Header)
	}
	if len(s.Contenders) != 1 || s.Contenders[0].Kind != KindDirect {
		t.Fatalf("default contenders %+v", s.Contenders)
	}
	if c := s.Capacity(); c != 400 {
		t.Fatalf("capacity %v, want the default backend's 400", c)
	}
	lp, err := s.LoadParams("http://127.0.0.1:1/")
	if err != nil || lp.Target != "http://127.0.0.1:1/" || lp.Schedule[0].From != 400 {
		t.Fatalf("load params %+v, %v", lp, err)
	}
}

// shippedLibrary parses the lab's library of contenders.
func shippedLibrary(t testing.TB) *Library {
	src, err := os.ReadFile("../contenders.toml")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := ParseLibrary("contenders.toml", src)
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// TestShippedScenarios parses every file in cmd/internal/lab/scenarios and
// its -quick version.
func TestShippedScenarios(t *testing.T) {
	files, _ := filepath.Glob("../scenarios/*.toml")
	if len(files) < 9 {
		t.Fatalf("only %d scenario files", len(files))
	}
	lib := shippedLibrary(t)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseWith(f, src, lib)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		q := s.Shortened()
		if q.Schedule().Duration() >= s.Schedule().Duration() || q.Schedule().Duration() > 40*time.Second {
			t.Errorf("%s: quick lasts %v (full %v)", s.Name, q.Schedule().Duration(), s.Schedule().Duration())
		}
		if _, err := q.BackendParams(); err != nil {
			t.Errorf("%s quick: %v", s.Name, err)
		}
	}
}

func TestSweepAndQuickWarp(t *testing.T) {
	src := `# sweep with a slowdown in the middle of the third step
slo = "100ms"
[backend]
workers = 10
service = "const:50ms"
changes = ["50s:slow=2", "200s:workers=5"]
[load]
sweep = { from = "0.5C", to = "1.5C", step = "0.5C", each = "20s" }
`
	s, err := Parse("sweep.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	sched := s.Schedule()
	if len(sched) != 3 || sched[0].From != 100 || sched[2].To != 300 || sched[1].Label != "1C" || sched.Duration() != time.Minute {
		t.Fatalf("sweep schedule %+v", sched)
	}
	s.Load.Timeout = Duration(5 * time.Second)
	q := s.Shortened()
	if q.Load.Timeout != Duration(time.Second) || s.Load.Timeout != Duration(5*time.Second) {
		t.Errorf("quick timeout %v (original %v), want 1s", q.Load.Timeout, s.Load.Timeout)
	}
	qs := q.Schedule()
	if qs.Duration() != 6*time.Second {
		t.Fatalf("quick lasts %v, want 6s", qs.Duration())
	}
	p, err := q.BackendParams()
	if err != nil {
		t.Fatal(err)
	}
	// 50 s is half-way through the third 20 s step: 5 s in the quick run.
	// 200 s is 140 s past the end: 14 s past the quick end.
	want := []backend.Change{{At: 5 * time.Second, Slowdown: 2}, {At: 20 * time.Second, Workers: 5}}
	for i, c := range p.Changes {
		if c != want[i] {
			t.Errorf("change %d: %+v, want %+v", i, c, want[i])
		}
	}
	if s.Backend.Changes[0] != "50s:slow=2" {
		t.Errorf("Shortened changed the original: %v", s.Backend.Changes)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	src := `name = "Bad Name"
quick = 2
colour = "blue"
[backend]
workers = -1
service = "gauss:1ms"
changes = ["1s:fast=2"]
[load]
path = "work"
phases = [{ rate = "1C", from = "1C", to = "2C", for = "1s" }, { from = "1C", for = "0s" }]
sweep = { from = "1", to = "2C", step = "1", each = "1s" }
tenants = { "bad name" = 1 }
retry = { attempts = -1, mode = "eager" }
[hog]
threads = 0
nice = 25
[[contender]]
name = "x"
kind = "command"
files = { "../escape" = "" }
limit_metric = "m"
[[contender]]
name = "x"
kind = "magic"
`
	_, err := Parse("bad.toml", []byte(src))
	if err == nil {
		t.Fatal("bad scenario parsed")
	}
	for _, want := range []string{
		`unknown key "colour"`, `name "Bad Name"`, "# header", "quick must be in",
		"unknown distribution", `unknown key "fast"`, "workers must be in", "must start with /",
		"not both", "phases[0]: set either rate", "phases[1]: a ramp needs both", "phases[1]: for must be",
		"all be in req/s or all in C", "command is required", "url is required", `"../escape"`,
		"need metrics", `"x" listed twice`, `kind must be`, "hog: threads must be in [1,1024], got 0", "hog: nice must be in [0,19], got 25",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, "scenario: bad.toml: ") {
			t.Errorf("error line without prefix: %q", line)
		}
	}
	// Problems that only show once the rest is right are still named.
	_, err = Parse("mix.toml", []byte("# mix\n[load]\nphases = [{ rate = \"1C\", for = \"1s\" }]\ntenants = { \"bad name\" = 1 }\nretry = { attempts = -1 }\n"))
	if err == nil || !strings.Contains(err.Error(), "tenant") || !strings.Contains(err.Error(), "retry attempts") {
		t.Fatalf("mix errors: %v", err)
	}
	if _, err := Parse("syntax.toml", []byte("# x\n[load\n")); err == nil || !strings.Contains(err.Error(), "syntax.toml") {
		t.Fatalf("syntax error: %v", err)
	}
}

func TestValues(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "64KiB": 64 << 10, "1MiB": 1 << 20, "2GiB": 2 << 30, "1.5KB": 1500, "10B": 10} {
		var b Bytes
		if err := b.UnmarshalText([]byte(in)); err != nil || int64(b) != want {
			t.Errorf("Bytes(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1XB", "2TiB", "inf"} {
		var b Bytes
		if err := b.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("Bytes(%q) accepted", in)
		}
	}
	var r Rate
	if err := r.UnmarshalText([]byte("1.4C")); err != nil || !r.OfC || r.PerSecond(400) != 1.4*400 || r.String() != "1.4C" {
		t.Errorf("Rate 1.4C = %+v, %v", r, err)
	}
	if err := r.UnmarshalText([]byte("250")); err != nil || r.OfC || r.PerSecond(400) != 250 {
		t.Errorf("Rate 250 = %+v, %v", r, err)
	}
	for _, in := range []string{"C", "-1C", "fast", "NaN"} {
		if err := r.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("Rate(%q) accepted", in)
		}
	}
	var d Duration
	if err := d.UnmarshalText([]byte("-1s")); err == nil {
		t.Error("negative duration accepted")
	}
	_ = math.Inf
}

func FuzzParse(f *testing.F) {
	lib := shippedLibrary(f)
	files, _ := filepath.Glob("../scenarios/*.toml")
	for _, file := range files {
		src, _ := os.ReadFile(file)
		f.Add(string(src))
	}
	f.Add(minimal)
	f.Add("# x\n[load]\nsweep = { from = \"0C\", to = \"1000C\", step = \"0.001C\", each = \"1ns\" }\n")
	f.Add("# x\n[vars]\ng = \"{{g}}\"\n[load]\nphases = [{ rate = \"1\", for = \"1s\" }]\n[[contender]]\nlike = \"target\"\nvars.concurrency = \"law = 1\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := ParseWith("fuzz.toml", []byte(src), lib)
		if err != nil {
			return
		}
		if errs := s.Schedule().Validate(); len(errs) > 0 {
			t.Fatalf("valid scenario with an invalid schedule: %v", errs)
		}
		q := s.Shortened()
		if _, err := q.BackendParams(); err != nil {
			t.Fatalf("quick version invalid: %v", err)
		}
	})
}
