package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sample = `# Two requests, one slot.
sim: skip not needed here
config
[[group]]
name = "api"
steps
0s      arrive a priority=critical key=k cost=2 group=api
0s      > admit a
# a comment among the steps
1ms     arrive b
1ms     > reject b concurrency
250ms   tick
250ms   > limit api 1
`

func TestParse(t *testing.T) {
	tr, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Description != "Two requests, one slot." || tr.SimSkip != "not needed here" {
		t.Errorf("description %q, sim skip %q", tr.Description, tr.SimSkip)
	}
	if tr.Config != "[[group]]\nname = \"api\"\n" {
		t.Errorf("config %q", tr.Config)
	}
	a := Step{Line: 7, At: 0, Kind: Arrive, Request: "a", Group: "api", Key: "k", Priority: "critical", Cost: 2,
		Text: "arrive a priority=critical key=k cost=2 group=api"}
	if len(tr.Steps) != 3 || tr.Steps[0] != a || tr.Steps[1].Priority != "default" ||
		tr.Steps[2].Kind != Tick || tr.Steps[2].At != 250*time.Millisecond {
		t.Fatalf("steps %+v", tr.Steps)
	}
	want := []string{"0s arrive a priority=critical key=k cost=2 group=api (line 7)", "0s > admit a",
		"1ms arrive b (line 10)", "1ms > reject b concurrency", "250ms tick (line 12)", "250ms > limit api 1"}
	if strings.Join(tr.Expect, "\n") != strings.Join(want, "\n") {
		t.Errorf("expect\n%s\nwant\n%s", strings.Join(tr.Expect, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"config\nsteps\n0s arrive\n", "3: arrive: want a request name"},
		{"config\nsteps\nsoon tick\n", "3: want an instant"},
		{"config\nsteps\n1s tick\n0s tick\n", "4: instant 0s before the previous line's 1s"},
		{"config\nsteps\n0s arrive a priority=urgent\n", `3: arrive a: priority "urgent"`},
		{"config\nsteps\n0s arrive a colour=red\n", `3: arrive a: unknown "colour"`},
		{"config\nsteps\n0s done a late\n", `3: done a: outcome "late"`},
		{"config\nsteps\n0s jump\n", `3: unknown step "jump"`},
		{"sim: maybe\nconfig\nsteps\n0s tick\n", `1: want "sim: skip REASON"`},
		{"groups\n", `1: want a comment`},
		{"config\n[[group]]\n", `no "config" block followed by "steps"`},
		{"config\nsteps\n", "no steps"},
	} {
		_, err := Parse([]byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.text, err, tc.want)
		}
	}
}

// TestCheckAndRewrite: a log that differs is reported at its first
// difference; Rewrite puts the log's outcomes in the file, keeping its
// comments, so that the file then checks clean.
func TestCheckAndRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.trace")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	run := func(tr *Trace) *Log {
		var l Log
		l.Begin(&tr.Steps[0])
		l.Own(0, "admit a")
		l.Begin(&tr.Steps[1])
		l.Own(time.Millisecond, "queue b")
		l.Caused(time.Millisecond, "z", "reject z queue_full")
		l.Caused(time.Millisecond, "c", "reject c queue_full")
		l.Begin(&tr.Steps[2])
		l.Own(250*time.Millisecond, "limit api 1")
		return &l
	}
	l := run(tr)
	err = tr.Check(l)
	if err == nil || !strings.Contains(err.Error(), "differ at entry 4") || !strings.Contains(err.Error(), "=> 1ms > queue b") {
		t.Fatalf("Check = %v, want a difference at entry 4 (queue b)", err)
	}
	if err := tr.Rewrite(l); err != nil {
		t.Fatal(err)
	}
	tr2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr2.Check(run(tr2)); err != nil {
		t.Errorf("after Rewrite: %v", err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "# a comment among the steps") ||
		!strings.Contains(string(b), "1ms      > queue b\n1ms      > reject c queue_full\n1ms      > reject z queue_full\n") {
		t.Errorf("rewritten file:\n%s", b)
	}
}
