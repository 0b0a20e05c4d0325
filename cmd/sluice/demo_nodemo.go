//go:build nodemo

package main

import (
	"context"
	"io"

	"github.com/sluicehq/sluice/cmd/internal/cli"
)

// runDemo of a binary built without the demo (-tags nodemo, a lean build
// for deployment) says where the demo is.
func runDemo(_ context.Context, _ []string, _, stderr io.Writer) int {
	cli.Fprintf(stderr, "sluice demo: this sluice was built with -tags nodemo, without the demo; "+
		"a default build has it: go run github.com/sluicehq/sluice/cmd/sluice demo\n")
	return exitError
}
