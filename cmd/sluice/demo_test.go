//go:build !nodemo

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoQuick runs "sluice demo -quick" with the real sluice binary as its
// daemon (the demo starts it twice, as "sluice run") and checks what it
// prints: the dashboard's address first, then a table with one row per run
// whose cells are figures, and the lab's reports when -out asks for them.
func TestDemoQuick(t *testing.T) {
	bin := binary(t)
	old, oldAdmin := demoBinary, demoAdminListen
	demoBinary = func() (string, error) { return bin, nil }
	demoAdminListen = "127.0.0.1:0"
	t.Cleanup(func() { demoBinary, demoAdminListen = old, oldAdmin })

	out := t.TempDir()
	code, stdout, stderr := runArgs("demo", "-quick", "-out", out)
	if code != exitOK {
		t.Fatalf("demo: code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`(?m)^dashboard of the sluice being measured: http://127\.0\.0\.1:\d+/$`).MatchString(stdout) {
		t.Errorf("no dashboard address:\n%s", stdout)
	}
	header := regexp.MustCompile(`(?m)^\s+goodput/s\s+goodput at 3×C\s+admitted p99\s+rejected\s+errors\s+peak RSS of sluice$`)
	if !header.MatchString(stdout) {
		t.Errorf("no table header:\n%s", stdout)
	}
	for _, name := range []string{"no limit", "sluice \\(target law\\)"} {
		row := regexp.MustCompile(`(?m)^` + name + `\s+\d+\s+\d+ \(\d+% of C\)\s+\d+(\.\d)? m?s\s+\d+\.\d%\s+\d+\.\d%\s+\d+ MiB$`)
		if !row.MatchString(stdout) {
			t.Errorf("no well-formed row for %s:\n%s", name, stdout)
		}
	}
	if !strings.Contains(stderr, "demo/target: offered ") {
		t.Errorf("no progress for the target run:\n%s", stderr)
	}
	for _, f := range []string{"summary.md", "no-limit.json", "target.json", "goodput.png"} {
		if st, err := os.Stat(filepath.Join(out, "demo", f)); err != nil || st.Size() == 0 {
			t.Errorf("report %s: %v", f, err)
		}
	}
}

func TestDemoUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "-duration", "1s"}, "-duration must be from 2s to 1h, got 1s"},
		{[]string{"demo", "extra"}, `unexpected argument "extra"`},
		{[]string{"demo", "-bogus"}, "flag provided but not defined: -bogus"},
	} {
		code, _, stderr := runArgs(tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

// TestDemoScenario checks the demo's scenario: two runs through the real
// sluice, no limit then the target law, each stretched to -duration.
func TestDemoScenario(t *testing.T) {
	s, err := demoScenario(40 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Schedule().Duration().Seconds(); got != 40 {
		t.Errorf("schedule lasts %vs, want 40s", got)
	}
	if len(s.Contenders) != 2 || s.Contenders[0].Name != "no-limit" || s.Contenders[1].Name != "target" {
		t.Fatalf("contenders %+v", s.Contenders)
	}
	for _, c := range s.Contenders {
		if c.Command[0] != "{{sluice}}" || c.Command[1] != "run" {
			t.Errorf("%s runs %v, not sluice run", c.Name, c.Command)
		}
	}
}

// TestDemoLeftOut: a build with -tags nodemo links neither the lab nor its
// plotting (golang.org/x/image, image/png), and its "sluice demo" says why
// there is no demo.
func TestDemoLeftOut(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "nodemo", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/sluicehq/sluice/cmd/internal/lab") || strings.HasPrefix(dep, "golang.org/x/image") || dep == "image/png" {
			t.Errorf("a nodemo build links %s", dep)
		}
	}
	bin := filepath.Join(t.TempDir(), "sluice")
	if out, err := exec.Command("go", "build", "-tags", "nodemo", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nodemo: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "demo")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitError || !strings.Contains(stderr.String(), "built with -tags nodemo, without the demo") {
		t.Errorf("sluice demo of a nodemo build: %v, stderr %q", err, stderr.String())
	}
}
