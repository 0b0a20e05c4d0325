package main

import (
	"context"
	"io"
)

var helpCommand = command{
	name:    "help",
	summary: "show help for sluice-lab or for one command",
	usage: `usage: sluice-lab help [COMMAND]

Without an argument, lists the commands. With one, shows that command's help.
`,
	run: runHelp,
}

func runHelp(_ context.Context, args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		printUsage(stdout)
		return exitOK
	case 1:
		c, ok := lookup(args[0])
		if !ok {
			fprintf(stderr, "sluice-lab help: unknown command %q\n", args[0])
			return exitUsage
		}
		fprintf(stdout, "%s", c.usage)
		return exitOK
	default:
		fprintf(stderr, "usage: sluice-lab help [COMMAND]\n")
		return exitUsage
	}
}

func printUsage(w io.Writer) {
	fprintf(w, "sluice-lab runs sluice's benchmark lab: open-loop load against a simulated\n")
	fprintf(w, "backend of known capacity, through each contender a scenario names.\n\n")
	fprintf(w, "usage: sluice-lab COMMAND [ARGS]\n\ncommands:\n")
	for _, c := range commands {
		fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fprintf(w, "\nRun \"sluice-lab help COMMAND\" for a command's flags and exit codes.\n")
}
