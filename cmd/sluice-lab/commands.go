package main

import "github.com/sluicehq/sluice/cmd/internal/cli"

// program is the sluice-lab command line. Its commands are listed in the
// order "sluice-lab help" shows them (help itself, from package cli, comes
// last).
var program = &cli.Program{
	Name: "sluice-lab",
	Intro: "sluice-lab runs sluice's benchmark lab: open-loop load against a simulated\n" +
		"backend of known capacity, through each contender a scenario names.\n",
	Commands: []cli.Command{
		runCommand,
		backendCommand,
		hogCommand,
		scenariosCommand,
	},
}
