package main

import (
	"context"
	"fmt"
	"io"
)

// command is one sluice-lab subcommand.
type command struct {
	name    string
	summary string // one line for the command list
	usage   string // full help text for "sluice-lab help NAME"
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands lists every subcommand in the order "sluice-lab help" shows them.
var commands []command

func init() {
	commands = []command{
		runCommand,
		backendCommand,
		scenariosCommand,
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
