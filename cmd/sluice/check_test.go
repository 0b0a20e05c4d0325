package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/configs"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckValidPrintsEffectiveConfig(t *testing.T) {
	path := writeFile(t, "sluice.toml", "[upstream]\nurl = \"http://127.0.0.1:9000\"\n")
	code, out, errOut := runArgs("check", path)
	if code != exitOK || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out, "# "+path+" is valid") {
		t.Errorf("stdout starts %.80q", out)
	}
	// What it prints is a config: every default, and the catch-all group.
	c, err := configs.Parse("stdout", []byte(out))
	if err != nil {
		t.Fatalf("printed config does not load: %v\n%s", err, out)
	}
	if len(c.Groups) != 1 || c.Groups[0].Name != "default" || !strings.Contains(out, `read_header_timeout = "10s"`) {
		t.Errorf("printed config lacks defaults:\n%s", out)
	}
}

func TestCheckQuiet(t *testing.T) {
	path := writeFile(t, "sluice.toml", "[upstream]\nurl = \"http://127.0.0.1:9000\"\n")
	if code, out, errOut := runArgs("check", "-q", path); code != exitOK || out != "" || errOut != "" {
		t.Errorf("check -q: code %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestCheckInvalidPrintsEveryProblem(t *testing.T) {
	path := writeFile(t, "bad.toml", `[upstream]
url = "http://127.0.0.1:9000"
[control]
interval = 250
[[group]]
name = "api"
  [group.concurency]
  law = "aimd"
  [group.rate]
  rate = 10
  cost = 5
  burst = 2
`)
	code, out, errOut := runArgs("check", "-q", path)
	if code != exitError || out != "" {
		t.Fatalf("code %d, stdout %q", code, out)
	}
	want := path + `:4: control.interval: must be a duration string such as "250ms", got integer 250
` + path + `:7: group[0].concurency: unknown key (did you mean "concurrency"?)
` + path + `:12: group[0].rate.burst: must be ≥ cost (5), got 2
sluice check: ` + path + `: 3 problems
`
	if errOut != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut, want)
	}
}

func TestCheckErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.toml")
	code, _, errOut := runArgs("check", missing)
	if code != exitError || !strings.Contains(errOut, "sluice check: configs: open "+missing) {
		t.Errorf("missing file: code %d, stderr %q", code, errOut)
	}
	syntax := writeFile(t, "syntax.toml", "[upstream\n")
	code, _, errOut = runArgs("check", syntax)
	if code != exitError || !strings.HasPrefix(errOut, syntax+":1: invalid TOML: ") || !strings.HasSuffix(errOut, ": 1 problem\n") {
		t.Errorf("syntax error: code %d, stderr %q", code, errOut)
	}
	for _, args := range [][]string{{"check"}, {"check", "a", "b"}, {"check", "-x", "a"}} {
		code, out, errOut := runArgs(args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "usage: sluice check [-q] FILE") {
			t.Errorf("%v: code %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// TestCheckExamples runs the command on the example configs and the
// embedded default as shipped.
func TestCheckExamples(t *testing.T) {
	files, _ := filepath.Glob("../../configs/examples/*.toml")
	files = append(files, "../../configs/default.toml")
	for _, f := range files {
		if code, _, errOut := runArgs("check", "-q", f); code != exitOK {
			t.Errorf("%s: code %d\n%s", f, code, errOut)
		}
	}
}
