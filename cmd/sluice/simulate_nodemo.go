//go:build nodemo

package main

import (
	"context"
	"io"

	"github.com/sluicehq/sluice/cmd/internal/cli"
)

// simulateScenarios is empty in a build without the lab.
const simulateScenarios = "                    (none: this binary was built with -tags nodemo)"

// runSimulate of a binary built without the lab (-tags nodemo, a lean
// build for deployment) says where the simulator is.
func runSimulate(_ context.Context, _ []string, _, stderr io.Writer) int {
	cli.Fprintf(stderr, "sluice simulate: this sluice was built with -tags nodemo, without the simulator and the lab's scenarios; "+
		"a default build has it: go run github.com/sluicehq/sluice/cmd/sluice simulate\n")
	return exitError
}
