// Command sluice-lab is sluice's benchmark lab: a simulated backend of
// known capacity, an open-loop load generator, and scenarios that compare
// contenders (direct access, proxies, sluice's policies) in front of it.
//
// Each subcommand lives in a file of its own and is listed in commands.go.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signalContext()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalContext is cancelled by SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Exit codes shared by every subcommand.
const (
	exitOK    = 0 // success
	exitError = 1 // the command ran and failed
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
	}
	cmd, ok := lookup(name)
	if !ok {
		fprintf(stderr, "sluice-lab: unknown command %q\n\n", name)
		printUsage(stderr)
		return exitUsage
	}
	return cmd.run(ctx, rest, stdout, stderr)
}
