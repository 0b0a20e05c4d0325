package main

import (
	"context"
	"fmt"
	"io"
)

// command is one sluice subcommand.
type command struct {
	name    string
	summary string // one line for the command list
	usage   string // full help text for "sluice help NAME"
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands lists every subcommand in the order "sluice help" shows them.
// A command is listed here only once it works.
var commands []command

func init() {
	commands = []command{
		runCommand,
		demoCommand,
		checkCommand,
		statusCommand,
		versionCommand,
		helpCommand,
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func fprintf(w io.Writer, format string, a ...any) {
	_, _ = fmt.Fprintf(w, format, a...)
}
