// Package breaker is a circuit breaker for one upstream: it refuses
// requests for a cooldown once too many of them fail, then lets a few
// probes through before it closes again. The proxy asks it before the gate
// (an open circuit refuses without taking a slot) and tells it how each
// forwarded request ended; any other caller can do the same around its own
// calls. Time is passed in, so tests need no clock.
package breaker

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/internal/defaults"
)

// Params configures a Breaker. A zero field means its default.
type Params struct {
	// Window is the rolling window over which the failure ratio is computed.
	// Default 10s.
	Window time.Duration
	// Buckets is how many slices the window is counted in; the window rolls by
	// Window/Buckets. Default 10.
	Buckets int
	// MinRequests is how many finished requests the window must hold before the
	// failure ratio can open the circuit. Default 20.
	MinRequests int
	// FailureRatio opens the circuit when failures/requests in the window reaches
	// it (0 < ratio ≤ 1); negative turns this trigger off. Default 0.5.
	FailureRatio float64
	// ConsecutiveFailures opens the circuit after that many failures in a row,
	// whatever the window holds; negative turns this trigger off. Default 5.
	ConsecutiveFailures int
	// Cooldown is how long the circuit stays open before it lets probes through.
	// Default 5s.
	Cooldown time.Duration
	// Probes is how many requests a half-open circuit lets through; all of them
	// must succeed to close it. Default 3.
	Probes int
	// OnChange, if set, is called after every change of state, with what
	// changed and why (the daemon logs it). It runs on the goroutine that made
	// the change, outside the breaker's lock, so it may read the Breaker;
	// changes that race may be reported out of order (Seq orders them).
	OnChange func(Change)
}

// Change is one change of a circuit's state.
type Change struct {
	From, To State
	At       time.Time
	// Reason says why, in words: "5 failures in a row (last: connect)",
	// "12 of 20 requests failed within 10s", "cooldown of 5s over", "3
	// probes succeeded", "a probe failed (timeout)".
	Reason string
	// Seq numbers the changes of one Breaker from 1.
	Seq uint32
}

// Status is a circuit's state, since when and why (the reason of the
// change that led to it; "" while it has never changed).
type Status struct {
	State  State
	Since  time.Time
	Reason string
}

// Default is what a zero field of Params stands for: open at
// 5 failures in a row, or once the last 10s (counted in 10 buckets) hold 20
// requests of which half failed; stay open 5s, then close after 3 probes
// succeed. They are the daemon's [upstream.circuit] defaults too (package
// internal/defaults holds them once).
func Default() Params {
	return Params{Window: defaults.BreakerWindow, Buckets: 10, MinRequests: defaults.BreakerMinRequests,
		FailureRatio: defaults.BreakerFailureRatio, ConsecutiveFailures: defaults.BreakerConsecutiveFailures,
		Cooldown: defaults.BreakerOpenDuration, Probes: defaults.BreakerProbes}
}

const maxBuckets = 1000

// Validate reports every problem with p, joined; nil if p is usable. Zero fields
// are fine: they mean the defaults.
func (p Params) Validate() error {
	var errs []error
	if p.Window < 0 {
		errs = append(errs, fmt.Errorf("breaker: window must not be negative, got %v", p.Window))
	}
	if p.Buckets < 0 || p.Buckets > maxBuckets {
		errs = append(errs, fmt.Errorf("breaker: buckets must be in [1, %d], got %d", maxBuckets, p.Buckets))
	}
	if p.MinRequests < 0 {
		errs = append(errs, fmt.Errorf("breaker: min requests must not be negative, got %d", p.MinRequests))
	}
	if p.FailureRatio > 1 || p.FailureRatio != p.FailureRatio {
		errs = append(errs, fmt.Errorf("breaker: failure ratio must be at most 1 (negative: off), got %v", p.FailureRatio))
	}
	if p.FailureRatio < 0 && p.ConsecutiveFailures < 0 {
		errs = append(errs, errors.New("breaker: with the failure ratio and consecutive failures both off it never opens; leave it out instead"))
	}
	if p.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("breaker: cooldown must not be negative, got %v", p.Cooldown))
	}
	if p.Probes < 0 {
		errs = append(errs, fmt.Errorf("breaker: probes must not be negative, got %d", p.Probes))
	}
	d := p.withDefaults()
	if w, b := d.Window, d.Buckets; w > 0 && b > 0 && w/time.Duration(b) <= 0 {
		errs = append(errs, fmt.Errorf("breaker: window %v is too short for %d buckets", w, b))
	}
	return errors.Join(errs...)
}

// withDefaults is p with Default's figure in each zero field.
func (p Params) withDefaults() Params {
	d := Default()
	p.Window, p.Buckets, p.MinRequests = or(p.Window, d.Window), or(p.Buckets, d.Buckets), or(p.MinRequests, d.MinRequests)
	p.FailureRatio, p.ConsecutiveFailures = or(p.FailureRatio, d.FailureRatio), or(p.ConsecutiveFailures, d.ConsecutiveFailures)
	p.Cooldown, p.Probes = or(p.Cooldown, d.Cooldown), or(p.Probes, d.Probes)
	return p
}

// or is v, or def when v is zero.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// State is the state of a circuit.
type State uint8

// The states.
const (
	Closed   State = iota // requests flow; failures are counted
	Open                  // requests are refused until the cooldown ends
	HalfOpen              // a few probes test the upstream
)

var stateNames = [...]string{"closed", "open", "half_open"}

// String returns "closed", "open" or "half_open".
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// Ticket is the Breaker's receipt for an allowed request; hand it back to Record.
// The zero Ticket is valid and belongs to no circuit generation, so recording it
// has no effect.
type Ticket struct {
	gen   uint32
	probe bool
}

// Breaker is a circuit breaker for one upstream.
//
// Model: while closed, every request is allowed and finished requests are counted in
// a rolling window of Buckets slices. The circuit opens when ConsecutiveFailures
// requests fail in a row, or when the window holds at least MinRequests requests of
// which at least FailureRatio failed. Open, it refuses every request for Cooldown;
// then it is half-open and lets Probes requests through: once all of them have
// succeeded it closes (with fresh counts); the first to fail opens it again for
// another Cooldown. A failure is gate.Dropped, a success gate.Success;
// gate.Ignored counts as neither (a probe that ends ignored frees its place for
// another). Results of requests allowed before the last state change are
// ignored. A negative FailureRatio or ConsecutiveFailures turns that trigger off.
//
// Time is passed in (now), as in golang.org/x/time/rate; instants before the
// Breaker's creation count as its creation.
//
// Concurrency: safe for concurrent use. Allow while closed is one atomic load;
// recording a success while closed is a compare-and-swap on the current bucket.
// Failures and every transition take a per-breaker mutex, off the fast path.
type Breaker struct {
	p      Params
	origin time.Time
	width  time.Duration // of one bucket

	// word packs the generation (high 32 bits) and the state (low bits); the
	// generation increases at every state change.
	word   atomic.Uint64
	consec atomic.Int64
	// ok holds the successes per bucket, packed as (epoch+1)<<32 | count, where
	// epoch is the bucket's index since origin; 0 is an empty bucket.
	ok []atomic.Uint64

	mu        sync.Mutex
	failed    []uint64      // like ok, under mu
	openUntil time.Duration // since origin; meaningful while open
	probes    int           // let through while half-open, but those ignored
	probesOK  int           // of which succeeded
	changedAt time.Duration // since origin: the last change of state
	reason    string        // why it happened
}

// New returns a closed Breaker created at now, or the problems with p.
func New(p Params, now time.Time) (*Breaker, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.withDefaults()
	b := &Breaker{
		p:      p,
		origin: now,
		width:  p.Window / time.Duration(p.Buckets),
		ok:     make([]atomic.Uint64, p.Buckets),
		failed: make([]uint64, p.Buckets),
	}
	b.word.Store(pack(1, Closed)) // generation 0 is the zero Ticket's: never current
	return b, nil
}

func pack(gen uint32, s State) uint64 { return uint64(gen)<<32 | uint64(s) }
func unpack(w uint64) (uint32, State) { return uint32(w >> 32), State(w) }

func (b *Breaker) since(now time.Time) time.Duration {
	d := now.Sub(b.origin)
	if d < 0 {
		return 0
	}
	return d
}

// State returns the circuit's state as last changed. An open circuit whose cooldown
// has ended reports open until the next Allow moves it to half-open.
func (b *Breaker) State() State {
	_, s := unpack(b.word.Load())
	return s
}

// Status returns the circuit's state as last changed (see State), since when
// and why.
func (b *Breaker) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Status{State: b.State(), Since: b.origin.Add(b.changedAt), Reason: b.reason}
}

// Allow reports whether a request may go to the upstream at now, and the Ticket to
// pass to Record when it has finished.
func (b *Breaker) Allow(now time.Time) (Ticket, bool) {
	gen, s := unpack(b.word.Load())
	if s == Closed {
		return Ticket{gen: gen}, true
	}
	b.mu.Lock()
	var ch *Change
	defer func() {
		b.mu.Unlock()
		b.report(ch)
	}()
	gen, s = unpack(b.word.Load())
	switch s {
	case Closed:
		return Ticket{gen: gen}, true
	case Open:
		t := b.since(now)
		if t < b.openUntil {
			return Ticket{}, false
		}
		gen++
		ch = b.change(gen, Open, HalfOpen, t,
			fmt.Sprintf("cooldown of %v over: %d probes let through", b.p.Cooldown, b.p.Probes))
		b.probes, b.probesOK = 0, 0
	}
	if b.probes >= b.p.Probes {
		return Ticket{}, false
	}
	b.probes++
	return Ticket{gen: gen, probe: true}, true
}

// AllowNow is Allow at the current instant, which it reads only when the
// circuit is not closed: a closed one lets every request through whatever
// the time.
func (b *Breaker) AllowNow() (Ticket, bool) {
	if gen, s := unpack(b.word.Load()); s == Closed {
		return Ticket{gen: gen}, true
	}
	return b.Allow(time.Now())
}

// Ignore records tk's request as never sent (gate.Ignored: refused by
// admission, say), reading the clock only for a probe's: the ignored
// outcome of any other request needs no instant.
func (b *Breaker) Ignore(tk Ticket) {
	if tk.probe {
		b.Record(tk, gate.Ignored, time.Now(), "")
	}
}

// change moves the circuit from one state to another at t (since origin), as
// generation gen, and returns the change to report once b.mu is released;
// b.mu is held.
func (b *Breaker) change(gen uint32, from, to State, t time.Duration, reason string) *Change {
	b.word.Store(pack(gen, to))
	b.changedAt, b.reason = t, reason
	if b.p.OnChange == nil {
		return nil
	}
	return &Change{From: from, To: to, At: b.origin.Add(t), Reason: reason, Seq: gen - 1}
}

// report hands ch, if any, to OnChange; b.mu is not held.
func (b *Breaker) report(ch *Change) {
	if ch != nil {
		b.p.OnChange(*ch)
	}
}

// RetryAfter returns how long, from now, the circuit stays open; 0 unless open.
func (b *Breaker) RetryAfter(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, s := unpack(b.word.Load()); s != Open {
		return 0
	}
	return max(b.openUntil-b.since(now), 0)
}

// Record reports the outcome, at now, of a request that Allow let through. Record
// it exactly once per Ticket; a request that was allowed but never sent (refused by
// admission, say) is recorded as gate.Ignored (see Ignore). cause names what
// failed (the proxy's failure class, such as "connect"; "" for none) in the
// reason of the change a failure may bring.
func (b *Breaker) Record(p Ticket, o gate.Outcome, now time.Time, cause string) {
	if o == gate.Success && !p.probe {
		gen, s := unpack(b.word.Load())
		if s != Closed || gen != p.gen {
			return
		}
		b.countSuccess(b.since(now))
		if b.consec.Load() != 0 {
			b.consec.Store(0)
		}
		return
	}
	if o == gate.Ignored && !p.probe {
		return
	}
	b.mu.Lock()
	var ch *Change
	defer func() {
		b.mu.Unlock()
		b.report(ch)
	}()
	gen, s := unpack(b.word.Load())
	if gen != p.gen {
		return
	}
	t := b.since(now)
	if p.probe {
		if s != HalfOpen {
			return
		}
		switch o {
		case gate.Success:
			if b.probesOK++; b.probesOK >= b.p.Probes {
				b.reset()
				ch = b.change(gen+1, HalfOpen, Closed, t, fmt.Sprintf("%d probes succeeded", b.p.Probes))
			}
		case gate.Dropped:
			reason := "a probe failed"
			if cause != "" {
				reason += ": " + cause
			}
			ch = b.open(gen, HalfOpen, t, reason)
		default:
			b.probes--
		}
		return
	}
	// A failure while closed.
	b.countFailure(t)
	n := b.consec.Add(1)
	if b.p.ConsecutiveFailures > 0 && n >= int64(b.p.ConsecutiveFailures) {
		ch = b.open(gen, Closed, t, fmt.Sprintf("%d failures in a row%s", n, lastCause(cause)))
		return
	}
	if b.p.FailureRatio <= 0 {
		return
	}
	okN, failN := b.window(t)
	total := okN + failN
	if total >= uint64(b.p.MinRequests) && float64(failN) >= b.p.FailureRatio*float64(total) {
		ch = b.open(gen, Closed, t, fmt.Sprintf("%d of %d requests failed within %v%s", failN, total, b.p.Window, lastCause(cause)))
	}
}

// lastCause is the ", last: …" part of a reason, or "" for no cause.
func lastCause(cause string) string {
	if cause == "" {
		return ""
	}
	return " (last: " + cause + ")"
}

// open moves from state from to open at t (since origin); b.mu is held.
func (b *Breaker) open(gen uint32, from State, t time.Duration, reason string) *Change {
	b.openUntil = t + b.p.Cooldown
	return b.change(gen+1, from, Open, t, reason)
}

// reset clears the counts; b.mu is held.
func (b *Breaker) reset() {
	for i := range b.ok {
		b.ok[i].Store(0)
		b.failed[i] = 0
	}
	b.consec.Store(0)
	b.probes, b.probesOK = 0, 0
}

func (b *Breaker) epoch(t time.Duration) uint64 { return uint64(t / b.width) }

// bump returns the bucket value v advanced by one request in epoch e.
func bump(v, e uint64) uint64 {
	tag := (e + 1) & 0xffffffff
	if v>>32 != tag {
		return tag<<32 | 1
	}
	if v&0xffffffff == 0xffffffff {
		return v
	}
	return v + 1
}

func (b *Breaker) countSuccess(t time.Duration) {
	e := b.epoch(t)
	slot := &b.ok[e%uint64(len(b.ok))]
	for {
		v := slot.Load()
		if slot.CompareAndSwap(v, bump(v, e)) {
			return
		}
	}
}

func (b *Breaker) countFailure(t time.Duration) {
	e := b.epoch(t)
	i := e % uint64(len(b.failed))
	b.failed[i] = bump(b.failed[i], e)
}

// window returns the successes and failures in the window ending in t's bucket.
func (b *Breaker) window(t time.Duration) (okN, failN uint64) {
	e := b.epoch(t)
	n := uint64(len(b.ok))
	live := func(v uint64) uint64 {
		tag := v >> 32
		if tag == 0 {
			return 0
		}
		age := (e + 1 - tag) & 0xffffffff
		if age >= n {
			return 0
		}
		return v & 0xffffffff
	}
	for i := range b.ok {
		okN += live(b.ok[i].Load())
		failN += live(b.failed[i])
	}
	return okN, failN
}
