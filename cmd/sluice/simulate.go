package main

import "github.com/sluicehq/sluice/cmd/internal/cli"

var simulateCommand = cli.Command{
	Name:    "simulate",
	Summary: "predict what a config's groups do to a described service and load, in seconds",
	Usage: `usage: sluice simulate [-config FILE] -scenario NAME [flags]
       sluice simulate [-config FILE] -workers N -mean D -load SPEC [flags]

Runs the groups of a config in sluice's deterministic simulator against a
described service and load, and prints what each would do, before it is
deployed: per phase of the load the goodput (successes within the SLO per
second), the p50 and p99 latency end to end, the share rejected and why, and
the concurrency limit; then the same over time; and, with -png, a chart of it.
Nothing is sent anywhere: minutes of load take a fraction of a second. The laws,
queue and shedding are the daemon's own code, in virtual time.

Each group is simulated on its own, as if all of the load were its
requests, with its law, bounds, targets, queue, rate, priority and fair
share. What the simulator does not model of the config or of the load
(a rate quota shared in Redis, a rate per key, ...) is listed under the
group: it is never ignored silently.

The config:
  -config FILE      the TOML config (default: the embedded default, "sluice
                    config" prints it)
  -group NAME       simulate only this group (default: every group)
  -slo D            goodput counts successes within D (default: each
                    group's latency target, else the scenario's SLO)

The service and its load, from a scenario:
  -scenario NAME    a shipped scenario: one of the lab's, with the backend,
                    load and clients the lab runs on real processes:
` + simulateScenarios + `
                    or a file: the lab's TOML (*.toml) or the simulator's
                    text form (*.scenario)
or described by flags, which also override a scenario's service and clients:
  -workers N        how many requests the service serves at once
  -mean D           one request's mean service time unloaded (what the lab's
                    backend takes: -service lognormal:10ms:0.5 is a mean)
  -median D         or its median (a measured p50 unloaded)
  -capacity N       requests per second the service completes at most
                    (any two of -workers, -capacity and the time give the
                    third: capacity = workers / mean; with a scenario, what
                    is not given is the scenario's)
  -service-time DIST  the time's shape: exp (default), const, lognormal:SIGMA,
                    or the lab backend's form with its mean in it
                    (lognormal:10ms:0.5, exp:40ms, bimodal:20ms:200ms:0.1)
  -shared-cores N   the service shares N cores with sluice and the load's
                    clients (as in the lab, all on its 2 cores): each
                    request costs CPU there (the clients' sending, sluice
                    forwarding or refusing, the service's handling), a
                    served request's answer takes its trip back holding
                    its slot but no worker, and busy cores make every hop
                    wait (default: not shared, none of this modelled)
  -shared-costs LIST  what a request costs there, KEY=DURATION of send,
                    forward, refuse, handle, wake (the trip's fixed time);
                    default the lab's: send=90us,forward=100us,refuse=30us,
                    handle=90us,wake=1.5ms
  -load SPEC        the offered load, comma-separated segments RATE [for D]:
                    RATE is 3x (times the capacity), 1200/s, or a ramp 0.5x..3x
                      -load 3x                                   constant
                      -load "0.7x for 30s, 1.4x for 30s, 0.7x"   steps
                      -load "1x for 20s, 5x for 2s, 1x for 20s"  a spike
  -duration D       how long a segment without "for" lasts (default 60s)
  -change AT:K=V    the service changes at AT: workers=N (its capacity
                    follows) or slow=F (F times its service time), e.g.
                    -change 30s:workers=8 -change 1m:slow=2; repeatable
  -timeout D        clients give up on a request after D (default 10s)
  -retries N        clients retry a rejected or timed-out request N times
                    (default 0)
  -backoff D        they wait D (jittered ×0.5–1.5) before a retry (10ms)
  -retry-after      they wait what Retry-After says (1–2 s) instead
                    (a scenario's clients keep its own values of these four
                    unless given)
  -priorities MIX   the requests' priorities, for a group whose priority is
                    a header: e.g. critical=0.2,sheddable=0.8
  -tenants MIX      the clients' keys, for a group with a key: e.g.
                    greedy=6,a=1,b=1
  -seed N           the random seed (default: the scenario's, else 1)

The output:
  -every D          one row of the time table per D (default: a round step, at most 25 rows)
  -png FILE         also draw the chart into FILE, a PNG (default: none)
  -lab FILE         hold the simulation to a lab run of the same scenario,
                    sluice-lab's DIR/SCENARIO/CONTENDER.json (its scenario
                    and its contender's sluice.toml unless -scenario and
                    -config say otherwise): goodput, p99 and the limit per
                    phase and in each of the 3 seconds after a step, their
                    ratios and what is outside ±5 % (goodput), ±25 % (p99)
                    and ±30 % (limit); the group simulated must be one.
                    The lab runs everything on its own cores: add
                    -shared-cores with their number (2 on the lab's machine)

A binary built with -tags nodemo (see "sluice help demo") leaves the
simulator out with the lab; its "sluice simulate" says so and exits 1.

Exit codes: 0 done, 1 the config or a scenario file is not valid, 2 wrong
command line (an unknown flag, group or scenario, a bad value).
`,
	Run: runSimulate,
}
