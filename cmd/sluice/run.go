package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicehq/sluice/cmd/internal/cli"
	"github.com/sluicehq/sluice/configs"
)

// Exit codes of "sluice run" beyond the shared ones (see main.go).
const (
	exitCut         = 3 // the grace period ran out: requests in flight were cut
	exitInterrupted = 4 // a second signal: exited at once, without draining or saving
)

var runCommand = cli.Command{
	Name:    "run",
	Summary: "run the daemon: a reverse proxy that guards the upstream",
	Usage: `usage: sluice run [-config FILE] [-log-level LEVEL] [-log-json] [-grace DUR]

Runs sluice in front of the upstream the config names: it listens on
server.listen, admits each request through its group's limits, forwards it,
and adapts the limits every control.interval. Without -config it runs the
embedded default (sluice config prints it): 127.0.0.1:8080 in front of
http://127.0.0.1:9000. With [permit] it also serves the permit service, and
with [rls] Envoy's rate limit service, on the same groups.

Flags:
  -config FILE      the TOML config; "sluice check FILE" validates it
  -log-level LEVEL  trace, debug, info, warn or error (default info); limit
                    changes are logged at debug
  -log-json         log one JSON object per line instead of text
  -grace DUR        how long SIGTERM waits for requests in flight, such as
                    "10s" (default: server.shutdown_grace of the config)

Logs go to stderr. At start they name the listening address (the real one
when server.listen has port 0), the upstream, every group with its law and
limits, and what the state file restored.

Signals:
  SIGHUP            reload the config file: it is read and checked whole; a
                    bad file is logged, problem by problem, and the running
                    config keeps serving. Groups whose settings did not change
                    keep their learned limits. Changes to server, upstream,
                    probe, admin, redis and control.state_file need a restart:
                    they are logged and not applied. Of [permit] and [rls],
                    the leases, the mapping, the headers and the token files
                    are reloaded; listen, socket_mode, max_leases and adding
                    or removing the section need a restart.
  SIGTERM, SIGINT   stop accepting connections, wait up to the grace period
                    for requests in flight and streams (WebSockets, gRPC
                    calls, event streams), close the streams still open with
                    their protocol's close (WebSocket 1001, gRPC UNAVAILABLE
                    after a GOAWAY), write the state file, exit.
                    A second SIGTERM or SIGINT exits at once.

Exit codes:
  0  stopped by a signal after every request in flight finished
  1  could not start (bad config, listener in use, unreadable TLS key,
     ...), the server failed, or the state file could not be written at exit
  2  wrong command line
  3  stopped by a signal, but the grace period ran out: the requests still
     in flight were cut (the state file was written)
  4  a second signal during shutdown: exited at once, requests in flight
     cut, the state file not written
`,
	Run: runRun,
}

// runFlags are the flags of "sluice run".
type runFlags struct {
	config   string
	level    hclog.Level
	json     bool
	grace    time.Duration // < 0: the config's
	graceSet bool
}

func parseRunFlags(args []string, stderr io.Writer) (runFlags, bool) {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.config, "config", "", "the TOML config")
	level := fs.String("log-level", "info", "log level")
	fs.BoolVar(&f.json, "log-json", false, "log JSON")
	fs.DurationVar(&f.grace, "grace", -1, "shutdown grace period")
	err := fs.Parse(args)
	if err == nil && fs.NArg() > 0 {
		err = errors.New("unexpected argument " + fs.Arg(0))
	}
	if err == nil {
		if f.level = hclog.LevelFromString(*level); f.level == hclog.NoLevel || *level == "off" {
			err = errors.New(`-log-level must be trace, debug, info, warn or error, got "` + *level + `"`)
		}
	}
	fs.Visit(func(fl *flag.Flag) { f.graceSet = f.graceSet || fl.Name == "grace" })
	if err == nil && f.graceSet && f.grace < 0 {
		err = errors.New("-grace must not be negative, got " + f.grace.String())
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			cli.Fprintf(stderr, "sluice run: %v\n", err)
		}
		cli.Fprintf(stderr, "usage: sluice run [-config FILE] [-log-level LEVEL] [-log-json] [-grace DUR]\n")
		return f, false
	}
	return f, true
}

// runRun is "sluice run". It owns the process's signals while it runs;
// cancelling ctx stops it as SIGTERM does (tests drive it that way).
func runRun(ctx context.Context, args []string, _, stderr io.Writer) int {
	f, ok := parseRunFlags(args, stderr)
	if !ok {
		return exitUsage
	}
	log := newLogger(f.level, f.json, stderr)

	// Signals are caught from here on: one that comes while starting is
	// handled once the daemon runs.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	cfg, err := loadConfig(f.config)
	if err != nil {
		logConfigProblems(log.Named("config"), err)
		log.Error("not started: the config does not load", "file", f.config)
		return exitError
	}
	if err := checkNeededFiles(cfg); err != nil {
		log.Error("not started", "error", err)
		return exitError
	}
	made, err := makeSocketFolders(cfg)
	for _, dir := range made {
		log.Info("made the folder of a unix socket", "path", dir)
	}
	if err != nil {
		log.Error("not started", "error", err)
		return exitError
	}
	d, err := newDaemon(f.config, cfg, log)
	if err != nil {
		log.Error("not started", "error", err)
		return exitError
	}
	logStart(d)
	d.start()

	grace := time.Duration(cfg.Server.ShutdownGrace)
	if f.graceSet {
		grace = f.grace
	}
	code := exitOK
wait:
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGHUP {
				log.Info("SIGHUP: reloading the config")
				_ = d.reload(ctx, "SIGHUP") // logged there
				continue
			}
			log.Info("signal: shutting down", "signal", s.String(), "grace", grace.String())
			break wait
		case <-ctx.Done():
			log.Info("shutting down", "grace", grace.String())
			break wait
		case err := <-d.failed:
			log.Error("the server failed; shutting down", "error", err)
			code = exitError
			break wait
		}
	}

	done := d.shutdown(grace)
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGHUP {
				log.Warn("SIGHUP ignored: shutting down")
				continue
			}
			log.Warn("second signal: exiting at once; requests in flight are cut and the state file is not written", "signal", s.String())
			d.server.Close()
			d.closeFrontServers()
			return exitInterrupted
		case r := <-done:
			if r.streams > 0 {
				log.Info("grace period over: streams closed", "streams_cut", r.streams, "grace", grace.String())
			}
			if r.expired {
				log.Warn("grace period over: connections closed", "requests_cut", r.cut, "grace", grace.String())
				if code == exitOK {
					code = exitCut
				}
			} else {
				log.Info("requests in flight finished")
			}
			if err := d.stop(); err != nil {
				log.Error("state file not written at exit", "error", err)
				code = exitError
			}
			log.Info("stopped", "exit_code", code)
			return code
		}
	}
}

// loadConfig loads the file at path, or the embedded default for "".
func loadConfig(path string) (*configs.Config, error) {
	if path == "" {
		return configs.Default(), nil
	}
	return configs.Load(path)
}

// newLogger is the daemon's logger: hclog's text or JSON lines on w, without
// colour, at level and above.
func newLogger(level hclog.Level, json bool, w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "sluice",
		Level:      level,
		Output:     w,
		JSONFormat: json,
		Color:      hclog.ColorOff,
	})
}
