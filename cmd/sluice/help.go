package main

import (
	"context"
	"io"
)

var helpCommand = command{
	name:    "help",
	summary: "show help for sluice or for one command",
	usage: `usage: sluice help [COMMAND]

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
			fprintf(stderr, "sluice help: unknown command %q\n", args[0])
			return exitUsage
		}
		fprintf(stdout, "%s", c.usage)
		return exitOK
	default:
		fprintf(stderr, "usage: sluice help [COMMAND]\n")
		return exitUsage
	}
}

func printUsage(w io.Writer) {
	fprintf(w, "sluice is an adaptive concurrency limiter that keeps a service inside its\n")
	fprintf(w, "latency, CPU and memory targets.\n\nusage: sluice COMMAND [ARGS]\n\ncommands:\n")
	for _, c := range commands {
		fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fprintf(w, "\nRun \"sluice help COMMAND\" for a command's flags and exit codes.\n")
}
