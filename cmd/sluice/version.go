package main

import (
	"context"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/sluicehq/sluice/cmd/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

var versionCommand = cli.Command{
	Name:    "version",
	Summary: "print the sluice version",
	Usage: `usage: sluice version

Prints the version, the VCS revision it was built from when known, and the Go
version. Exit code 0.
`,
	Run: runVersion,
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		cli.Fprintf(stderr, "usage: sluice version\n")
		return exitUsage
	}
	cli.Fprintf(stdout, "sluice %s (%s, %s)\n", version, revision(), runtime.Version())
	return exitOK
}

// revision returns the VCS revision recorded in the binary, or "unknown".
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
