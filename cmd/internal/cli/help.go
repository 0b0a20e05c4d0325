package cli

import (
	"context"
	"io"
)

// help is the built-in help command of p.
func (p *Program) help() Command {
	return Command{
		Name:    "help",
		Summary: "show help for " + p.Name + " or for one command",
		Usage: "usage: " + p.Name + ` help [COMMAND]

Without an argument, lists the commands. With one, shows that command's help.
`,
		Run: p.runHelp,
	}
}

func (p *Program) runHelp(_ context.Context, args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		p.printUsage(stdout)
		return ExitOK
	case 1:
		c, ok := p.lookup(args[0])
		if !ok {
			Fprintf(stderr, "%s help: unknown command %q\n", p.Name, args[0])
			return ExitUsage
		}
		Fprintf(stdout, "%s", c.Usage)
		return ExitOK
	default:
		Fprintf(stderr, "usage: %s help [COMMAND]\n", p.Name)
		return ExitUsage
	}
}

// printUsage writes the program's introduction and its command list.
func (p *Program) printUsage(w io.Writer) {
	Fprintf(w, "%s\nusage: %s COMMAND [ARGS]\n\ncommands:\n", p.Intro, p.Name)
	for _, c := range p.Listed() {
		Fprintf(w, "  %-10s %s\n", c.Name, c.Summary)
	}
	Fprintf(w, "\nRun \"%s help COMMAND\" or \"%s COMMAND -h\" for a command's flags and exit codes.\n", p.Name, p.Name)
}
