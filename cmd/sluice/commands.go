package main

import "github.com/sluicehq/sluice/cmd/internal/cli"

// program is the sluice command line. Its commands are listed in the order
// "sluice help" shows them (help itself, from package cli, comes last); a
// command is listed here only once it works.
var program = &cli.Program{
	Name: "sluice",
	Intro: "sluice is an adaptive concurrency limiter that keeps a service inside its\n" +
		"latency, CPU and memory targets.\n",
	Commands: []cli.Command{
		runCommand,
		demoCommand,
		checkCommand,
		configCommand,
		statusCommand,
		simulateCommand,
		versionCommand,
	},
	Aliases: map[string]string{"-v": "version", "-version": "version", "--version": "version"},
}
