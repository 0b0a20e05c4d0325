package redis

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/limits"
)

// Leased mode's constants.
const (
	// headroom is how many periods of its demand a node asks to hold, so
	// that its units last until the answer of its next renewal.
	headroom = 1.5
	// promoteAt is how many exact decisions of one key in one period make
	// the key leased: its lease then costs Redis one renewal a period in
	// their place. A lease whose demand stays under half of it for
	// quietRounds renewals ends.
	promoteAt = 4
	// quietRounds is how many quiet renewals in a row end a lease.
	quietRounds = 10
	// maxCandidates bounds the keys whose exact decisions are counted in
	// one period (the candidates for a lease).
	maxCandidates = 4096
	// renewChunk is how many keys one renewal call renews on a single
	// server (on a cluster, one: keys of other slots cannot be mixed).
	renewChunk = 32
	// shareScale is the unit of the fallback share in a renewal's answer:
	// thousandths of a unit per second.
	shareScale = 1000
)

// leaser is a Limiter's leased mode: the leases this node holds, by key,
// and the goroutine that renews them (run). Decisions on a leased key take
// units from its lease's limits.Allowance: one compare-and-swap, no Redis,
// no lock. Other keys are decided exactly, and counted: a key with promoteAt
// exact decisions in a period gets a lease, while fewer than MaxKeys are
// held. A lease is renewed every Period (earlier when it runs low while the
// quota has room); a renewal reports the node's demand (units admitted and
// refused per second), gives back what it holds beyond about 1.5 periods of
// that demand, and is granted what the stock has, or its fair part of it
// while the nodes want more than the quota's rate (lua/lease.lua). Its units are valid until the lease's expiry as
// the node sees it: its last renewal's send time plus the TTL (or, for a
// fixed window, the end of the window), always before Redis expires it.
type leaser struct {
	l      *Limiter
	p      LeaseParams // resolved
	prefix string      // lease hashes: prefix + key + "}"
	budget time.Duration
	chunk  int
	// inst numbers this leaser among its store's (a reload makes a new one
	// beside the old, with the same node id), for lua/lease.lua's record of
	// the last renewal applied.
	inst int64

	// leases is replaced (copy on write) by the renewer only.
	leases atomic.Pointer[map[string]*lease]

	mu        sync.Mutex
	cand      map[string]int // exact decisions per key since candSince
	candSince time.Time

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	// giveBack, read by run when stop is closed, asks it to give back the
	// units held before it ends.
	giveBack, stopped atomic.Bool

	renewals, renewErrs atomic.Uint64
	rejoins             atomic.Uint64
	admitted, refused   atomic.Uint64 // units, counted at the renewals
	lastRenewal         atomic.Int64  // Unix ns

	// rounded, if set, is called after each round: a test hook.
	rounded atomic.Pointer[func()]
}

// lease is this node's lease on one key.
type lease struct {
	key  string
	keys [2]string // the state key and the lease hash

	// Read by every decision, written by the renewer once a renewal.
	until atomic.Int64 // Unix ns: the units are void from then on
	low   atomic.Int64 // below this many units held, ask for an early renewal
	spare atomic.Bool  // the stock had room at the last renewal
	next  atomic.Int64 // Unix ns of the next renewal, for RetryAfter
	out   atomic.Int64 // #O at the last renewal: the outstanding units
	// shareNow is share for Status, in thousandths; rejoining tells
	// whether a rejoin is under way.
	shareNow  atomic.Int64
	rejoining atomic.Bool

	// fb is, while this node cannot renew (Redis down), the fallback that
	// decides once the units held are used up; nil while renewals succeed.
	fb atomic.Pointer[leaseFallback]

	// Written by the decisions: apart from the fields above, so that
	// reading those does not move the cache line the decisions write.
	_       [64]byte
	a       limits.Allowance
	refused atomic.Int64 // units refused since the last renewal
	fbUnits atomic.Int64 // units decided by fb since the last renewal
	// fbAdmitted is the units fb (or the share's floor) admitted and no
	// renewal has reported yet: the next one answered debits them from
	// the stock.
	fbAdmitted atomic.Int64
	// floorUnits is the units the share's floor admitted since the last
	// answered renewal (see leaser.floor).
	floorUnits atomic.Int64
	// grantAt (Unix ns: the last answered renewal's send time) and base
	// (the units held right after its grant), written by the renewer, tell
	// the share's floor what the lease has admitted since.
	grantAt, base atomic.Int64

	// The renewer's own.
	after int64     // units held right after the last grant was added
	dem   float64   // demand, units per second
	want  int64     // units asked for at the last renewal
	since time.Time // the last renewal (the demand's clock)
	quiet int       // quiet renewals in a row
	// share is this node's fallback share of the key, units per second,
	// from the last renewal (0: none yet, the equal share); epoch and
	// nodes are the lease hash's epoch and lease count at that renewal.
	share        float64
	epoch, nodes int64
	rejoin       rejoin
	// acked is the number (renewal.seq) of the last renewal answered, or,
	// before the first, one taken when the lease was made: Redis undoes a
	// renewal applied after it, which this node never received.
	acked int64
}

// leaseFallback is how a lease decides while its node cannot renew it: its
// units held first (Redis counted them: they are part of the node's share),
// then the store's Fallback policy; for limits.FallbackLocal, local, a
// limiter of this node's fallback share that starts with what a lease of
// the share would hold (1.5 periods of it) less the units held, so that
// what the node holds and what it admits by the share add up to the
// share, and the nodes together start the outage with about the bound.
type leaseFallback struct {
	local limits.Limiter // nil unless limits.FallbackLocal
}

// rejoin caps the grants of a lease whose hash came back with a new epoch
// (Redis restarted empty, or lost the hash): until the nodes that held
// leases before are back (nodes), or until, no later than end, the others
// must have probed Redis again, this node takes from Redis no more than the
// share it decided by while Redis was away, since those still away go on
// deciding by theirs. The renewer's own; zero: not rejoining.
type rejoin struct {
	end   time.Time // when it ends at the latest
	nodes int64     // the leases of the earlier epoch
	share float64   // the cap, units per second
	since time.Time // its start
	taken int64     // units granted since
}

func newLeaser(l *Limiter) *leaser {
	p := l.p.Lease.resolved()
	ls := &leaser{
		l: l, p: p,
		prefix:    l.s.p.KeyPrefix + l.p.Name + ":lease:{",
		budget:    min(max(l.s.p.Timeout, p.Period/2), time.Second),
		chunk:     renewChunk,
		inst:      l.s.renewSeq.Add(1),
		cand:      make(map[string]int),
		candSince: time.Now(),
		kick:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	if !l.s.batch {
		ls.chunk = 1
	}
	empty := map[string]*lease{}
	ls.leases.Store(&empty)
	go ls.run()
	return ls
}

// allow decides on n units for key against its lease, writing the Result
// to r field by field (a Result returned by value through two calls was
// copied through memory at a third of the decision's cost); it returns
// false, writing nothing, when this node holds no valid lease on key (the
// caller decides exactly).
func (ls *leaser) allow(r *limits.Result, key string, now time.Time, n int64) bool {
	le := (*ls.leases.Load())[key]
	if le == nil {
		return false
	}
	t := now.UnixNano()
	fb := le.fb.Load()
	if t >= le.until.Load() && fb == nil {
		return false
	}
	q := ls.l.q.Load()
	if n > q.limit {
		le.refused.Add(n)
		r.Allowed, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter, r.Delay = false, q.limit, 0, limits.InfDuration, 0, 0
		return true
	}
	var left int64
	taken, open := false, false
	if t < le.until.Load() {
		left, taken, open = le.a.Take(n)
	}
	if fb != nil && !taken {
		ls.fallback(r, le, fb, q, now, n)
		return true
	}
	if !open {
		return false
	}
	if !taken && q.p.Window == 0 && ls.floor(le, t, n) {
		r.Allowed, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter, r.Delay = true, q.limit, 0, 0, 0, 0
		return true
	}
	r.Allowed, r.Limit, r.Remaining, r.RetryAfter, r.Delay = taken, q.limit, min(left, q.limit), 0, 0
	if !taken {
		le.refused.Add(n)
		r.RetryAfter = time.Duration(max(le.next.Load()-t, int64(time.Millisecond)))
		ls.ask(le)
	} else if left < le.low.Load() {
		ls.ask(le)
	}
	// An estimate: the time the quota's own pace takes to give back what
	// this node lacks (a window: until the window ends).
	if q.p.Window > 0 {
		r.ResetAfter = time.Duration(le.until.Load() - t)
	} else {
		r.ResetAfter = time.Duration(float64(q.limit-r.Remaining) * q.nsPerUnit)
	}
	return true
}

// floor tells whether n more units fit in le's share's floor, and if so
// counts them admitted: a lease that has run dry admits what its fallback
// share (units per second, the max-min fair split from its last renewal)
// allows since its last grant, up to headroom periods of it, beyond what
// the lease admitted meanwhile; its next renewal debits them from the
// stock. A node then admits its share whenever its grants fall short of
// it: a grant that came late (a renewal that waits on a hung Redis for its
// budget, a starved renewer) or thin (the first grants after an outage,
// from a stock the outage's debits emptied: every node back within a
// period left its fallback on a few units and ran dry with the others, a
// dip of 190–210ms in the lab). At saturation the grants are the shares,
// and the floor admits nothing. A rate's only: a window's units are its
// limit, not a pace. Safe for concurrent use; off the path of a lease
// that holds units.
func (ls *leaser) floor(le *lease, t, n int64) bool {
	at := le.grantAt.Load()
	if at == 0 || n <= 0 {
		return false
	}
	share := float64(le.shareNow.Load()) / shareScale
	if share == 0 {
		share = ls.equalShare()
	}
	held, _ := le.a.Held()
	dt := min(time.Duration(t-at), time.Duration(headroom*float64(ls.p.Period)))
	room := int64(share*dt.Seconds()) - max(0, le.base.Load()-held)
	for {
		cur := le.floorUnits.Load()
		if room-cur < n {
			return false
		}
		if le.floorUnits.CompareAndSwap(cur, cur+n) {
			break
		}
	}
	le.fbUnits.Add(n)
	le.fbAdmitted.Add(n)
	return true
}

// fallback decides on n units for le by fb, its units held being used up
// (or lapsed): a fallback decision.
func (ls *leaser) fallback(r *limits.Result, le *lease, fb *leaseFallback, q *quota, now time.Time, n int64) {
	ls.l.fallbackN.Add(1)
	le.fbUnits.Add(n)
	switch {
	case fb.local != nil:
		*r = fb.local.AllowAt(now, n)
		r.Limit = q.limit
	case ls.l.s.p.Fallback == limits.FallbackOpen:
		*r = limits.Result{Allowed: true, Limit: q.limit, Remaining: q.limit}
	default:
		*r = limits.Result{Allowed: n == 0, Limit: q.limit, RetryAfter: time.Duration(max(le.next.Load()-now.UnixNano(), int64(time.Millisecond)))}
	}
	if r.Allowed {
		le.fbAdmitted.Add(n)
	}
}

// ask asks for an early renewal of le, if the stock had room for one.
func (ls *leaser) ask(le *lease) {
	if le.spare.Load() {
		select {
		case ls.kick <- struct{}{}:
		default:
		}
	}
}

// noteExact counts an exact decision on key, a candidate for a lease.
func (ls *leaser) noteExact(key string) {
	ls.mu.Lock()
	c, ok := ls.cand[key]
	if !ok {
		if len(ls.cand) >= maxCandidates {
			ls.mu.Unlock()
			return
		}
		key = strings.Clone(key)
	}
	c++
	ls.cand[key] = c
	ls.mu.Unlock()
	if c == promoteAt {
		select {
		case ls.kick <- struct{}{}:
		default:
		}
	}
}

// run renews the leases every Period, and sooner when asked (at most four
// times a period), until stop.
func (ls *leaser) run() {
	defer close(ls.done)
	timer := time.NewTimer(ls.p.Period)
	defer timer.Stop()
	last := time.Now()
	due := last.Add(ls.p.Period)
	for {
		select {
		case <-ls.stop:
			if ls.giveBack.Load() {
				ls.round(time.Now(), true)
			}
			return
		case <-ls.kick:
			if soonest := last.Add(ls.p.Period / 4); time.Now().Before(soonest) {
				if soonest.Before(due) { // asked too soon: the earliest allowed
					due = soonest
					timer.Reset(time.Until(due))
				}
				continue
			}
		case <-timer.C:
		}
		last = time.Now()
		probed := ls.round(last, false)
		if f := ls.rounded.Load(); f != nil {
			(*f)()
		}
		d := ls.nextRound(time.Now())
		if probed {
			// Spread over a period: the nodes' renewers, held up together
			// by a hung Redis, are released together when it answers, and
			// renewing in step they race for the same refill.
			d = time.Duration(jitterSpread(int64(d)))
		}
		due = time.Now().Add(d)
		timer.Reset(d)
	}
}

// nextRound is the wait until the next renewal: a period, or less when a
// lease's units lapse sooner (a fixed window's end).
func (ls *leaser) nextRound(now time.Time) time.Duration {
	d := ls.p.Period
	for _, le := range *ls.leases.Load() {
		if u := le.until.Load(); u > now.UnixNano() {
			d = min(d, time.Duration(u-now.UnixNano())+time.Millisecond)
		}
	}
	return d
}

// renewal is one key's part of a renewal round.
type renewal struct {
	le *lease
	// Sent: the units held before (before) and after (held) taking back
	// ret, the units given back; leave ends the lease; debit, the units
	// the fallback admitted since the last answered renewal (Redis takes
	// from the stock, of a node of an earlier epoch, only what its share
	// admitted since the epoch began).
	before, held, ret, debit int64
	leave                    bool
	// The lease's demand, want, epoch and fallback share (thousandths) as
	// sent: copies, since a call abandoned at its budget may still read
	// them while the next round prepares the lease again.
	sentDem, sentWant, sentEpoch, sentShare int64
	// seq numbers the round's call (increasing on the store); acked is the
	// lease's, as sent.
	seq, acked int64
	requested  int64 // units admitted and refused since the last renewal
	// Answered (see parseRenewals).
	grant, heldR, out, dem, avail, life, nodes, epoch, share, under int64
}

// round renews every lease (with last, gives them all back), promotes the
// candidates, and ends the leases that have gone quiet; it tells whether
// it probed a down link.
func (ls *leaser) round(now time.Time, last bool) (probed bool) {
	leases := *ls.leases.Load()
	if !last {
		leases = ls.promote(now, leases)
	}
	if len(leases) == 0 {
		return false
	}
	q := ls.l.q.Load()
	rs := make([]*renewal, 0, len(leases))
	seq := ls.l.s.renewSeq.Add(1)
	for _, le := range leases {
		r := ls.prepare(le, now, q, last)
		r.seq, r.acked = seq, le.acked
		rs = append(rs, r)
	}
	t := now.UnixNano()
	toRedis, probe := ls.l.s.link.routeEvery(t, ls.p.Period)
	var err error
	if toRedis {
		if probe {
			err = ls.l.s.reach(ls.budget)
		}
		if err == nil {
			err = ls.call(q, rs)
		}
		if err == nil {
			ls.l.s.link.succeeded(t, probe)
		} else {
			// A renewal has a far longer budget than a decision: one that
			// fails says Redis does not answer, and the node decides by
			// its fallback at once.
			ls.l.s.link.failedHard(t, probe, err)
		}
	}
	next := leases
	changed := false
	for _, r := range rs {
		le := r.le
		if !toRedis || err != nil {
			ls.failed(r, now)
			continue
		}
		ls.settle(r, now, q)
		if r.leave {
			if !changed {
				next, changed = maps.Clone(leases), true
			}
			delete(next, le.key)
		}
	}
	if toRedis && err == nil {
		ls.renewals.Add(1)
		ls.lastRenewal.Store(t)
	} else if toRedis {
		ls.renewErrs.Add(1)
	}
	if changed {
		ls.leases.Store(&next)
	}
	return probe
}

// promote gives a lease to the candidates with promoteAt exact decisions
// since the last round, the busiest first, while fewer than MaxKeys are
// held, and returns the leases to renew.
func (ls *leaser) promote(now time.Time, leases map[string]*lease) map[string]*lease {
	ls.mu.Lock()
	cand, since := ls.cand, ls.candSince
	ls.cand, ls.candSince = make(map[string]int, len(cand)), now
	ls.mu.Unlock()
	var keys []string
	for k, c := range cand {
		if c >= promoteAt && leases[k] == nil {
			keys = append(keys, k)
		}
	}
	room := ls.p.MaxKeys - len(leases)
	if len(keys) == 0 || room <= 0 {
		return leases
	}
	slices.SortFunc(keys, func(a, b string) int { return cand[b] - cand[a] })
	next := maps.Clone(leases)
	elapsed := max(now.Sub(since), ls.p.Period/4).Seconds()
	for _, k := range keys[:min(room, len(keys))] {
		le := &lease{key: k, dem: float64(cand[k]) / elapsed, since: now, acked: ls.l.s.renewSeq.Add(1)}
		le.keys = [2]string{ls.l.prefix + k + "}", ls.prefix + k + "}"}
		le.a.Close() // nothing to decide with until the first grant
		next[k] = le
	}
	ls.leases.Store(&next)
	return next
}

// prepare measures le's demand and takes back the units to give back.
func (ls *leaser) prepare(le *lease, now time.Time, q *quota, last bool) *renewal {
	r := &renewal{le: le}
	held, open := le.a.Held()
	if open {
		r.requested = max(0, le.after-held)
	}
	r.before, r.debit = held, le.fbAdmitted.Swap(0)
	refused, byFallback := le.refused.Swap(0), le.fbUnits.Swap(0)
	r.requested += refused + byFallback // the demand, however decided
	ls.admitted.Add(uint64(r.requested - refused - byFallback))
	ls.refused.Add(uint64(refused))
	// The next renewal comes a period from now, or as late as this one
	// did (a busy machine): ask for that long.
	cover := ls.p.Period.Seconds()
	if elapsed := now.Sub(le.since).Seconds(); elapsed > 0 {
		rate := float64(r.requested) / elapsed
		le.dem = max(rate, (le.dem+rate)/2) // up at once, down by halves
		if rate*ls.p.Period.Seconds() < promoteAt/2 {
			le.quiet++
		} else {
			le.quiet = 0
		}
		cover = max(cover, min(elapsed, ls.p.TTL.Seconds()/2))
	}
	le.since = now
	le.want = int64(math.Ceil(le.dem * cover * headroom))
	if rj := &le.rejoin; !rj.end.IsZero() {
		// Rejoining: held and granted since its start within the share.
		budget := int64(rj.share*(now.Sub(rj.since)+ls.p.Period).Seconds()) - rj.taken
		le.want = min(le.want, held+max(0, budget))
	}
	r.sentDem, r.sentWant, r.sentEpoch = int64(math.Ceil(le.dem)), le.want, le.epoch
	r.sentShare = int64(math.Ceil(ls.fallbackShare(le) * shareScale))
	r.leave = last || le.quiet >= quietRounds
	if r.leave {
		r.ret = le.a.Close()
	} else if held > le.want {
		r.ret = le.a.Withdraw(held - le.want)
	}
	r.held, _ = le.a.Held()
	return r
}

// call sends the renewals of rs and waits for the answers at most the
// renewal budget. go-redis bounds a socket read by its read timeout, not by
// the context: against a hung Redis the call itself would hold the renewer
// for the I/O timeout, while the node must decide by its fallback at once.
// The call works on copies of rs, whose answers are taken only when in
// time. One abandoned may still be applied by Redis: the lease's next
// answered renewal undoes it there (lua/lease.lua), so that its grant,
// which never reached this node, goes back to the stock.
func (ls *leaser) call(q *quota, rs []*renewal) error {
	ctx, cancel := context.WithTimeout(context.Background(), ls.budget)
	defer cancel()
	cp := make([]*renewal, len(rs))
	for i, r := range rs {
		c := *r
		cp[i] = &c
	}
	done := make(chan error, 1)
	go func() { done <- ls.send(ctx, q, cp) }()
	select {
	case err := <-done:
		if err == nil {
			for i, r := range rs {
				*r = *cp[i]
			}
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send sends the renewals of rs, in chunks, in one round trip.
func (ls *leaser) send(ctx context.Context, q *quota, rs []*renewal) error {
	s := ls.l.s
	scr := s.renew[ls.l.p.Algorithm]
	ttl := ls.p.TTL.Milliseconds()
	var extra []any
	if s.argvTime {
		now := time.Now()
		extra = []any{now.Unix(), int64(now.Nanosecond())}
	}
	build := func(verb, script string, part []*renewal) *goredis.Cmd {
		args := make([]any, 0, 3+2*len(part)+7+10*len(part)+len(extra))
		args = append(args, verb, script, 2*len(part))
		for _, r := range part {
			args = append(args, r.le.keys[0], r.le.keys[1])
		}
		args = append(args, s.nodeID, ttl, ls.p.Period.Milliseconds(), q.a1, q.a2, s.divisor.Load(), ls.inst)
		for _, r := range part {
			leave := "0"
			if r.leave {
				leave = "1"
			}
			args = append(args, r.held, r.ret, r.sentDem, r.sentWant, leave, r.sentEpoch, r.debit, r.sentShare, r.seq, r.acked)
		}
		args = append(args, extra...)
		return goredis.NewCmd(ctx, args...)
	}
	var parts [][]*renewal
	for part := range slices.Chunk(rs, ls.chunk) {
		parts = append(parts, part)
	}
	send := func(verb, script string) ([]*goredis.Cmd, error) {
		cmds := make([]*goredis.Cmd, len(parts))
		_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, part := range parts {
				cmds[i] = build(verb, script, part)
				_ = p.Process(ctx, cmds[i])
			}
			return nil
		})
		return cmds, err
	}
	cmds, err := send("evalsha", scr.sha)
	if isNoScript(err) {
		cmds, err = send("eval", scr.src)
	}
	if err != nil {
		return err
	}
	for i, part := range parts {
		text, err := cmds[i].Text()
		if err != nil {
			return err
		}
		if err := parseRenewals(text, part); err != nil {
			return err
		}
	}
	return nil
}

// parseRenewals reads a renewal call's replies into part: ten integers
// per key, "grant held outstanding demand avail life nodes epoch share
// under".
func parseRenewals(s string, part []*renewal) error {
	for i, r := range part {
		var f [10]int64
		for j := range f {
			v, rest, ok := leadingInt(s)
			if !ok {
				return errReply
			}
			f[j], s = v, rest
			if last := i == len(part)-1 && j == len(f)-1; last != (s == "") {
				return errReply
			}
			if s != "" {
				if s[0] != ' ' {
					return errReply
				}
				s = s[1:]
			}
		}
		r.grant, r.heldR, r.out, r.dem, r.avail, r.life = f[0], f[1], f[2], f[3], f[4], f[5]
		r.nodes, r.epoch, r.share, r.under = f[6], f[7], f[8], f[9]
		if r.grant < 0 || r.heldR < 0 || r.heldR > r.held || r.out < 0 || r.avail < 0 || r.life < -1 ||
			r.nodes < 0 || r.epoch < 0 || r.share < 0 || r.under < 0 || r.under > 1 {
			return errReply
		}
	}
	return nil
}

// settle applies a renewal Redis answered.
func (ls *leaser) settle(r *renewal, now time.Time, q *quota) {
	le := r.le
	le.acked = r.seq
	if r.heldR < r.held {
		le.a.Withdraw(r.held - r.heldR) // Redis no longer counted them
	}
	le.out.Store(r.out)
	if r.leave {
		return
	}
	ls.rejoin(le, r, now)
	le.grantAt.Store(now.UnixNano())
	le.floorUnits.Store(0)
	le.after = le.a.Add(r.grant)
	le.base.Store(le.after)
	// Back on Redis once the lease holds units: a stock that the debit of
	// the fallback's admissions emptied grants nothing at first, and the
	// node goes on by its share meanwhile (debited in turn).
	if le.after > 0 {
		le.fb.Store(nil)
	}
	life := ls.p.TTL
	if r.life >= 0 {
		life = min(life, time.Duration(r.life))
	}
	// now was read before the call was sent, so now + life ends before the
	// lease does in Redis's time.
	le.until.Store(now.Add(life).UnixNano())
	le.low.Store(le.want / 3)
	// Early renewals help a node whose demand rose while the quota has
	// room; while the nodes together want more than its rate they would
	// only take more than this node's share, so there are none, but for a
	// node under the fair level: it takes only its demand, and an early
	// renewal keeps it from running dry when a renewal comes late.
	le.spare.Store(r.avail >= le.want && (r.under == 1 || float64(r.dem) <= q.perSecond()))
	le.next.Store(now.Add(ls.p.Period).UnixNano())
}

// rejoin follows the epoch of le's lease hash: a new one, while le held a
// lease of an earlier one, starts a rejoin (see rejoin); the rejoin ends
// once as many leases are back as there were, or at its end.
func (ls *leaser) rejoin(le *lease, r *renewal, now time.Time) {
	rj := &le.rejoin
	if le.epoch != 0 && r.epoch != le.epoch {
		backoff := time.Duration(1.2 * float64(ls.l.s.p.BackoffMax))
		*rj = rejoin{end: now.Add(backoff + 2*ls.p.Period), nodes: le.nodes, share: ls.fallbackShare(le), since: now}
		ls.rejoins.Add(1)
	}
	if !rj.end.IsZero() {
		rj.taken += r.grant
		if r.nodes >= rj.nodes || !now.Before(rj.end) {
			*rj = rejoin{}
		}
	}
	le.epoch = r.epoch
	if rj.end.IsZero() {
		// Kept from before a restart until the rejoin ends.
		le.nodes, le.share = r.nodes, float64(r.share)/shareScale
		le.shareNow.Store(r.share)
	}
	le.rejoining.Store(!rj.end.IsZero())
}

// fallbackShare is the rate, per second, that le decides by while this node
// cannot renew it: its share from the last renewal, or the equal share.
// The renewer's own.
func (ls *leaser) fallbackShare(le *lease) float64 {
	if le.share == 0 {
		return ls.equalShare()
	}
	return le.share
}

// equalShare is the equal part of the quota's rate, per second, that the
// local fallback decides by.
func (ls *leaser) equalShare() float64 {
	return ls.l.q.Load().perSecond() / float64(max(1, ls.l.s.divisor.Load()))
}

// failed handles a renewal that Redis did not answer (or that was not sent,
// Redis being down): the units taken back to give back are held again, a
// lease whose units have lapsed holds nothing any more, and the lease
// decides by the fallback once the units it holds are used up (at once:
// within the round that found Redis down).
func (ls *leaser) failed(r *renewal, now time.Time) {
	le := r.le
	if r.leave {
		return // given up: Redis expires the lease by itself
	}
	le.a.Add(r.ret)
	le.fbAdmitted.Add(r.debit) // reported by the next renewal answered
	le.after = r.before        // the units used up to the call are counted
	if now.UnixNano() >= le.until.Load() {
		le.a.Close()
		le.after = 0
	}
	if le.fb.Load() == nil {
		le.fb.Store(ls.newFallback(le))
	}
}

// newFallback is le's fallback while Redis is away: with limits.FallbackLocal, a
// limiter of this node's fallback share (from its last renewal, or the
// equal share) of the quota in force, empty from the moment it is made.
func (ls *leaser) newFallback(le *lease) *leaseFallback {
	share := ls.fallbackShare(le)
	fb := &leaseFallback{}
	if ls.l.s.p.Fallback != limits.FallbackLocal {
		return fb
	}
	q := ls.l.q.Load()
	p := q.p
	frac := share / q.perSecond()
	if p.Window > 0 {
		p.Limit = max(1, int64(float64(p.Limit)*frac))
	} else {
		p.Rate, p.Burst = max(share, 1e-9), max(1, int64(math.Ceil(float64(p.Burst)*frac)))
	}
	held, _ := le.a.Held()
	start := max(0, int64(math.Ceil(headroom*share*ls.p.Period.Seconds()))-held)
	local, err := newTemplate(p)
	if err != nil { // a share too small for the algorithm: refuse
		return fb
	}
	// From this moment (the round's start may be a while ago), it holds
	// start units.
	if take := local.Policy().Quota - start; take > 0 {
		local.AllowAt(time.Now(), take)
	}
	fb.local = local
	return fb
}

// close stops the renewals; with giveBack, the units held are given back
// first (bounded by the renewal budget). Afterwards every lease holds
// nothing: decisions go the exact way (a closed limiter's: the fallback).
func (ls *leaser) close(giveBack bool) {
	if !ls.stopped.CompareAndSwap(false, true) {
		return
	}
	ls.giveBack.Store(giveBack)
	close(ls.stop)
	<-ls.done
	for _, le := range *ls.leases.Load() {
		le.a.Close()
	}
}

// status adds the leases' figures to st.
func (ls *leaser) status(st *Status) {
	for _, le := range *ls.leases.Load() {
		st.Leases++
		h, _ := le.a.Held()
		st.Held += h
		st.Outstanding += le.out.Load()
		share := float64(le.shareNow.Load()) / shareScale
		if share == 0 {
			share = ls.equalShare()
		}
		st.Share += share
		if le.rejoining.Load() {
			st.Rejoining++
		}
	}
	st.Rejoins = ls.rejoins.Load()
	st.Bound = int64(math.Ceil(headroom * ls.l.q.Load().perSecond() * ls.p.Period.Seconds()))
	st.LeasedUnits, st.RefusedUnits = ls.admitted.Load(), ls.refused.Load()
	st.Renewals, st.RenewalErrors = ls.renewals.Load(), ls.renewErrs.Load()
	if t := ls.lastRenewal.Load(); t != 0 {
		st.LastRenewal = time.Unix(0, t)
	}
}
