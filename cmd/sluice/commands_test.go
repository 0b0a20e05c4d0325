package main

import (
	"strings"
	"testing"
)

// commands names every command "sluice help" lists, help included, for the
// tests that walk the list (main_test.go). The list itself is program's.
var commands = func() (named []struct{ name string }) {
	for _, c := range program.Listed() {
		named = append(named, struct{ name string }{c.Name})
	}
	return named
}()

// TestCommandHelpFlag checks that "sluice COMMAND -h" prints the command's
// whole usage on stdout, as "sluice help COMMAND" does, and runs nothing.
func TestCommandHelpFlag(t *testing.T) {
	for _, c := range commands {
		_, want, _ := runArgs("help", c.name)
		for _, flag := range []string{"-h", "-help", "--help"} {
			code, out, errOut := runArgs(c.name, flag)
			if code != exitOK || out != want || errOut != "" {
				t.Errorf("%s %s: code %d, stderr %q, stdout\n%s\nwant\n%s", c.name, flag, code, errOut, out, want)
			}
		}
	}
	// run's usage is its flags, signals and exit codes, not one line.
	_, out, _ := runArgs("run", "-config", "sluice.toml", "-h")
	for _, want := range []string{"\nFlags:\n", "  -config FILE ", "  -log-level LEVEL ", "  -log-json ", "  -grace DUR ", "\nSignals:\n", "\nExit codes:\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("run -h lacks %q:\n%s", want, out)
		}
	}
	if _, out, _ := runArgs("check", "-h"); !strings.Contains(out, "\n  -q ") {
		t.Errorf("check -h lacks -q:\n%s", out)
	}
}
