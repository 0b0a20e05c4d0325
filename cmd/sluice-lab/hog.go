package main

import (
	"context"
	"flag"
	"io"
	"os"

	"github.com/sluicehq/sluice/cmd/internal/cli"
	"github.com/sluicehq/sluice/cmd/internal/lab/hog"
)

var hogCommand = cli.Command{
	Name:    "hog",
	Summary: "keep the CPU busy, as a neighbour does",
	Usage: `usage: sluice-lab hog [-threads N] [-nice N]

Runs N busy loops, each on a thread of its own at the given nice level,
until interrupted, and prints a line on stdout once they run. "sluice-lab
run" starts one beside the backend for a scenario with a [hog] table.

Flags:
  -threads N  busy loops (default 2)
  -nice N     their nice level, 0 (the service's) to 19 (default 0)

Exit codes: 0 after an interrupt, 1 if a nice level cannot be set, 2 on bad
flags.
`,
	Run: runHog,
}

func runHog(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hog", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var p hog.Params
	fs.IntVar(&p.Threads, "threads", 2, "")
	fs.IntVar(&p.Nice, "nice", 0, "")
	if err := fs.Parse(args); err != nil {
		cli.Fprintf(stderr, "sluice-lab hog: %v\nRun \"sluice-lab help hog\" for the flags.\n", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		cli.Fprintf(stderr, "sluice-lab hog: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if err := p.Validate(); err != nil {
		cli.Fprintf(stderr, "sluice-lab hog: %v\n", err)
		return exitUsage
	}
	h, err := hog.Start(p)
	if err != nil {
		cli.Fprintf(stderr, "sluice-lab hog: %v\n", err)
		return exitError
	}
	cli.Fprintf(stdout, "sluice-lab hog: %s (pid %d)\n", p, os.Getpid())
	<-ctx.Done()
	h.Stop()
	return exitOK
}
