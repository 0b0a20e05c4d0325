package permit

import (
	crand "crypto/rand"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/permit/permitpb"
)

// ID names a granted permit: its slot in the lease table (the low slotBits
// bits) and a tag drawn at random at each grant (the high 40 bits), from a
// ChaCha8 stream per shard of the table seeded by crypto/rand: a stale ID
// does not match a later permit of the same slot, nor an ID of an earlier
// run of the service, and another client cannot guess a live one (one
// guess in 2^40 per permit held, each a call). Its text form is 16
// hexadecimal digits.
type ID uint64

// slotBits is the width of an ID's slot: room for MaxLeases slots.
const slotBits = 24

// slot returns the slot index that id names.
func (id ID) slot() int { return int(id & (1<<slotBits - 1)) }

// Session names a client of the service: a number the client draws at
// random once (permitclient does so at New) and sends with every call (gRPC
// metadata permitpb.SessionKey, HTTP header permitpb.SessionHeader, 16
// hexadecimal digits). A permit granted in a session is released only in that session:
// a release from another, or from none, finds it Unknown, whatever its ID.
// 0 is no session: the permit is released by its ID alone.
type Session uint64

// String returns the ID as 16 lower-case hexadecimal digits.
func (id ID) String() string {
	var b [16]byte
	const hex = "0123456789abcdef"
	for i := range b {
		b[15-i] = hex[(id>>(4*i))&0xf]
	}
	return string(b[:])
}

// ParseID reads an ID in its text form.
func ParseID(s string) (ID, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("permit: id %q: want 16 hexadecimal digits", s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("permit: id %q: want 16 hexadecimal digits", s)
	}
	return ID(v), nil
}

// String returns the Session as 16 lower-case hexadecimal digits.
func (s Session) String() string { return ID(s).String() }

// ParseSession reads a Session in its text form: "" is no session (0);
// anything but 16 hexadecimal digits is a FieldError of "session".
func ParseSession(v string) (Session, error) {
	if v == "" {
		return 0, nil
	}
	id, err := ParseID(v)
	if err != nil {
		return 0, &FieldError{"session", fmt.Sprintf("%q: want 16 hexadecimal digits (header %s, metadata %q)", v, permitpb.SessionHeader, permitpb.SessionKey)}
	}
	return Session(id), nil
}

// sessionOfValues returns the Session of the values of a request's session
// header or a call's session metadata: none is no session, one is read by
// ParseSession, two or more are an error.
func sessionOfValues(v []string) (Session, error) {
	switch len(v) {
	case 0:
		return 0, nil
	case 1:
		return ParseSession(v[0])
	}
	return 0, &FieldError{"session", "sent twice"}
}

// state is where a lease slot is in its life.
type state uint8

const (
	stateFree     state = iota // never granted since the service started
	stateReserved              // taken by an Acquire that is asking the gate
	stateLive                  // granted, not yet released
	stateReleased              // released by its holder
	stateExpired               // its lease expired before its release
)

// slot holds one lease. A released or expired slot keeps its tag, session
// and state until it is filled again, so that a repeated release is told
// apart from an unknown one.
type slot struct {
	pass    gate.Pass
	class   gate.Class // for a correction of the cost at release
	cost    int64      // what the grant spent at the rate stage (0: the group's rate.cost)
	grp     *groupEntry
	granted int64 // ns on the service's clock
	expires int64
	session Session
	tag     uint64 // the ID's high bits, shifted down
	state   state
}

// shard is a part of the lease table with its own lock. Its free slots
// form a FIFO ring, so a slot is reused as late as possible.
type shard struct {
	mu    sync.Mutex
	slots []slot
	ring  []int32 // free slot indices, local to the shard
	head  int     // next free index to take
	free  int     // entries in ring
	live  int
	next  int64         // earliest expiry of a live slot, math.MaxInt64 when none
	rng   *rand.ChaCha8 // the IDs' tags
	_     [64]byte
}

// table is the bounded lease table: MaxLeases slots in shards, each shard
// behind its own mutex; a grant locks one shard twice (reserve, fill), a
// release once. Nothing is allocated after newTable.
type table struct {
	shards []shard
	size   int // slots per shard (the last one may have fewer)
	cap    int
}

// expired is a lease the sweeper took back, to be reported to the gate
// outside the shard's lock.
type expired struct {
	pass    gate.Pass
	class   gate.Class
	cost    int64
	grp     *groupEntry
	granted int64
}

func newTable(capacity int) *table { return newShardedTable(capacity, 4*runtime.GOMAXPROCS(0)) }

// newShardedTable builds a table of capacity slots in at most n shards.
func newShardedTable(capacity, n int) *table {
	n = min(n, capacity)
	size := (capacity + n - 1) / n
	n = (capacity + size - 1) / size
	t := &table{shards: make([]shard, n), size: size, cap: capacity}
	for i := range t.shards {
		sh := &t.shards[i]
		k := min(size, capacity-i*size)
		sh.slots = make([]slot, k)
		sh.ring = make([]int32, k)
		for j := range k {
			sh.ring[j] = int32(j)
		}
		sh.free = k
		sh.next = math.MaxInt64
		var seed [32]byte
		_, _ = crand.Read(seed[:]) // never fails (crypto/rand.Read's doc)
		sh.rng = rand.NewChaCha8(seed)
	}
	return t
}

// reserve takes a free slot, starting at a random shard so that concurrent
// callers spread over the shards. ok is false when every slot is in use.
func (t *table) reserve() (idx int, ok bool) {
	n := len(t.shards)
	start := int(rand.Uint32N(uint32(n)))
	for i := range n {
		si := start + i
		if si >= n {
			si -= n
		}
		sh := &t.shards[si]
		sh.mu.Lock()
		if sh.free == 0 {
			sh.mu.Unlock()
			continue
		}
		local := sh.ring[sh.head]
		sh.head++
		if sh.head == len(sh.ring) {
			sh.head = 0
		}
		sh.free--
		sh.slots[local].state = stateReserved
		sh.mu.Unlock()
		return si*t.size + int(local), true
	}
	return 0, false
}

// locate returns the shard and the slot index within it of a table index.
func (t *table) locate(idx int) (*shard, int32) {
	return &t.shards[idx/t.size], int32(idx % t.size)
}

// push returns local to sh's free ring; sh.mu is held.
func (sh *shard) push(local int32) {
	tail := sh.head + sh.free
	if tail >= len(sh.ring) {
		tail -= len(sh.ring)
	}
	sh.ring[tail] = local
	sh.free++
}

// unreserve gives back a slot that reserve took and the gate refused.
func (t *table) unreserve(idx int) {
	sh, local := t.locate(idx)
	sh.mu.Lock()
	sh.slots[local].state = stateFree
	sh.push(local)
	sh.mu.Unlock()
}

// fill makes the reserved slot idx a live lease of session holding p
// until expires, under a new tag.
func (t *table) fill(idx int, p gate.Pass, c gate.Class, cost int64, grp *groupEntry, sess Session, now, expires int64) ID {
	sh, local := t.locate(idx)
	sh.mu.Lock()
	s := &sh.slots[local]
	s.pass, s.grp, s.session, s.granted, s.expires, s.state = p, grp, sess, now, expires, stateLive
	s.class, s.cost = c, cost
	for last := s.tag; s.tag == last; { // never the tag of the slot's last permit
		s.tag = sh.rng.Uint64() >> slotBits
	}
	sh.live++
	sh.next = min(sh.next, expires)
	id := ID(s.tag<<slotBits | uint64(idx))
	sh.mu.Unlock()
	return id
}

// Result is what a release found.
type Result uint8

const (
	// Unknown: the ID names no permit of this service (never granted, or
	// its slot was granted again since), or one of another session.
	Unknown Result = iota
	// Released: the slot is freed and the outcome recorded.
	Released
	// AlreadyReleased: the permit was released before; nothing is freed
	// again.
	AlreadyReleased
	// Expired: the lease had expired, so the permit was counted as expired
	// (ignored by the group's law) and its slot freed at expiry (or now, if the sweeper had not come by
	// yet); nothing is freed again.
	Expired
)

var resultNames = [...]string{"unknown", "released", "already_released", "expired"}

// String returns "unknown", "released", "already_released" or "expired".
func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return "invalid"
}

// release ends the lease id at now, for session sess (checked unless
// anySession: a permit of a session is another's Unknown). For Released,
// and for an Expired found live (the sweeper had not come by), it returns
// the lease's pass for the caller to finish (exactly once) and fresh =
// true; otherwise e holds only the lease's group, when the id matched one.
func (t *table) release(id ID, sess Session, anySession bool, now int64) (r Result, e expired, fresh bool) {
	idx := id.slot()
	if idx >= t.cap {
		return Unknown, expired{}, false
	}
	sh, local := t.locate(idx)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := &sh.slots[local]
	if s.tag != uint64(id>>slotBits) || !anySession && s.session != 0 && s.session != sess {
		return Unknown, expired{}, false
	}
	switch s.state {
	case stateLive:
		e = expired{pass: s.pass, class: s.class, cost: s.cost, grp: s.grp, granted: s.granted}
		s.pass, s.class = gate.Pass{}, gate.Class{}
		r = Released
		if now >= s.expires {
			r = Expired
		}
		s.state = stateReleased
		if r == Expired {
			s.state = stateExpired
		}
		sh.live--
		sh.push(local)
		return r, e, true
	case stateReleased:
		return AlreadyReleased, expired{grp: s.grp}, false
	case stateExpired:
		return Expired, expired{grp: s.grp}, false
	}
	return Unknown, expired{}, false
}

// sweep takes back every live lease that expired at or before now and
// appends them to buf. A shard whose earliest expiry is still to come is
// not scanned.
func (t *table) sweep(now int64, buf []expired) []expired {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		if sh.live == 0 || now < sh.next {
			sh.mu.Unlock()
			continue
		}
		next := int64(math.MaxInt64)
		for j := range sh.slots {
			s := &sh.slots[j]
			if s.state != stateLive {
				continue
			}
			if s.expires > now {
				next = min(next, s.expires)
				continue
			}
			buf = append(buf, expired{pass: s.pass, grp: s.grp, granted: s.granted})
			s.pass = gate.Pass{}
			s.state = stateExpired
			sh.live--
			sh.push(int32(j))
		}
		sh.next = next
		sh.mu.Unlock()
	}
	return buf
}

// live returns the number of live leases (a read-out: each shard is locked
// in turn, so the total is not one instant's).
func (t *table) liveCount() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += sh.live
		sh.mu.Unlock()
	}
	return n
}
