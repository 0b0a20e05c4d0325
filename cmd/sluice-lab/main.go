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

	"github.com/sluicehq/sluice/cmd/internal/cli"
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

// Exit codes shared by every subcommand (package cli's conventions).
const (
	exitOK    = cli.ExitOK
	exitError = cli.ExitError
	exitUsage = cli.ExitUsage
)

// run dispatches args to a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return program.Run(ctx, args, stdout, stderr)
}
