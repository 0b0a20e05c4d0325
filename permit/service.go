package permit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/internal/defaults"
)

// Defaults and bounds of Params and Request.
const (
	// DefaultMaxLeases bounds the permits outstanding at once (about 64
	// bytes each).
	DefaultMaxLeases = defaults.PermitMaxLeases
	// MaxLeases is the largest MaxLeases accepted: the slots an ID names.
	MaxLeases = 1 << slotBits
	// DefaultSweepEvery is how often Run takes back expired leases: a
	// silent holder's slot returns at most this long after its lease ends.
	DefaultSweepEvery = time.Second
	// MaxWait bounds Request.Wait.
	MaxWait = time.Hour
)

// Unmeasured is the latency of a release whose caller did not measure the
// work: the service takes the time from the grant to the release instead.
const Unmeasured time.Duration = -1

// Params configures a Service. Gate is required; the zero value of every
// other field means its default.
type Params struct {
	// Gate admits the permits: sluice's *gate.Gate (see Gate).
	Gate Gate
	// Leases are the groups' lease lengths. Default: DefaultLease for all.
	Leases Leases
	// MaxLeases bounds the permits outstanding at once; a request beyond it
	// is refused with reason "concurrency". Default DefaultMaxLeases.
	MaxLeases int
	// SweepEvery is Run's period. Default DefaultSweepEvery.
	SweepEvery time.Duration
	// Clock is the time of grants and expiry. Default: the real clock, read
	// as a monotonic offset.
	Clock Clock
}

// Request asks for a permit.
type Request struct {
	// Group names the gate group; Key is the key within it ("" for none).
	Group, Key string
	// Priority is the request's level. Its zero value is adaptive.Sheddable:
	// the transports (ParsePriority) send adaptive.Default when the caller
	// names none.
	Priority adaptive.Priority
	// Cost is the units of the group's rate limit the work spends; 0 means
	// the group's configured cost. The concurrency stage counts one slot.
	Cost int64
	// Wait bounds the wait in the group's queue (which has its own bound,
	// as has ctx); 0 leaves the group's bound. At most MaxWait.
	Wait time.Duration
	// Session is the caller's session, 0 for none: the permit is then
	// released only in it (ReleaseIn).
	Session Session
}

// Grant is a permit granted: its ID, for Release, its group and its lease,
// counted from the grant.
type Grant struct {
	ID    ID
	Group string
	Lease time.Duration
	// Shadowed is, for a group in shadow mode, the reason enforcement would
	// have refused the permit for; RejectNone when it would have granted it.
	Shadowed adaptive.RejectReason
}

// Errors of Acquire and Release; test with errors.Is.
var (
	// ErrNoGroup: the request names no group of the gate's config.
	ErrNoGroup = errors.New("permit: no such group")
	// ErrInvalid: a field of the request is out of range.
	ErrInvalid = errors.New("permit: invalid request")
	// ErrClosed: the service was stopped (Stop).
	ErrClosed = errors.New("permit: service closed")
)

// FieldError is an ErrInvalid naming the field at fault, as the wire names
// it.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return "permit: " + e.Field + ": " + e.Problem }

// Unwrap makes a FieldError an ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Service is the permit service's core, apart from any transport: it asks
// the gate for permits, keeps their leases and finishes them exactly once,
// on release or at expiry. Build it with New; it is safe for concurrent
// use. Servers (NewServer) put it on a listener; several may share one.
type Service struct {
	gate       Gate
	clock      Clock
	base       time.Time
	sweepEvery time.Duration
	table      *table
	groups     *groups
	closed     atomic.Bool
	full       atomic.Uint64 // refusals because the lease table was full

	sweepMu sync.Mutex
	sweep   []expired // Sweep's buffer, guarded by sweepMu
}

// New builds a Service from p.
func New(p Params) (*Service, error) {
	if p.Gate == nil {
		return nil, errors.New("permit: no gate")
	}
	if err := p.Leases.Validate(); err != nil {
		return nil, err
	}
	if p.MaxLeases == 0 {
		p.MaxLeases = DefaultMaxLeases
	}
	if p.MaxLeases < 1 || p.MaxLeases > MaxLeases {
		return nil, fmt.Errorf("permit: max leases %d: want between 1 and %d", p.MaxLeases, MaxLeases)
	}
	if p.SweepEvery == 0 {
		p.SweepEvery = DefaultSweepEvery
	}
	if p.SweepEvery < 0 {
		return nil, fmt.Errorf("permit: sweep period %v: want a positive duration", p.SweepEvery)
	}
	s := &Service{
		gate:       p.Gate,
		clock:      p.Clock,
		sweepEvery: p.SweepEvery,
		table:      newTable(p.MaxLeases),
		groups:     newGroups(p.Leases),
	}
	if s.clock != nil {
		s.base = s.clock.Now()
	} else {
		s.base = time.Now()
	}
	return s, nil
}

// nanos is the service's clock: nanoseconds since s.base, one monotonic
// read with the real clock.
func (s *Service) nanos() int64 {
	if s.clock != nil {
		return int64(s.clock.Now().Sub(s.base))
	}
	return int64(time.Since(s.base))
}

// SetLeases changes the groups' lease lengths (a reload). Permits already
// granted keep the lease they got.
func (s *Service) SetLeases(l Leases) error {
	if err := l.Validate(); err != nil {
		return err
	}
	s.groups.setLeases(l)
	return nil
}

// LeaseOf returns the lease a permit of group gets now.
func (s *Service) LeaseOf(group string) time.Duration { return s.groups.leaseOf(group) }

func (r *Request) validate() error {
	switch {
	case r.Group == "":
		return &FieldError{"group", "required"}
	case r.Cost < 0:
		return &FieldError{"cost", fmt.Sprintf("%d: want 0 (the group's cost) or more", r.Cost)}
	case r.Wait < 0 || r.Wait > MaxWait:
		return &FieldError{"wait_ms", fmt.Sprintf("%v: want between 0 and %v", r.Wait, MaxWait)}
	case r.Priority > adaptive.Critical:
		return &FieldError{"priority", fmt.Sprintf("%d: want a level 0..7", r.Priority)}
	}
	return nil
}

// Acquire asks the gate for a permit, waiting in the group's queue for at
// most min(r.Wait, the group's queue bound, ctx's deadline). It returns the
// grant; or the gate's refusal, with a zero Grant and a nil error; or an
// error for a request that cannot be asked (ErrInvalid, ErrNoGroup,
// ErrClosed). A caller whose ctx is cancelled while it waits gets a
// refusal (queue_timeout) that the gate counts as canceled.
//
// A grant takes two short locks of one lease-table shard and allocates
// nothing (with r.Wait > 0, the timeout's context does).
func (s *Service) Acquire(ctx context.Context, r Request) (Grant, gate.Rejection, error) {
	if err := r.validate(); err != nil {
		return Grant{}, gate.Rejection{}, err
	}
	if s.closed.Load() {
		return Grant{}, gate.Rejection{}, ErrClosed
	}
	c, ok := s.gate.ClassOf(r.Group, r.Key, r.Priority)
	if !ok {
		return Grant{}, gate.Rejection{}, fmt.Errorf("%w: %q", ErrNoGroup, r.Group)
	}
	grp := s.groups.get(c.Group())
	idx, ok := s.table.reserve()
	if !ok {
		s.full.Add(1)
		rej := s.gate.Reject(c, adaptive.RejectConcurrency, 0)
		grp.refused[rej.Reason].Add(1)
		return Grant{}, rej, nil
	}
	if r.Wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Wait)
		defer cancel()
	}
	p, rej, ok := s.gate.EnterClassCost(ctx, c, r.Cost)
	if !ok {
		s.table.unreserve(idx)
		if errors.Is(ctx.Err(), context.Canceled) {
			grp.canceled.Add(1)
		} else if int(rej.Reason) < len(grp.refused) {
			grp.refused[rej.Reason].Add(1)
		}
		return Grant{}, rej, nil
	}
	now := s.nanos()
	lease := time.Duration(grp.lease.Load())
	shadowed := p.Shadowed()
	id := s.table.fill(idx, p, c, r.Cost, grp, r.Session, now, now+int64(lease))
	grp.granted.Add(1)
	if s.closed.Load() { // Stop ran meanwhile: it did not see this lease
		_, _ = s.Release(id, gate.Ignored, Unmeasured)
		return Grant{}, gate.Rejection{}, ErrClosed
	}
	return Grant{ID: id, Group: grp.name, Lease: lease, Shadowed: shadowed}, gate.Rejection{}, nil
}

// Release ends the permit id with the outcome of its work and the latency
// the caller measured (Unmeasured: the time since the grant), whatever
// session it was granted in (the caller is in process: the transports call
// ReleaseIn). A permit released in time frees its slot and reports o to the
// gate; one whose lease had expired was (or is now) counted as expired, and
// a repeated release frees nothing: see Result. An outcome other than
// gate.Success, gate.Dropped and gate.Ignored is ErrInvalid.
func (s *Service) Release(id ID, o gate.Outcome, latency time.Duration) (Result, error) {
	return s.release(id, 0, true, o, latency, NoCost)
}

// ReleaseIn is Release for a caller in session sess (0: none): a permit
// granted in another session is Unknown to it, as is one never granted.
func (s *Service) ReleaseIn(sess Session, id ID, o gate.Outcome, latency time.Duration) (Result, error) {
	return s.release(id, sess, false, o, latency, NoCost)
}

// NoCost is the cost of a release that declares none: the grant's charge
// stands.
const NoCost int64 = -1

// ReleaseCostIn is ReleaseIn with the work's real cost, known only now
// (NoCost: none): a permit released in time charges its group's rate stage
// the difference from what its grant spent (Request.Cost, else the group's
// rate.cost), or gives it back, whatever the room left (gate's
// Gate.CorrectCost), so that costly work drains a key's quota as it should.
// An expired or repeated release corrects nothing. A cost below NoCost or
// above 1e6 is ErrInvalid.
func (s *Service) ReleaseCostIn(sess Session, id ID, o gate.Outcome, latency time.Duration, cost int64) (Result, error) {
	return s.release(id, sess, false, o, latency, cost)
}

// maxCost bounds a declared cost, as rate.cost is bounded.
const maxCost = 1_000_000

func (s *Service) release(id ID, sess Session, anySession bool, o gate.Outcome, latency time.Duration, cost int64) (Result, error) {
	if o > gate.Ignored {
		return Unknown, &FieldError{"outcome", fmt.Sprintf("%d: want success, dropped or ignored", o)}
	}
	if cost < NoCost || cost > maxCost {
		return Unknown, &FieldError{"cost", fmt.Sprintf("%d: want 0 to %d", cost, maxCost)}
	}
	now := s.nanos()
	r, e, fresh := s.table.release(id, sess, anySession, now)
	if !fresh {
		if r == Expired && e.grp != nil {
			e.grp.late.Add(1)
		}
		return r, nil
	}
	switch r {
	case Released:
		if latency < 0 {
			latency = time.Duration(now - e.granted)
		}
		e.pass.DoneAfter(o, latency)
		e.grp.released[o].Add(1)
		if cost != NoCost {
			s.gate.CorrectCost(e.class, e.cost, cost)
		}
	case Expired:
		e.pass.DoneAfter(expiredOutcome, time.Duration(now-e.granted))
		e.grp.expired.Add(1)
		e.grp.late.Add(1)
	}
	return r, nil
}

// expiredOutcome is what the gate is told of a lease that expired before
// its release: ignored, no signal to the group's law. A lease expires
// because its holder crashed, hung or lost its way to the service: that
// says nothing of the service's load (three leases of a killed worker read
// as 100% drops took a group's limit from 64 to 2); the service counts
// them itself (Stats.Expired, sluice_permit_releases_total{result="expired"}).
const expiredOutcome = gate.Ignored

// Sweep takes back every lease expired at now: each is counted as expired
// (and to the gate as ignored, expiredOutcome) and its slot freed. It returns how many. Run calls it every SweepEvery;
// tests call it with the instants they choose.
func (s *Service) Sweep(now time.Time) int {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	ns := int64(now.Sub(s.base))
	s.sweep = s.table.sweep(ns, s.sweep[:0])
	for i := range s.sweep {
		e := &s.sweep[i]
		e.pass.DoneAfter(expiredOutcome, time.Duration(ns-e.granted))
		e.grp.expired.Add(1)
		*e = expired{}
	}
	return len(s.sweep)
}

// Run sweeps expired leases every SweepEvery, at the service clock's
// instants, until ctx ends; it returns nil then. Start it once, beside the
// servers.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.Sweep(s.now())
		}
	}
}

func (s *Service) now() time.Time { return s.base.Add(time.Duration(s.nanos())) }

// Stop refuses every later Acquire (ErrClosed) and ends every permit still
// held as ignored (no signal to the group's law), freeing its slot: for a
// service that a reload removes. Later releases of those permits find them
// expired. It returns how many it ended.
func (s *Service) Stop() int {
	s.closed.Store(true)
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	const forever = int64(1<<63 - 1)
	s.sweep = s.table.sweep(forever, s.sweep[:0])
	ns := s.nanos()
	for i := range s.sweep {
		e := &s.sweep[i]
		e.pass.DoneAfter(gate.Ignored, time.Duration(ns-e.granted))
		*e = expired{}
	}
	return len(s.sweep)
}
