package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
)

// Defaults for the zero fields of Params.
const (
	DefaultSLO         = 200 * time.Millisecond
	DefaultTimeout     = 10 * time.Second
	DefaultMaxInflight = 4096
)

// Params configures a Generator. Zero fields mean the default.
type Params struct {
	Target   string   // the URL every request goes to
	Schedule Schedule // the arrival rate over time
	// SLO is the latency within which a 2xx counts as goodput. Zero:
	// DefaultSLO.
	SLO time.Duration
	// Timeout bounds each try, from its send instant. Zero: DefaultTimeout.
	Timeout time.Duration
	// Deadline is the caller's deadline, from each arrival's intended send
	// instant: none of its tries outlasts it, no retry starts at or after
	// it, and in Retry mode Client it is the context deadline package
	// client weighs its retries against. Zero: none (each try has the
	// Timeout, and retries start until the run's end).
	Deadline time.Duration
	// MaxInflight bounds the tries in flight at once (goroutines and
	// connections). An arrival or retry that finds it full is not delayed
	// but fails as KindOverflow. Zero: DefaultMaxInflight.
	MaxInflight int
	// BodyBytes makes each request a POST with a body of that many bytes;
	// zero sends GETs.
	BodyBytes int
	// Tenants and Priorities assign each request a class, sent in the
	// X-Tenant and X-Priority headers.
	Tenants, Priorities Mix
	Retry               Retry
	// Seed seeds the arrivals and the class draws, so two runs with one
	// seed offer the same requests at the same offsets.
	Seed uint64
	// Clock is the time source; nil: the wall clock.
	Clock Clock
	// Transport sends the requests (in Retry mode Client, under the
	// client's own Transport); nil: an http.Transport sized for
	// MaxInflight connections.
	Transport http.RoundTripper
}

func (p Params) withDefaults() Params {
	if p.SLO == 0 {
		p.SLO = DefaultSLO
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	if p.MaxInflight == 0 {
		p.MaxInflight = DefaultMaxInflight
	}
	if p.Clock == nil {
		p.Clock = realClock{}
	}
	if p.Transport == nil {
		p.Transport = &http.Transport{
			MaxIdleConns:        p.MaxInflight,
			MaxIdleConnsPerHost: p.MaxInflight,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		}
	}
	return p
}

// Validate returns every problem with p.
func (p Params) Validate() []error {
	var errs []error
	if u, err := url.Parse(p.Target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("load: target %q must be an http(s) URL", p.Target))
	}
	errs = append(errs, p.Schedule.Validate()...)
	if p.SLO < 0 || p.Timeout < 0 || p.Deadline < 0 {
		errs = append(errs, fmt.Errorf("load: slo, timeout and deadline must not be negative, got %v, %v and %v", p.SLO, p.Timeout, p.Deadline))
	}
	if p.MaxInflight < 0 || p.MaxInflight > 1<<20 {
		errs = append(errs, fmt.Errorf("load: max in-flight must be in [1,%d], got %d", 1<<20, p.MaxInflight))
	}
	if p.BodyBytes < 0 || p.BodyBytes > 64<<20 {
		errs = append(errs, fmt.Errorf("load: body must be in [0,64MiB], got %d", p.BodyBytes))
	}
	errs = append(errs, p.Tenants.Validate("tenant")...)
	errs = append(errs, p.Priorities.Validate("priority")...)
	errs = append(errs, p.Retry.Validate()...)
	return errs
}

// Live is a running generator's progress so far.
type Live struct {
	Elapsed  time.Duration
	Offered  int64 // arrivals so far
	Inflight int64 // tries in flight now
	OK       int64
	Rejected int64
	Errors   int64
}

// Generator runs one schedule of open-loop load. Run it once.
type Generator struct {
	p      Params
	client *http.Client
	own    *http.Transport // the transport New made, closed after Run
	body   []byte
	start  time.Time
	done   time.Time // no retry is started after it

	inflight                          atomic.Int64
	offered, ok, rejected, errorCount atomic.Int64
	started                           atomic.Int64 // unix ns of the start, 0 before Run
	events                            chan event
	// throttled is set in Retry mode Client: the requests go through
	// package client, which retries them, and its attempts are the tries
	// (counted by tries, below it).
	throttled bool
}

// dropReason is the reason of a request package client dropped locally.
const dropReason = "client-drop"

// New returns a Generator for p.
func New(p Params) (*Generator, error) {
	if errs := p.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	own := p.Transport == nil
	p = p.withDefaults()
	g := &Generator{
		p:      p,
		client: &http.Client{Transport: p.Transport},
		body:   bytes.Repeat([]byte{'x'}, p.BodyBytes),
		events: make(chan event, 1<<14),
	}
	if own {
		g.own = p.Transport.(*http.Transport)
	}
	if p.Retry.Mode == Client {
		retries := p.Retry.Attempts
		if retries == 0 {
			retries = -1 // none
		}
		c, err := client.New(client.Config{MaxRetries: retries, Backoff: p.Retry.Backoff, Clock: clientClock{p.Clock}})
		if err != nil {
			return nil, err
		}
		g.throttled = true
		g.client.Transport = c.Transport(tries{g: g, base: p.Transport})
	}
	return g, nil
}

// Live returns the progress so far; safe to call while Run runs.
func (g *Generator) Live() Live {
	l := Live{
		Offered:  g.offered.Load(),
		Inflight: g.inflight.Load(),
		OK:       g.ok.Load(),
		Rejected: g.rejected.Load(),
		Errors:   g.errorCount.Load(),
	}
	if s := g.started.Load(); s != 0 {
		l.Elapsed = g.p.Clock.Now().Sub(time.Unix(0, s))
	}
	return l
}

// arrival is one request of the schedule.
type arrival struct {
	intended         time.Duration
	tenant, priority int
}

// Run sends the schedule's load and returns what it measured once every
// request is over: the schedule's end plus at most the timeout (and, for
// retrying clients, no retry starts after that). If ctx ends first, Run
// stops sending, cancels what is in flight and returns the partial result
// with ctx's error.
func (g *Generator) Run(ctx context.Context) (Result, error) {
	g.start = g.p.Clock.Now()
	g.done = g.start.Add(g.p.Schedule.Duration() + g.p.Timeout)
	g.started.Store(g.start.UnixNano())
	col := newCollector(g.p)
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for e := range g.events {
			col.add(e)
		}
	}()

	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(g.p.Seed, g.p.Seed^0x9e3779b97f4a7c15))
	arrivals := NewArrivals(g.p.Schedule, rng)
	for {
		at, more := arrivals.Next()
		if !more {
			break
		}
		if err := g.p.Clock.SleepUntil(ctx, g.start.Add(at)); err != nil {
			break
		}
		a := arrival{intended: at, tenant: g.p.Tenants.pick(rng), priority: g.p.Priorities.pick(rng)}
		g.offered.Add(1)
		if !g.acquire() {
			g.finish(a, event{kind: KindOverflow})
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.request(ctx, a)
		}()
	}
	wg.Wait()
	if g.own != nil {
		g.own.CloseIdleConnections()
	}
	close(g.events)
	<-collected
	return col.result(g.start, g.p), ctx.Err()
}

// acquire takes a slot for one try, or reports that none is free.
func (g *Generator) acquire() bool {
	if g.inflight.Add(1) > int64(g.p.MaxInflight) {
		g.inflight.Add(-1)
		return false
	}
	return true
}

// request runs an arrival's tries; the caller has acquired a slot for the
// first.
func (g *Generator) request(ctx context.Context, a arrival) {
	sent := g.start.Add(a.intended)
	lag := g.p.Clock.Now().Sub(sent)
	due := g.due(a)
	for n := 1; ; n++ {
		status, retryAfter, reason, kind := g.try(ctx, a, due)
		now := g.p.Clock.Now()
		g.inflight.Add(-1)
		if !g.throttled { // a throttled request's tries were counted as they went
			g.events <- event{sentAt: sent.Sub(g.start), latency: now.Sub(sent), kind: kind,
				intended: a.intended, tenant: a.tenant, priority: a.priority}
		}
		final := event{kind: kind, status: status, reason: reason, sent: reason != dropReason, lag: lag, latency: now.Sub(g.start.Add(a.intended))}
		if kind != KindRejected || n > g.p.Retry.Attempts || g.throttled {
			g.finish(a, final)
			return
		}
		next := now.Add(g.p.Retry.wait(n, retryAfter, now, rand.Float64()))
		if next.After(g.done) || !next.Before(due) || g.p.Clock.SleepUntil(ctx, next) != nil {
			g.finish(a, final)
			return
		}
		if !g.acquire() {
			final.kind = KindOverflow
			g.finish(a, final)
			return
		}
		sent = g.p.Clock.Now()
	}
}

// due returns the last instant of an arrival's request: its caller's
// deadline, or without one the end of the run's last try.
func (g *Generator) due(a arrival) time.Time {
	if g.p.Deadline > 0 {
		return g.start.Add(a.intended + g.p.Deadline)
	}
	return g.done.Add(g.p.Timeout)
}

// finish records the end of an arrival's request.
func (g *Generator) finish(a arrival, e event) {
	e.final, e.intended, e.tenant, e.priority = true, a.intended, a.tenant, a.priority
	switch e.kind {
	case KindOK:
		g.ok.Add(1)
	case KindRejected:
		g.rejected.Add(1)
	default:
		g.errorCount.Add(1)
	}
	g.events <- e
}

// try sends one try, due to end by due at the latest, and classifies its
// answer; a rejection's reason is its Sluice-Reason field, else its status
// code (dropReason for a request package client dropped). A throttled
// request is package client's to retry: due is its context's deadline, and
// each of its tries has the timeout too (see tries).
func (g *Generator) try(ctx context.Context, a arrival, due time.Time) (status int, retryAfter, reason, kind string) {
	if !g.throttled {
		due = minTime(due, g.p.Clock.Now().Add(g.p.Timeout))
	} else {
		ctx = context.WithValue(ctx, arrivalKey{}, a)
	}
	tctx, cancel := context.WithTimeout(ctx, due.Sub(g.p.Clock.Now()))
	defer cancel()
	method, body := http.MethodGet, io.Reader(nil)
	if len(g.body) > 0 {
		method, body = http.MethodPost, bytes.NewReader(g.body)
	}
	req, err := http.NewRequestWithContext(tctx, method, g.p.Target, body)
	if err != nil {
		return 0, "", "", KindTransport
	}
	if a.tenant >= 0 {
		req.Header.Set(backend.TenantHeader, g.p.Tenants[a.tenant].Name)
	}
	if a.priority >= 0 {
		req.Header.Set(backend.PriorityHeader, g.p.Priorities[a.priority].Name)
	}
	resp, err := g.client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	kind = kindOf(ctx, tctx, resp, err)
	switch kind {
	case KindOK, KindStatus:
		return resp.StatusCode, "", "", kind
	case KindRejected:
		reason := resp.Header.Get("Sluice-Reason")
		switch {
		case client.Dropped(resp):
			reason = dropReason
		case reason == "":
			reason = strconv.Itoa(resp.StatusCode)
		}
		return resp.StatusCode, resp.Header.Get("Retry-After"), reason, KindRejected
	default:
		return 0, "", "", kind
	}
}

// kindOf classifies a try's answer; ctx is the run's, tctx the try's.
func kindOf(ctx, tctx context.Context, resp *http.Response, err error) string {
	switch {
	case err != nil && ctx.Err() != nil:
		return KindCancelled
	case err != nil && tctx.Err() != nil:
		return KindTimeout
	case err != nil:
		return KindTransport
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return KindOK
	case retryable(resp.StatusCode):
		return KindRejected
	default:
		return KindStatus
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

type arrivalKey struct{}

// tries is the transport under package client's in Retry mode Client: it
// counts each attempt that leaves as a try, as the generator counts its
// own, and bounds it by the timeout (until its body is closed).
type tries struct {
	g    *Generator
	base http.RoundTripper
}

func (t tries) RoundTrip(req *http.Request) (*http.Response, error) {
	g := t.g
	a, _ := req.Context().Value(arrivalKey{}).(arrival)
	sent := g.p.Clock.Now()
	tctx, cancel := context.WithTimeout(req.Context(), g.p.Timeout)
	resp, err := t.base.RoundTrip(req.WithContext(tctx))
	g.events <- event{sentAt: sent.Sub(g.start), latency: g.p.Clock.Now().Sub(sent), kind: kindOf(req.Context(), tctx, resp, err),
		intended: a.intended, tenant: a.tenant, priority: a.priority}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends a try's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// clientClock is the generator's Clock as package client's.
type clientClock struct{ c Clock }

func (c clientClock) Now() time.Time { return c.c.Now() }

func (c clientClock) Sleep(ctx context.Context, d time.Duration) error {
	return c.c.SleepUntil(ctx, c.c.Now().Add(d))
}
