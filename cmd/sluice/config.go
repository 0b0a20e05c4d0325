package main

import (
	"context"
	"io"

	"github.com/sluicehq/sluice/cmd/internal/cli"
	"github.com/sluicehq/sluice/configs"
)

var configCommand = cli.Command{
	Name:    "config",
	Summary: "print the embedded default config, a starting point for your own",
	Usage: `usage: sluice config

Prints the config "sluice run" runs without -config, as a TOML file with its
comments: a sidecar on 127.0.0.1:8080 in front of http://127.0.0.1:9000,
the admin API on 127.0.0.1:9901, one group under the "target" law. Start a
config of your own from it:

    sluice config > sluice.toml
    sluice check sluice.toml      # every default filled in, or every problem

Exit codes: 0 printed, 2 wrong command line (it takes no arguments).
`,
	Run: runConfig,
}

func runConfig(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		cli.Fprintf(stderr, "sluice config: unexpected argument %q\nusage: sluice config\n", args[0])
		return exitUsage
	}
	if _, err := stdout.Write(configs.DefaultFile()); err != nil {
		cli.Fprintf(stderr, "sluice config: %v\n", err)
		return exitError
	}
	return exitOK
}
