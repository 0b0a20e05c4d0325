// Command example is a worker pool whose concurrency sluice steers: its
// workers take a permit of a sluice group before each job and release it
// with the job's outcome and latency after, so that the group's limit (fixed,
// or moved by its law) decides how many jobs run at once, not the pool's
// size. It talks to the permit service of a running `sluice run`
// (permitclient).
//
//	example -addr unix:///run/sluice/permit.sock -group jobs -workers 64 -jobs 2000 -work 20ms
//
// prints, at the end, the jobs done, the most that ran at once, the asks
// sent to sluice and those dropped locally, and the refusals by reason (a
// refused worker waits the Retry-After it was given, at most -max-backoff,
// and asks again).
//
// The workers throttle themselves (package client, -throttle, on by
// default): while sluice refuses more than half of their asks, a share of
// them is dropped in the pool without asking (the drop probability of
// Google's SRE book, K = 2), and the worker waits a jittered backoff (at
// most -max-backoff) before it tries again.
//
// With -hold N it takes N permits, prints "holding N permits" and waits to
// be killed without releasing them: a client that vanishes, whose slots
// sluice takes back when the leases expire.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/permit/permitclient"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

type config struct {
	addr, tokenFile, transport string
	group, key, priority       string
	workers, jobs, hold        int
	work, wait, maxBackoff     time.Duration
	throttle                   bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c config
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "unix:///run/sluice/permit.sock", "the permit service: unix:///path.sock or host:port")
	fs.StringVar(&c.tokenFile, "token-file", "", "a file holding the bearer token (a TCP listener needs it)")
	fs.StringVar(&c.transport, "transport", "grpc", "grpc or http")
	fs.StringVar(&c.group, "group", "jobs", "the sluice group")
	fs.StringVar(&c.key, "key", "", "the key within the group (a tenant, a queue)")
	fs.StringVar(&c.priority, "priority", "", "critical, default, sheddable or 0..7 (default: default)")
	fs.IntVar(&c.workers, "workers", 16, "workers in the pool")
	fs.IntVar(&c.jobs, "jobs", 200, "jobs to run")
	fs.DurationVar(&c.work, "work", 20*time.Millisecond, "how long a job takes")
	fs.DurationVar(&c.wait, "wait", time.Second, "the longest a worker waits in the group's queue per request")
	fs.DurationVar(&c.maxBackoff, "max-backoff", 2*time.Second, "the longest a refused worker waits before asking again")
	fs.IntVar(&c.hold, "hold", 0, "take this many permits, never release them and wait to be killed")
	fs.BoolVar(&c.throttle, "throttle", true, "drop asks locally while sluice refuses most of them (adaptive throttling)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o := permitclient.Options{}
	switch c.transport {
	case "grpc":
	case "http":
		o.Transport = permitclient.HTTP
	default:
		fmt.Fprintf(stderr, "example: -transport %q: want grpc or http\n", c.transport)
		return 2
	}
	if c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			fmt.Fprintln(stderr, "example:", err)
			return 1
		}
		o.Token = strings.TrimSpace(string(b))
	}
	pc, err := permitclient.New(c.addr, o)
	if err != nil {
		fmt.Fprintln(stderr, "example:", err)
		return 2
	}
	defer pc.Close()
	if c.hold > 0 {
		return hold(ctx, pc, c, stdout, stderr)
	}
	return pool(ctx, pc, c, stdout, stderr)
}

func (c config) request() permitclient.Request {
	return permitclient.Request{Group: c.group, Key: c.key, Priority: c.priority, Wait: c.wait}
}

// hold takes c.hold permits and waits for ctx to end (or the process to be
// killed) without releasing them.
func hold(ctx context.Context, pc *permitclient.Client, c config, stdout, stderr io.Writer) int {
	for i := range c.hold {
		if _, err := pc.Acquire(ctx, c.request()); err != nil {
			fmt.Fprintf(stderr, "example: permit %d of %d: %v\n", i+1, c.hold, err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "holding %d permits\n", c.hold)
	<-ctx.Done()
	return 0
}

// pool runs c.jobs jobs on c.workers workers, each job under a permit.
func pool(ctx context.Context, pc *permitclient.Client, c config, stdout, stderr io.Writer) int {
	jobs := make(chan int)
	go func() {
		defer close(jobs)
		for i := range c.jobs {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var (
		running, peak, done atomic.Int64
		asked, dropped      atomic.Int64
		mu                  sync.Mutex
		refused             = map[string]int{}
		failed              error
		wg                  sync.WaitGroup
	)
	k := client.DefaultK
	if !c.throttle {
		k = math.Inf(1)
	}
	throttle, err := client.New(client.Config{K: k, MaxRetries: -1, Observe: func(e client.Event) {
		switch e.Kind {
		case client.EventAttempt:
			asked.Add(1)
		case client.EventDropped:
			dropped.Add(1)
		}
	}})
	if err != nil {
		fmt.Fprintln(stderr, "example:", err)
		return 1
	}
	start := time.Now()
	for range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				p, err := acquire(ctx, pc, throttle, c, func(reason string) {
					mu.Lock()
					refused[reason]++
					mu.Unlock()
				})
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				n := running.Add(1)
				for m := peak.Load(); n > m && !peak.CompareAndSwap(m, n); m = peak.Load() {
				}
				err = job(ctx, c.work)
				running.Add(-1)
				if err := p.Done(permitclient.OutcomeOf(err)); err != nil {
					fmt.Fprintln(stderr, "example: release:", err)
				}
				if err == nil {
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Fprintf(stdout, "jobs done: %d of %d in %v, at most %d at once on %d workers\n",
		done.Load(), c.jobs, time.Since(start).Round(time.Millisecond), peak.Load(), c.workers)
	fmt.Fprintf(stdout, "asks sent to sluice: %d, dropped locally: %d\n", asked.Load(), dropped.Load())
	reasons := make([]string, 0, len(refused))
	for r := range refused {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(stdout, "refused (%s): %d\n", r, refused[r])
	}
	if failed != nil {
		fmt.Fprintln(stderr, "example:", failed)
		return 1
	}
	return 0
}

// acquire asks for a permit until it gets one, each ask through the
// throttle: a refused worker waits the Retry-After it was given, a worker
// whose ask was dropped locally a jittered backoff from 10 ms, doubling;
// both at most c.maxBackoff.
func acquire(ctx context.Context, pc *permitclient.Client, throttle *client.Client, c config, onRefusal func(string)) (permitclient.Permit, error) {
	backoff := 10 * time.Millisecond
	for {
		var p permitclient.Permit
		err := throttle.Do(ctx, "permit:"+c.group, false, func(ctx context.Context) (client.Result, error) {
			var err error
			p, err = pc.Acquire(ctx, c.request())
			var ref *permitclient.RefusedError
			if errors.As(err, &ref) {
				return client.Result{Refused: true, Quota: ref.Status == 429, Reason: ref.Reason, RetryAfter: ref.RetryAfter}, err
			}
			return client.Result{Failed: err != nil}, err
		})
		var wait time.Duration
		var ref *permitclient.RefusedError
		switch {
		case errors.As(err, &ref):
			onRefusal(ref.Reason)
			wait = ref.RetryAfter
		case errors.Is(err, client.ErrDropped):
			wait = time.Duration(rand.Int64N(int64(backoff)) + 1)
			backoff = min(2*backoff, max(c.maxBackoff, time.Millisecond))
		default:
			return p, err
		}
		t := time.NewTimer(min(wait, c.maxBackoff))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return permitclient.Permit{}, ctx.Err()
		}
	}
}

// job stands for the work a permit covers: here, waiting d.
func job(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
