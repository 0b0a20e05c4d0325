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

	"github.com/sluicehq/sluice/cmd/internal/cli"
)

// main runs the command line. Signals are each command's business: "sluice
// run" catches SIGHUP, SIGINT and SIGTERM itself (see run.go); the other
// commands end as the default actions say.
func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes shared by every subcommand (package cli's conventions);
// "sluice run" has more (run.go).
const (
	exitOK    = cli.ExitOK
	exitError = cli.ExitError
	exitUsage = cli.ExitUsage
)

// run dispatches args to a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return program.Run(ctx, args, stdout, stderr)
}
