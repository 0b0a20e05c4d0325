package main

import (
	"context"
	"io"
	"strings"

	"github.com/sluicehq/sluice/cmd/internal/cli"
	"github.com/sluicehq/sluice/cmd/internal/lab"
)

var scenariosCommand = cli.Command{
	Name:    "scenarios",
	Summary: "list the shipped scenarios",
	Usage: `usage: sluice-lab scenarios

Lists the scenarios that ship with sluice-lab, each with the first line of
its explanation. "sluice-lab run NAME" runs one; a scenario file of your own
runs by its path.
`,
	Run: runScenarios,
}

func runScenarios(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		cli.Fprintf(stderr, "usage: sluice-lab scenarios\n")
		return exitUsage
	}
	names := lab.Scenarios()
	width := 0
	for _, name := range names {
		width = max(width, len(name))
	}
	for _, name := range names {
		s, err := lab.LoadScenario(name)
		if err != nil {
			cli.Fprintf(stderr, "sluice-lab: %v\n", err)
			return exitError
		}
		first, _, _ := strings.Cut(s.Header, "\n")
		cli.Fprintf(stdout, "  %-*s %s\n", width, name, first)
	}
	return exitOK
}
