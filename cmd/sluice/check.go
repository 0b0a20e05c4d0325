package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/sluicehq/sluice/cmd/internal/cli"
	"github.com/sluicehq/sluice/configs"
)

var checkCommand = cli.Command{
	Name:    "check",
	Summary: "validate a config file and print it with defaults filled in",
	Usage: `usage: sluice check [-q] FILE

Reads the TOML config FILE, fills in every default and validates it, the way
"sluice run -config FILE" and a reload would.

If FILE is valid, prints the effective configuration (TOML, every default
filled in, including the catch-all group "default" that takes requests no
other group matches) on stdout and exits 0. "sluice config" prints the
embedded default config, a file to start from.

Flags:
  -q   print nothing when FILE is valid; only the exit code tells

If FILE is not valid, prints every problem on stderr, one a line, as

    FILE:LINE: KEY: MESSAGE      e.g. sluice.toml:14: group[1].rate.burst: must be ≥ cost (5), got 2

(LINE is left out for a problem with a default value) and exits 1. An
unreadable FILE also exits 1. A wrong command line exits 2.

Files that FILE names (TLS certificates, token and password files) are not
opened: check the config where it will run.
`,
	Run: runCheck,
}

func runCheck(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quiet := fs.Bool("q", false, "print nothing when the file is valid")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			cli.Fprintf(stderr, "sluice check: %v\n", err)
		}
		cli.Fprintf(stderr, "usage: sluice check [-q] FILE\n")
		return exitUsage
	}
	file := fs.Arg(0)
	cfg, err := configs.Load(file)
	if configFailed(stderr, "sluice check", file, err) {
		return exitError
	}
	if err := checkFronts(cfg); err != nil {
		cli.Fprintf(stderr, "%s: %v\nsluice check: %s: 1 problem\n", file, err, file)
		return exitError
	}
	if *quiet {
		return exitOK
	}
	out, err := cfg.Effective()
	if err != nil {
		cli.Fprintf(stderr, "sluice check: %v\n", err)
		return exitError
	}
	cli.Fprintf(stdout, "# %s is valid; the effective configuration, every default filled in:\n\n%s", file, out)
	return exitOK
}

// configFailed writes why the config file did not load, as the commands
// that read one say it (cmd is the command's name): each problem on a line
// of its own, then "CMD: FILE: N problems"; or "CMD: ERR" for an error that
// is not a list of problems. It reports whether err is not nil.
func configFailed(stderr io.Writer, cmd, file string, err error) bool {
	var problems configs.Errors
	switch {
	case errors.As(err, &problems):
		for _, p := range problems {
			cli.Fprintf(stderr, "%s\n", p)
		}
		cli.Fprintf(stderr, "%s: %s: %d problem%s\n", cmd, file, len(problems), plural(len(problems)))
	case err != nil:
		cli.Fprintf(stderr, "%s: %v\n", cmd, err)
	default:
		return false
	}
	return true
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
