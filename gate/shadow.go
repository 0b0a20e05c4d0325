package gate

import (
	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate/spec"
)

// Shadow mode (spec.ModeShadow): a group, or its rate rule alone, that
// decides as it would enforce but admits what it would have refused, and
// counts it (see the package doc, "Shadow mode").

// Bits of group.mode.
const (
	shadowGroup uint32 = 1 << iota // every stage of the group is shadowed
	shadowRate                     // the rate stage is shadowed
)

// modeBits is the group.mode of c.
func modeBits(c *spec.Group) uint32 {
	var m uint32
	if c.Mode.Shadow() {
		m |= shadowGroup | shadowRate
	}
	if c.Rate != nil && c.Rate.Mode.Shadow() {
		m |= shadowRate
	}
	return m
}

// setMode publishes c's mode: requests entering from now on see it. The
// requests admitted beyond the limit in shadow finish as they started.
func (gr *group) setMode(c *spec.Group) { gr.mode.Store(modeBits(c)) }

// shadowReject counts a would-be rejection of a request of priority p and
// key: what reject counts for a real one, in the shadow counters and the
// summary of keys enforcement would have refused.
func (gr *group) shadowReject(why adaptive.RejectReason, p adaptive.Priority, key string) {
	gr.c.shadow[why].Add(1)
	if key != "" {
		gr.c.shadowKeys.Add(key, uint8(why))
	}
	if stageReason(why) && why != adaptive.RejectFairShare { // as reject counts stage
		gr.c.shadowStage[p].Add(1)
	}
}

// admitBeyond admits, without a slot, a request of priority p and key of a
// shadowed group that enforcement would have refused for why or, with why
// RejectNone, one that found no free slot: without a queue that is a
// would-be "concurrency"; with one the request would have waited, unless
// the shadow queue (the requests admitted so, still in flight) is already
// at queue.max: then a would-be "queue_full". It counts the would-be
// rejection and returns its reason (RejectNone for a request that would
// have waited).
func (gr *group) admitBeyond(why adaptive.RejectReason, p adaptive.Priority, key string) adaptive.RejectReason {
	c := gr.c
	c.beyond.Add(1)
	if why == adaptive.RejectNone {
		switch q := int64(gr.conc.MaxQueue()); {
		case q == 0:
			why = adaptive.RejectConcurrency
		case c.waiting.Add(1) > q:
			c.waiting.Add(-1)
			why = adaptive.RejectQueueFull
		default:
			c.shadowQueued.Add(1)
			return adaptive.RejectNone
		}
	}
	gr.shadowReject(why, p, key)
	return why
}

// leaveBeyond ends a request admitted beyond the limit, that enforcement
// would have refused for why (RejectNone: made wait).
func (gr *group) leaveBeyond(why adaptive.RejectReason) {
	if why == adaptive.RejectNone {
		gr.c.waiting.Add(-1)
	}
	gr.c.beyond.Add(-1)
}

// inFlight is the group's requests in the upstream: those holding a slot
// and those admitted beyond the limit in shadow.
func (gr *group) inFlight() int { return gr.conc.InFlight() + int(gr.c.beyond.Load()) }

// ShadowStatus is what a group's shadow mode saw (GroupStatus.Shadow).
type ShadowStatus struct {
	// Mode is the group's mode; RateMode its rate rule's ("" without a
	// rate). A shadowed group shadows its rate rule too.
	Mode, RateMode Mode
	// Rejected counts the would-be rejections by reason (indexed by
	// adaptive.RejectReason) since the group was built: requests admitted
	// that enforcement would have refused, each counted once, at the first
	// stage that would have refused it (in a group that enforces, a
	// request over a shadowed rate rule may still be refused for real by
	// the concurrency stage).
	Rejected [adaptive.NumRejections]uint64
	// Queued counts the requests admitted that enforcement would have made
	// wait in the queue; whether they would have got a slot in time or
	// timed out cannot be known without making them wait.
	Queued uint64
	// Beyond is the requests in flight now without a slot, Waiting those
	// of them that enforcement would have had in the queue.
	Beyond, Waiting int
	// RejectedKeys are the keys enforcement would have refused most, as
	// GroupStatus.RejectedKeys counts the keys refused for real (and apart
	// from them); RejectedKeysSkipped is as there.
	RejectedKeys        []RejectedKey
	RejectedKeysSkipped uint64
}

// WouldReject returns the total of Rejected.
func (s *ShadowStatus) WouldReject() uint64 {
	var n uint64
	for _, v := range s.Rejected {
		n += v
	}
	return n
}

func (gr *group) shadowStatus(c *spec.Group) ShadowStatus {
	s := ShadowStatus{Mode: c.Mode, Queued: gr.c.shadowQueued.Load(),
		Beyond: int(gr.c.beyond.Load()), Waiting: int(gr.c.waiting.Load())}
	if c.Rate != nil {
		s.RateMode = c.Rate.Mode
	}
	for i := range s.Rejected {
		s.Rejected[i] = gr.c.shadow[i].Load()
	}
	s.RejectedKeys, s.RejectedKeysSkipped = topKeys(gr.c.shadowKeys)
	return s
}

// shadowCounts adds the shadow counters to a snapshot of gr's counters.
func (gr *group) shadowCounts(s *countSnap) {
	for i := range s.shadow {
		s.shadow[i] = gr.c.shadow[i].Load()
	}
	for i := range s.shadowStage {
		s.shadowStage[i] = gr.c.shadowStage[i].Load()
	}
}

// shadowSample gives the law the would-be rejections of the interval as if
// they were rejections, so that in shadow it sees what it would see
// enforcing (its in-flight and latency include the requests admitted
// beyond the limit: the load the service carries).
func shadowSample(s *adaptive.Sample, cur, prev *countSnap) {
	addRejections(s, &cur.shadow, &prev.shadow)
	for p := range s.ByPriority {
		s.ByPriority[p].Rejected += int(cur.shadowStage[p] - prev.shadowStage[p])
	}
}
