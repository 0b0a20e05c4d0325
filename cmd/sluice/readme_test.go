package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/configs"
)

// TestREADMELayout checks that every path the README's layout table names,
// and every relative link of the README, exists in the repository.
func TestREADMELayout(t *testing.T) {
	const root = "../.."
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## Layout")
	if start < 0 {
		t.Fatal(`README.md has no "## Layout" section`)
	}
	layout := text[start:]
	if end := strings.Index(layout[1:], "\n## "); end >= 0 {
		layout = layout[:end+1]
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	rows := row.FindAllStringSubmatch(layout, -1)
	if len(rows) < 10 {
		t.Fatalf("the layout table has %d rows, want the whole tree", len(rows))
	}
	for _, m := range rows {
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("layout row %q: %v", m[1], err)
		}
	}
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
	for _, m := range link.FindAllStringSubmatch(text, -1) {
		if strings.Contains(m[1], "://") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("link %q: %v", m[1], err)
		}
	}
}

// TestCIRunRunsEveryPart runs .ci/run, the README's test command, with a
// go on PATH whose vet fails: the cross-builds for macOS and Windows, the
// tests and the deploy module's tests still run, the summary names the part
// that failed, and the exit code is 1. The README's first lines give
// .ci/run as the test command.
func TestCIRunRunsEveryPart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(readme), "\nThen,")
	if !regexp.MustCompile("(?m)^\\.ci/run ").MatchString(first) {
		t.Errorf("the README's first lines do not give .ci/run as the test command:\n%s", first)
	}
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	fake := "#!/bin/sh\necho \"${GOOS:+GOOS=$GOOS }$*\" >> " + calls + "\n[ \"$1\" = vet ] && exit 1\nexit 0\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"redis-server", "redis-sentinel", "chromium", "systemd-analyze"} {
		if err := os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err) // present: nothing to install
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	cmd := exec.Command(bash, "../../.ci/run")
	cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin", "GOOS=")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf(".ci/run with a failing vet: %v, want exit code 1\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^== FAILED:\n   go vet \./\.\.\.$`).Match(out) {
		t.Errorf(".ci/run's summary does not name the failed vet:\n%s", out)
	}
	got, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if want := "version\nvet ./...\nGOOS=darwin build ./...\nGOOS=windows build ./...\ntest -race ./...\ntest -C deploy ./...\n"; string(got) != want {
		t.Errorf(".ci/run ran go with\n%s\nwant\n%s", got, want)
	}
}

// TestREADMEConfigs: every TOML snippet of the README loads, with an
// upstream added when it has none, as sluice check would load it: a
// snippet that a newcomer copies works as it is.
func TestREADMEConfigs(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 2 {
		t.Fatalf("%d TOML snippets in the README, want the shadow and the permit ones at least", len(blocks))
	}
	for _, b := range blocks {
		body := b[1]
		if !strings.Contains(body, "[upstream]") {
			body = "[upstream]\nurl = \"http://127.0.0.1:9000\"\n" + body
		}
		if _, err := configs.Parse("README", []byte(body)); err != nil {
			t.Errorf("a README snippet does not load: %v\n%s", err, b[1])
		}
	}
}

// TestREADMEAnswerHeaders: the README's table of the answers sluice writes
// names every reason the gate refuses with, in its Sluice-Reason rows.
func TestREADMEAnswerHeaders(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows strings.Builder
	for line := range strings.Lines(string(readme)) {
		if strings.HasPrefix(line, "|") && strings.Contains(line, "`Sluice-Reason`") {
			rows.WriteString(line)
		}
	}
	for r := adaptive.RejectReason(1); int(r) < adaptive.NumRejections; r++ {
		if !strings.Contains(rows.String(), "`"+r.String()+"`") {
			t.Errorf("the README's Sluice-Reason rows do not name %q:\n%s", r, rows.String())
		}
	}
}
