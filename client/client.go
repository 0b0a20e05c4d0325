package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config's zero fields.
const (
	// DefaultK is the SRE book's multiplier: a backend is sent up to K
	// requests for each it accepted over the window before any is dropped.
	DefaultK = 2.0
	// DefaultWindow is the throttle's window (the book's "last two minutes").
	DefaultWindow = 2 * time.Minute
	// DefaultRetryRatio is the retry budget: retries at most a tenth of the
	// requests of the budget's window (the book's per-client budget).
	DefaultRetryRatio = 0.1
	// DefaultRetryFloor is the retries each budget window allows beyond
	// the ratio, so that a client that sends little can still retry.
	DefaultRetryFloor = 10
	// DefaultBudgetWindow is the retry budget's window.
	DefaultBudgetWindow = 10 * time.Second
	// DefaultMaxRetries is the retries of one request: three attempts in
	// all, the book's per-request limit.
	DefaultMaxRetries = 2
	// DefaultBackoff is the base of the exponential backoff: retry n waits
	// up to DefaultBackoff·2^(n-1), drawn uniformly (full jitter).
	DefaultBackoff = 50 * time.Millisecond
	// DefaultMaxWait is the longest a retry waits: a refusal that asks for
	// more (Retry-After, RateLimit) is returned to the caller instead.
	DefaultMaxWait = 10 * time.Second
	// DefaultMaxBackends bounds the backends a Client keeps apart; the
	// ones beyond share one state.
	DefaultMaxBackends = 1024
)

// Throttle and budget windows are kept in this many slots.
const (
	throttleSlots = 24 // 5 s each in the default 2 minutes
	budgetSlots   = 10 // 1 s each in the default 10 s
)

// Config is what a Client does. The zero value of each field is its
// documented default; a negative MaxRetries turns retries off.
type Config struct {
	// K is the adaptive throttle's multiplier, at least 1: a request to a
	// backend is dropped locally with probability
	// max(0, (requests − K·accepts) / (requests + 1)) over the last Window,
	// requests counting every attempt (the ones dropped locally too) and
	// accepts those the backend did not refuse. math.Inf(1) turns the
	// throttle off. Zero: DefaultK.
	K float64
	// Window is the throttle's sliding window. Zero: DefaultWindow.
	Window time.Duration
	// RetryRatio bounds retries to that share of the requests (first
	// attempts) of the last BudgetWindow, plus RetryFloor. Zero:
	// DefaultRetryRatio.
	RetryRatio float64
	// RetryFloor is the retries each BudgetWindow allows beyond the ratio.
	// Zero: DefaultRetryFloor; negative: none.
	RetryFloor int
	// BudgetWindow is the retry budget's sliding window. Zero:
	// DefaultBudgetWindow.
	BudgetWindow time.Duration
	// MaxRetries is how many times one request is retried at most. Zero:
	// DefaultMaxRetries; negative: never.
	MaxRetries int
	// Backoff is the base of the jittered exponential backoff between
	// attempts. Zero: DefaultBackoff.
	Backoff time.Duration
	// MaxWait is the longest wait before a retry. Zero: DefaultMaxWait.
	MaxWait time.Duration
	// MaxBackends bounds the backends kept apart. Zero: DefaultMaxBackends.
	MaxBackends int
	// Tags are set on every request that does not carry its own (see
	// WithTags), under the names of Headers.
	Tags Tags
	// Headers names the request headers of the tags. Zero fields: the
	// names of DefaultHeaders.
	Headers Headers
	// Observe, when set, is called for every Event, synchronously on the
	// request's goroutine: keep it short and safe for concurrent use.
	Observe func(Event)
	// Clock is the time source. Nil: the wall clock.
	Clock Clock
	// Rand returns uniform draws in [0, 1) for the throttle's drops and the
	// backoff's jitter; called concurrently. Nil: math/rand/v2's Float64.
	Rand func() float64
}

// withDefaults returns c with its zero fields filled in, or the first
// problem with it.
func (c Config) withDefaults() (Config, error) {
	if c.K == 0 {
		c.K = DefaultK
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.RetryRatio == 0 {
		c.RetryRatio = DefaultRetryRatio
	}
	switch {
	case c.RetryFloor == 0:
		c.RetryFloor = DefaultRetryFloor
	case c.RetryFloor < 0:
		c.RetryFloor = 0
	}
	if c.BudgetWindow == 0 {
		c.BudgetWindow = DefaultBudgetWindow
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.MaxBackends == 0 {
		c.MaxBackends = DefaultMaxBackends
	}
	if c.Clock == nil {
		c.Clock = wallClock{}
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	c.Headers = c.Headers.withDefaults()
	switch {
	case math.IsNaN(c.K) || c.K < 1:
		return c, fmt.Errorf("client: K must be at least 1, got %v", c.K)
	case c.Window < time.Second || c.BudgetWindow < time.Second:
		return c, fmt.Errorf("client: Window and BudgetWindow must be at least 1s, got %v and %v", c.Window, c.BudgetWindow)
	case math.IsNaN(c.RetryRatio) || c.RetryRatio < 0 || c.RetryRatio > 10:
		return c, fmt.Errorf("client: RetryRatio must be from 0 to 10, got %v", c.RetryRatio)
	case c.Backoff < 0 || c.MaxWait < 0:
		return c, fmt.Errorf("client: Backoff and MaxWait must not be negative, got %v and %v", c.Backoff, c.MaxWait)
	case c.MaxBackends < 1:
		return c, fmt.Errorf("client: MaxBackends must be at least 1, got %d", c.MaxBackends)
	}
	if err := c.Headers.check(); err != nil {
		return c, err
	}
	if err := c.Tags.check(); err != nil {
		return c, err
	}
	return c, nil
}

// Client throttles and retries the requests of one process to its
// backends. It keeps, per backend, the throttle's window (requests and
// accepts) and the retry budget's (requests and retries). Safe for
// concurrent use; share one per process (the throttle learns from all the
// traffic to a backend).
type Client struct {
	cfg      Config
	backends sync.Map // backend name → *backend
	count    atomic.Int64
	other    *backend // the state of the backends beyond MaxBackends
	tagVals  tagValues
	// throttleOff is K = +Inf: no request is ever dropped.
	throttleOff bool
	// wall is the wall clock as Config.Clock (see nanos).
	wall bool
}

// backend is what a Client knows of one backend.
type backend struct {
	name     string
	throttle *window // a: requests, b: accepts
	budget   *window // a: requests (first attempts), b: retries
}

// New returns a Client for c, or the problem with c.
func New(c Config) (*Client, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	cl := &Client{cfg: c, tagVals: c.Tags.values(), throttleOff: math.IsInf(c.K, 1)}
	_, cl.wall = c.Clock.(wallClock)
	cl.other = cl.newBackend("")
	return cl, nil
}

func (c *Client) newBackend(name string) *backend {
	return &backend{
		name:     name,
		throttle: newWindow(c.cfg.Window, throttleSlots),
		budget:   newWindow(c.cfg.BudgetWindow, budgetSlots),
	}
}

// backend returns the state of the named backend, made on first use.
func (c *Client) backend(name string) *backend {
	if b, ok := c.backends.Load(name); ok {
		return b.(*backend)
	}
	if c.count.Load() >= int64(c.cfg.MaxBackends) {
		return c.other
	}
	b, loaded := c.backends.LoadOrStore(name, c.newBackend(name))
	if !loaded {
		c.count.Add(1)
	}
	return b.(*backend)
}

// ErrDropped is what a request dropped by the adaptive throttle fails with
// (errors.Is); the error itself is a *DropError.
var ErrDropped = errors.New("client: dropped locally by the adaptive throttle")

// DropError is a request the Client did not send: its backend refused so
// many recent requests that the throttle dropped it locally.
type DropError struct {
	Backend string
	// P is the drop probability the request was drawn against.
	P float64
}

func (e *DropError) Error() string {
	return fmt.Sprintf("client: %s: dropped locally by the adaptive throttle (drop probability %.2f)", e.Backend, e.P)
}

// Is reports whether target is ErrDropped.
func (e *DropError) Is(target error) bool { return target == ErrDropped }

// Result is what one attempt told of the backend's answer; the zero value
// is an answer the backend accepted.
type Result struct {
	// Refused is a refusal by the service or its limiter (HTTP 429 or
	// 503, gRPC RESOURCE_EXHAUSTED or UNAVAILABLE): not accepted.
	Refused bool
	// Quota is a refusal for the client's quota (429, RESOURCE_EXHAUSTED,
	// Sluice-Reason "rate"): never retried before RetryAfter.
	Quota bool
	// Reason is the refusal's Sluice-Reason, when it has one.
	Reason string
	// RetryAfter is the wait the answer asked for (Retry-After, RateLimit,
	// grpc-retry-pushback-ms); zero when it named none.
	RetryAfter time.Duration
	// NoRetry is an answer that asked not to be retried at all (a negative
	// gRPC pushback).
	NoRetry bool
	// Failed is an attempt that got no answer: the connection was refused
	// or reset, the answer did not come in time. Not accepted, as a
	// refusal. (An error alone is not a failure: a gRPC NOT_FOUND is an
	// answer the backend gave.)
	Failed bool
}

// Outcome is how an attempt ended, as the throttle counts it.
type Outcome uint8

const (
	// Accepted is an answer other than a refusal (an error status
	// included: the backend took the request).
	Accepted Outcome = iota
	// Refused is a refusal: counted as a request not accepted.
	Refused
	// Failed is an attempt that got no answer (connection refused, reset,
	// timed out): counted as a request not accepted.
	Failed
	// Cancelled is an attempt the caller gave up on (its context ended):
	// not counted.
	Cancelled
)

var outcomeNames = [...]string{"accepted", "refused", "failed", "cancelled"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", o)
}

// outcomeOf classifies an attempt's answer: an error once ctx has ended is
// the caller's giving up, whatever r says.
func outcomeOf(ctx context.Context, r Result, err error) Outcome {
	switch {
	case err != nil && ctx.Err() != nil:
		return Cancelled
	case r.Refused:
		return Refused
	case r.Failed:
		return Failed
	default:
		return Accepted
	}
}

// EventKind is what an Event reports.
type EventKind uint8

const (
	// EventAttempt is an attempt that ended (Outcome says how).
	EventAttempt EventKind = iota
	// EventDropped is a request the throttle dropped locally (P: its
	// probability).
	EventDropped
	// EventRetry is a retry about to wait Wait.
	EventRetry
	// EventBudgetExhausted is a retry the budget refused: the request's
	// last answer goes back to the caller.
	EventBudgetExhausted
	// EventDeadline is a retry not made because the wait its answer asked
	// for (Wait) would end at or past the request's deadline: the answer
	// goes back to the caller at once.
	EventDeadline
)

var eventNames = [...]string{"attempt", "dropped", "retry", "budget_exhausted", "deadline"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// Event is what Config.Observe is told: enough to count attempts by
// outcome and reason, drops, retries and exhausted budgets per backend.
type Event struct {
	Kind    EventKind
	Backend string
	// Retry is the attempt's number among the request's retries: 0 for
	// the first attempt, 1 for the first retry, ...
	Retry   int
	Outcome Outcome // EventAttempt
	Reason  string  // EventAttempt of a refusal: its Sluice-Reason, if any
	P       float64 // EventDropped: the drop probability
	// Wait is, for EventRetry, the wait before the retry; for
	// EventDeadline, the wait the answer asked for.
	Wait time.Duration
}

// admit decides whether an attempt goes out; a dropped one is counted as a
// request not accepted and returned as a *DropError. n is the attempt's
// retry number.
func (c *Client) admit(b *backend, n int) error {
	req, acc := b.throttle.totals()
	if c.throttleOff || float64(req) <= c.cfg.K*float64(acc) {
		return nil
	}
	now := c.nanos()
	if b.throttle.stale(now) {
		b.throttle.advance(now)
		req, acc = b.throttle.totals()
	}
	p := dropProbability(req, acc, c.cfg.K)
	if p <= 0 || c.cfg.Rand() >= p {
		return nil
	}
	b.throttle.add(now, pair(1, 0))
	if c.cfg.Observe != nil {
		c.cfg.Observe(Event{Kind: EventDropped, Backend: b.name, Retry: n, P: p})
	}
	return &DropError{Backend: b.name, P: p}
}

// dropProbability is the SRE book's client request rejection probability.
func dropProbability(requests, accepts int64, k float64) float64 {
	return max(0, (float64(requests)-k*float64(accepts))/(float64(requests)+1))
}

// record counts an attempt's outcome at now (a nanos reading). n is its
// retry number.
func (c *Client) record(b *backend, now int64, n int, o Outcome, reason string) {
	switch o {
	case Accepted:
		b.throttle.add(now, pair(1, 1))
	case Refused, Failed:
		b.throttle.add(now, pair(1, 0))
	}
	if n == 0 {
		b.budget.add(now, pair(1, 0))
	}
	if c.cfg.Observe != nil {
		c.cfg.Observe(Event{Kind: EventAttempt, Backend: b.name, Retry: n, Outcome: o, Reason: reason})
	}
}

// retryWait decides whether an attempt that ended in o (with r) is retried,
// and after how long: only an idempotent request, at most MaxRetries times,
// within the budget, never before what the answer asked for, never past
// MaxWait, and only within ctx's deadline: an answer whose wait would end at
// or past it goes back at once (EventDeadline), and a retry starts no later
// than halfway from the answer's wait to the deadline, so that at least half
// the time left after that wait is the attempt's. n is the retries so far.
// A granted retry is spent from the budget. now is a nanos reading.
func (c *Client) retryWait(ctx context.Context, b *backend, now int64, n int, idempotent bool, o Outcome, r Result) (time.Duration, bool) {
	if !idempotent || o == Accepted || o == Cancelled || r.NoRetry || n >= c.cfg.MaxRetries || ctx.Err() != nil {
		return 0, false
	}
	if r.RetryAfter > c.cfg.MaxWait {
		return 0, false
	}
	backoff := min(c.cfg.Backoff<<min(n, 30), c.cfg.MaxWait) // the jittered backoff's ceiling
	jitter := r.RetryAfter / 2                               // the most added to the answer's wait
	if d, ok := ctx.Deadline(); ok {
		left := d.Sub(c.timeAt(now))
		if r.RetryAfter >= left {
			if c.cfg.Observe != nil {
				c.cfg.Observe(Event{Kind: EventDeadline, Backend: b.name, Retry: n + 1, Wait: r.RetryAfter})
			}
			return 0, false
		}
		room := (left - r.RetryAfter) / 2
		backoff, jitter = min(backoff, r.RetryAfter+room), min(jitter, room)
	}
	wait := time.Duration(c.cfg.Rand() * float64(backoff))
	if r.RetryAfter > 0 {
		// Never before the answer's wait; up to half of it again (within
		// MaxWait), so that clients refused together do not come back
		// together.
		wait = max(wait, min(r.RetryAfter+time.Duration(c.cfg.Rand()*float64(jitter)), c.cfg.MaxWait))
	}
	b.budget.add(now, pair(0, 1))
	reqs, retries := b.budget.totals()
	if float64(retries) > c.cfg.RetryRatio*float64(reqs)+float64(c.cfg.RetryFloor) {
		b.budget.add(now, pair(0, -1))
		if c.cfg.Observe != nil {
			c.cfg.Observe(Event{Kind: EventBudgetExhausted, Backend: b.name, Retry: n + 1})
		}
		return 0, false
	}
	if c.cfg.Observe != nil {
		c.cfg.Observe(Event{Kind: EventRetry, Backend: b.name, Retry: n + 1, Wait: wait})
	}
	return wait, true
}

// Do runs attempt against backend until it is accepted, or its answer is
// not to be retried: a refusal or a failure is retried only when
// idempotent is true, within the budget and after the backoff. attempt
// reports what the backend answered in its Result (Refused, Failed, the
// wait asked for); its error is what Do returns. Each attempt first
// passes the throttle: a dropped first attempt returns a *DropError
// (errors.Is ErrDropped); a dropped retry returns the previous attempt's
// error. Do returns the last attempt's error, or ctx's if ctx ended during
// a wait.
//
// Do is for work that is not an HTTP request or a gRPC call (for those:
// Transport, and package grpcclient): a permit of sluice's permit
// service, a message to a queue.
func (c *Client) Do(ctx context.Context, backendName string, idempotent bool, attempt func(context.Context) (Result, error)) error {
	b := c.backend(backendName)
	var last error
	for n := 0; ; n++ {
		if err := c.admit(b, n); err != nil {
			if n > 0 {
				return last
			}
			return err
		}
		r, err := attempt(ctx)
		now := c.nanos()
		o := outcomeOf(ctx, r, err)
		c.record(b, now, n, o, r.Reason)
		wait, retry := c.retryWait(ctx, b, now, n, idempotent, o, r)
		if !retry {
			return err
		}
		last = err
		if err := c.cfg.Clock.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// Attempt is one attempt at a backend that Begin let through; End counts
// its outcome. It is for work whose answer is not known where it starts (a
// stream, whose first message tells): Do is simpler for the rest. An
// Attempt is ended once.
type Attempt struct {
	c *Client
	b *backend
}

// Begin passes the throttle for one attempt at backend: it returns a
// *DropError (errors.Is ErrDropped) when the throttle drops it. Begin does
// not retry.
func (c *Client) Begin(backendName string) (Attempt, error) {
	b := c.backend(backendName)
	if err := c.admit(b, 0); err != nil {
		return Attempt{}, err
	}
	return Attempt{c: c, b: b}, nil
}

// End counts the attempt's outcome: what r says (accepted unless Refused or
// Failed), or cancelled (not counted) for an error once ctx has ended.
func (a Attempt) End(ctx context.Context, r Result, err error) {
	if a.c == nil {
		return
	}
	a.c.record(a.b, a.c.nanos(), 0, outcomeOf(ctx, r, err), r.Reason)
}

// Stats is what a Client knows of one backend now.
type Stats struct {
	// Requests and Accepts are the throttle's counts over its window (the
	// requests dropped locally count in Requests).
	Requests, Accepts int64
	// DropProbability is the chance that a request sent now is dropped.
	DropProbability float64
	// BudgetRequests and BudgetRetries are the retry budget's counts over
	// its window: first attempts, and the retries granted.
	BudgetRequests, BudgetRetries int64
}

// Stats returns what c knows of the named backend (zero for one it has not
// seen).
func (c *Client) Stats(backendName string) Stats {
	v, ok := c.backends.Load(backendName)
	if !ok {
		return Stats{}
	}
	b := v.(*backend)
	now := c.nanos()
	b.throttle.advance(now)
	b.budget.advance(now)
	var s Stats
	s.Requests, s.Accepts = b.throttle.totals()
	s.DropProbability = dropProbability(s.Requests, s.Accepts, c.cfg.K)
	s.BudgetRequests, s.BudgetRetries = b.budget.totals()
	return s
}
