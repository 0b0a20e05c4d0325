package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runArgs(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := runArgs("version")
	if code != exitOK || !strings.HasPrefix(out, "sluice ") {
		t.Fatalf("version: code %d, out %q", code, out)
	}
	if code, _, _ := runArgs("version", "extra"); code != exitUsage {
		t.Fatalf("version extra: code %d, want %d", code, exitUsage)
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	code, out, _ := runArgs("help")
	if code != exitOK {
		t.Fatalf("help: code %d", code)
	}
	for _, c := range commands {
		if !strings.Contains(out, "  "+c.name+" ") {
			t.Errorf("help does not list %q:\n%s", c.name, out)
		}
		code, usage, _ := runArgs("help", c.name)
		if code != exitOK || !strings.HasPrefix(usage, "usage: sluice "+c.name) {
			t.Errorf("help %s: code %d, usage %q", c.name, code, usage)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	code, _, errOut := runArgs("frobnicate")
	if code != exitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	if code, _, _ := runArgs(); code != exitUsage {
		t.Fatalf("no args: code %d, want %d", code, exitUsage)
	}
	if code, _, _ := runArgs("help", "nope"); code != exitUsage {
		t.Fatalf("help nope: code %d, want %d", code, exitUsage)
	}
}
