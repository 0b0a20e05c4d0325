package main

import (
	"context"
	"flag"
	"io"
	"runtime/debug"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/cli"
	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
)

var backendCommand = cli.Command{
	Name:    "backend",
	Summary: "run the simulated backend on its own",
	Usage: `usage: sluice-lab backend [-addr HOST:PORT] [FLAGS]

Runs the simulated backend until interrupted and prints the URL it listens
on first on stdout. Its capacity is C = workers / mean service time. Every
path serves one unit of simulated work, except:

  GET  /_lab/stats   its counters as JSON (in service, queued, served, ...)
  POST /_lab/reset   zero the counters and restart the schedule of changes

Flags:
  -addr ADDR            listen address (default 127.0.0.1:0, a free port)
  -workers N            worker pool size W (default 16)
  -service DIST         service time: const:40ms, exp:40ms,
                        lognormal:40ms:0.8 (mean, sigma),
                        bimodal:20ms:200ms:0.1 (fast, slow, slow fraction)
                        (default exp:40ms)
  -queue N              bound on waiting requests, 503 beyond (default 0: none)
  -queued-memory BYTES  memory a request holds while it waits (default 0)
  -memory-limit BYTES   held memory at which it crashes (default 1 GiB)
  -restart-delay D      how long it stays down after a crash (default 1s)
  -cpu                  burn the service time as CPU instead of sleeping
  -drop-abandoned       drop a waiting request whose client went away
  -response-bytes N     size of a 200 response body (default 3)
  -change AT:KEY=V,...  a scheduled change, repeatable: 30s:slow=2,
                        60s:workers=8 (counted from start or reset)

Exit codes: 0 after an interrupt, 1 if it cannot listen, 2 on bad flags.
`,
	Run: runBackend,
}

func runBackend(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("backend", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	params := backend.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		cli.Fprintf(stderr, "sluice-lab backend: %v\nRun \"sluice-lab help backend\" for the flags.\n", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		cli.Fprintf(stderr, "sluice-lab backend: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	p, err := params()
	if err != nil {
		cli.Fprintf(stderr, "sluice-lab backend: %v\n", err)
		return exitUsage
	}
	if p.QueuedMemory > 0 {
		// Let the Go heap hand freed queued-request memory back promptly,
		// so RSS follows the model's held memory, not GOGC's headroom.
		debug.SetMemoryLimit(p.MemoryLimit + 256<<20)
	}
	in, err := backend.Listen(*addr, p)
	if err != nil {
		cli.Fprintf(stderr, "sluice-lab backend: %v\n", err)
		return exitError
	}
	cli.Fprintf(stdout, "sluice-lab backend: listening on %s (W=%d, service %s, C=%.0f req/s)\n",
		in.URL, p.Workers, p.Service, p.Capacity())
	<-ctx.Done()
	// A lab backend has nothing worth draining: a second, then close.
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = in.Shutdown(sctx)
	return exitOK
}
