package main

import "github.com/sluicehq/sluice/cmd/internal/cli"

var demoCommand = cli.Command{
	Name:    "demo",
	Summary: "watch sluice keep an overloaded service fast, in about a minute",
	Usage: `usage: sluice demo [-duration D] [-quick] [-keep] [-out DIR]

Shows what sluice does, with nothing to configure and nothing else to run.
It starts a simulated service on loopback whose capacity is known (16
workers, 40 ms mean service time: C = 400 requests/s), then sends it a load
ramping from 0.5×C to 3×C twice, both times through this sluice binary
("sluice run" as a child process): first with no limit, then with the
"target" law keeping p99 latency within 300 ms. The live dashboard of the
sluice being measured is at the address printed first; a progress bar shows
the time left. At the end a table compares the two runs: goodput (answers
within 300 ms per second), admitted p99 latency, requests rejected, and the
peak memory (RSS) of the sluice process.

This is the "demo" scenario of the benchmark lab (sluice-lab run demo);
BENCHMARKS.md has the full comparisons.

Flags:
  -duration D  how long each of the two runs sends load (default 25s)
  -quick       a run of a few seconds each (overrides -duration)
  -keep        after the table, keep the second sluice and its dashboard up
               until Ctrl-C
  -out DIR     also keep the lab's reports there: summary.md, a JSON file
               per run, goodput and timeline plots (default: not kept)

The dashboard listens on 127.0.0.1:9901, or on a free port when that one is
taken. Ctrl-C stops the demo and everything it started.

A binary built with -tags nodemo leaves the demo out, and with it the lab
it runs (about 1 MB); its "sluice demo" says so and exits 1.

Exit codes: 0 done, 1 a run failed, 2 wrong command line.
`,
	Run: runDemo,
}
