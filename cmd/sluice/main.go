// Command sluice is the sluice daemon and its operator tools: an adaptive
// concurrency limiter that stands in front of a service and keeps it inside
// its latency, CPU and memory targets.
//
// Each subcommand lives in a file of its own and is listed in commands.go.
package main

import (
	"context"
	"io"
	"os"
)

// main runs the command line. Signals are each command's business: "sluice
// run" catches SIGHUP, SIGINT and SIGTERM itself (see run.go); the other
// commands end as the default actions say.
func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes shared by every subcommand; "sluice run" has more (run.go).
const (
	exitOK    = 0 // success
	exitError = 1 // the command ran and failed (bad config, failed start, ...)
	exitUsage = 2 // the command line itself is wrong
)

// run dispatches args to a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	case "-v", "-version", "--version":
		name = "version"
	}
	cmd, ok := lookup(name)
	if !ok {
		fprintf(stderr, "sluice: unknown command %q\n\n", name)
		printUsage(stderr)
		return exitUsage
	}
	return cmd.run(ctx, rest, stdout, stderr)
}
