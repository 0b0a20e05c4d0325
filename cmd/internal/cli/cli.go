// Package cli is the subcommand framework that sluice and sluice-lab share:
// a program is a name, an introduction and a list of commands; Run picks
// the command its first argument names and runs it with the rest.
//
// The conventions it keeps for every program:
//
//   - "PROG help" lists the commands, "PROG help COMMAND" prints one
//     command's usage on stdout; help is built in and listed last.
//   - "-h", "-help" and "--help" stand for "help"; a Program may add
//     aliases of its own (sluice maps "-v" and friends to "version").
//   - "PROG COMMAND -h" (or -help, --help, anywhere before a "--") prints
//     the command's usage on stdout, its flags among them, and exits
//     ExitOK, as "PROG help COMMAND" does: the command does not run.
//   - A missing or unknown command, or a wrong "help" line, is a usage
//     error: exit code ExitUsage, the problem on stderr and, for a missing
//     or unknown command, the command list after it.
//   - A command returns the process exit code: ExitOK, ExitError, ExitUsage
//     or a code of its own that it documents.
//
// Fprintf and IsTerminal serve the commands' own output to stdout and stderr.
//
// Signals and the context are the caller's business: Run passes ctx to the
// command unchanged. A Program is read only by Run, so one may be used by
// many goroutines at once as long as none of them changes it.
package cli

import (
	"context"
	"fmt"
	"io"
)

// Exit codes shared by every command. A command may define more of its
// own ("sluice run" does) above ExitUsage.
const (
	ExitOK    = 0 // success
	ExitError = 1 // the command ran and failed (bad config, failed start, ...)
	ExitUsage = 2 // the command line itself is wrong
)

// Command is one subcommand of a program.
type Command struct {
	Name    string // what the user types: "run"
	Summary string // one line for the command list
	Usage   string // full help text for "PROG help NAME", ending in a newline

	// Run runs the command with the arguments after its name and returns
	// the process exit code. It writes its output to stdout and its
	// diagnostics to stderr.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// Program is a command line made of subcommands.
type Program struct {
	// Name is the program's name as the user types it: "sluice".
	Name string
	// Intro opens the command list: what the program is, one or more lines,
	// each ending in a newline.
	Intro string
	// Commands are the program's commands in the order help lists them;
	// the built-in help command follows them.
	Commands []Command
	// Aliases maps another spelling of a command name to the name, e.g.
	// "--version" to "version". "-h", "-help" and "--help" are always
	// aliases of "help". Nil means none beyond those.
	Aliases map[string]string
}

// Run dispatches args (the command line without the program's own name) to
// the command args[0] names and returns the process exit code.
func (p *Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		p.printUsage(stderr)
		return ExitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	default:
		if to, ok := p.Aliases[name]; ok {
			name = to
		}
	}
	cmd, ok := p.lookup(name)
	if !ok {
		Fprintf(stderr, "%s: unknown command %q\n\n", p.Name, name)
		p.printUsage(stderr)
		return ExitUsage
	}
	if asksHelp(rest) {
		Fprintf(stdout, "%s", cmd.Usage)
		return ExitOK
	}
	return cmd.Run(ctx, rest, stdout, stderr)
}

// asksHelp reports whether a command's arguments ask for its help: one of
// them, before a "--" that ends the flags, is a help flag as package flag
// spells it. Taking the first such argument for a request for help even
// where it could be a flag's value ("-config -h") keeps the rule one line
// long; a file named -h is reached as ./-h.
func asksHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--h", "-help", "--help":
			return true
		}
	}
	return false
}

// Listed returns the commands in the order help lists them: Commands, then
// the built-in help command.
func (p *Program) Listed() []Command {
	listed := make([]Command, 0, len(p.Commands)+1)
	listed = append(listed, p.Commands...)
	return append(listed, p.help())
}

// lookup finds the listed command called name.
func (p *Program) lookup(name string) (Command, bool) {
	for _, c := range p.Listed() {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// Fprintf writes to a terminal stream, where a failed write has nowhere
// better to be reported: it ignores the error.
func Fprintf(w io.Writer, format string, a ...any) {
	_, _ = fmt.Fprintf(w, format, a...)
}
