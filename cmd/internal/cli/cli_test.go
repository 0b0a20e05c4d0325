package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// ctxKey marks the context a test passes to Run, to see it reach the command.
type ctxKey struct{}

// call records one run of a test command.
type call struct {
	name string
	args []string
	ctx  any
}

// testProgram is a program of two commands that record their calls; "fail"
// writes to both streams and exits 7.
func testProgram(calls *[]call) *Program {
	cmd := func(name string, code int) Command {
		return Command{
			Name:    name,
			Summary: "the " + name + " command",
			Usage:   "usage: prog " + name + " [ARG]\n\nDoes " + name + ".\n",
			Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
				*calls = append(*calls, call{name, args, ctx.Value(ctxKey{})})
				Fprintf(stdout, "%s out\n", name)
				Fprintf(stderr, "%s err\n", name)
				return code
			},
		}
	}
	return &Program{
		Name:     "prog",
		Intro:    "prog does things.\nTwo lines of them.\n",
		Commands: []Command{cmd("go", ExitOK), cmd("fail", 7)},
		Aliases:  map[string]string{"--go": "go"},
	}
}

// run runs p with args and returns what it wrote and the exit code.
func run(p *Program, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	ctx := context.WithValue(context.Background(), ctxKey{}, "the ctx")
	code = p.Run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

const wantUsage = `prog does things.
Two lines of them.

usage: prog COMMAND [ARGS]

commands:
  go         the go command
  fail       the fail command
  help       show help for prog or for one command

Run "prog help COMMAND" or "prog COMMAND -h" for a command's flags and exit codes.
`

func TestRunDispatches(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantName string
		wantArgs []string
		wantCode int
	}{
		{[]string{"go"}, "go", []string{}, ExitOK},
		{[]string{"go", "-x", "y"}, "go", []string{"-x", "y"}, ExitOK},
		{[]string{"--go", "z"}, "go", []string{"z"}, ExitOK},
		{[]string{"fail", "a"}, "fail", []string{"a"}, 7},
		// After "--", -h is an argument like any other.
		{[]string{"go", "--", "-h"}, "go", []string{"--", "-h"}, ExitOK},
		{[]string{"go", "-hx"}, "go", []string{"-hx"}, ExitOK},
	} {
		var calls []call
		code, out, errOut := run(testProgram(&calls), tc.args...)
		want := []call{{tc.wantName, tc.wantArgs, "the ctx"}}
		if !reflect.DeepEqual(calls, want) {
			t.Errorf("%q: calls %+v, want %+v", tc.args, calls, want)
		}
		if code != tc.wantCode || out != tc.wantName+" out\n" || errOut != tc.wantName+" err\n" {
			t.Errorf("%q: code %d, stdout %q, stderr %q", tc.args, code, out, errOut)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		wantStderr string
	}{
		{nil, wantUsage},
		{[]string{"frobnicate", "x"}, "prog: unknown command \"frobnicate\"\n\n" + wantUsage},
		{[]string{"-v"}, "prog: unknown command \"-v\"\n\n" + wantUsage},
		{[]string{""}, "prog: unknown command \"\"\n\n" + wantUsage},
		{[]string{"Go"}, "prog: unknown command \"Go\"\n\n" + wantUsage},
		{[]string{"help", "nope"}, "prog help: unknown command \"nope\"\n"},
		{[]string{"help", "go", "fail"}, "usage: prog help [COMMAND]\n"},
	} {
		var calls []call
		code, out, errOut := run(testProgram(&calls), tc.args...)
		if code != ExitUsage || out != "" || errOut != tc.wantStderr || len(calls) != 0 {
			t.Errorf("%q: code %d, stdout %q, calls %v, stderr\n%s\nwant code %d, stderr\n%s",
				tc.args, code, out, calls, errOut, ExitUsage, tc.wantStderr)
		}
	}
}

func TestHelp(t *testing.T) {
	wantHelpUsage := "usage: prog help [COMMAND]\n\nWithout an argument, lists the commands. With one, shows that command's help.\n"
	for _, tc := range []struct {
		args       []string
		wantStdout string
	}{
		{[]string{"help"}, wantUsage},
		{[]string{"-h"}, wantUsage},
		{[]string{"-help"}, wantUsage},
		{[]string{"--help"}, wantUsage},
		{[]string{"help", "go"}, "usage: prog go [ARG]\n\nDoes go.\n"},
		{[]string{"--help", "fail"}, "usage: prog fail [ARG]\n\nDoes fail.\n"},
		{[]string{"help", "help"}, wantHelpUsage},
		{[]string{"-h", "-h"}, wantHelpUsage},
		{[]string{"help", "go", "-h"}, wantHelpUsage},
		// A command's -h is its usage, and the command does not run.
		{[]string{"go", "-h"}, "usage: prog go [ARG]\n\nDoes go.\n"},
		{[]string{"go", "x", "-help", "y"}, "usage: prog go [ARG]\n\nDoes go.\n"},
		{[]string{"--go", "--help"}, "usage: prog go [ARG]\n\nDoes go.\n"},
		{[]string{"fail", "--h"}, "usage: prog fail [ARG]\n\nDoes fail.\n"},
	} {
		var calls []call
		code, out, errOut := run(testProgram(&calls), tc.args...)
		if code != ExitOK || out != tc.wantStdout || errOut != "" || len(calls) != 0 {
			t.Errorf("%q: code %d, stderr %q, calls %v, stdout\n%s\nwant\n%s", tc.args, code, errOut, calls, out, tc.wantStdout)
		}
	}
}

// TestHelpAliasWins checks that a Program's aliases cannot take the help
// flags away from help.
func TestHelpAliasWins(t *testing.T) {
	var calls []call
	p := testProgram(&calls)
	p.Aliases = map[string]string{"-h": "go"}
	if code, out, _ := run(p, "-h"); code != ExitOK || out != wantUsage || len(calls) != 0 {
		t.Fatalf("-h with an alias: code %d, calls %v, stdout %q", code, calls, out)
	}
}

func TestListed(t *testing.T) {
	var calls []call
	p := testProgram(&calls)
	var names []string
	for _, c := range p.Listed() {
		names = append(names, c.Name)
	}
	if want := []string{"go", "fail", "help"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("Listed: %q, want %q", names, want)
	}
	// Listed must not share its array with Commands: appending help to a
	// Commands slice with spare capacity would overwrite the caller's data.
	p.Commands = append(make([]Command, 0, 8), p.Commands...)
	p.Listed()[0].Name = "changed"
	spare := p.Commands[:3]
	if p.Commands[0].Name != "go" || spare[2].Name != "" {
		t.Fatalf("Listed changed Commands: %q, spare %q", p.Commands[0].Name, spare[2].Name)
	}
}

func TestNoCommands(t *testing.T) {
	p := &Program{Name: "empty", Intro: "empty.\n"}
	code, _, errOut := run(p)
	if code != ExitUsage || !strings.Contains(errOut, "commands:\n  help       show help for empty or for one command\n") {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestFprintfIgnoresWriteErrors(t *testing.T) {
	var calls []call
	p := testProgram(&calls)
	if code := p.Run(context.Background(), []string{"help"}, failWriter{}, failWriter{}); code != ExitOK {
		t.Fatalf("help to a failing stdout: code %d", code)
	}
	var b bytes.Buffer
	Fprintf(&b, "%s=%d", "x", 1)
	if b.String() != "x=1" {
		t.Fatalf("Fprintf wrote %q", b.String())
	}
}
