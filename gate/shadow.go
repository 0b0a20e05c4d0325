package gate

import (
	"time"

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
// shadowed group at t0 (ns on the gate's clock): one that enforcement would
// have refused for why at an earlier stage, or, with why RejectNone, one
// that reached the concurrency stage, which the model of enforcement
// decides (shadowmodel.go): a slot, a wait in the queue (counted as
// would-have-waited), or a would-be rejection. It counts the would-be
// rejection and returns the request's shadowMark.
func (gr *group) admitBeyond(why adaptive.RejectReason, p adaptive.Priority, key string, t0 int64) shadowMark {
	c := gr.c
	inFlight := gr.inFlight()
	c.beyond.Add(1)
	mark := shadowMark{why: why, slotless: true}
	if why == adaptive.RejectNone {
		mark = c.model.arrive(t0, p, gr.conc.Limit(), gr.conc.MaxQueue(), gr.bound.Load(), inFlight)
		if mark.why == adaptive.RejectNone {
			if !mark.within {
				c.shadowQueued.Add(1)
			}
			return mark
		}
	}
	gr.shadowReject(mark.why, p, key)
	return mark
}

// shadowSlot admits a request of a shadowed group that reached the
// concurrency stage (of key, holding ks: nil without a key), as the model
// of enforcement decides it; one the model gives a slot holds its key's
// share until it is done, as a slot would.
func (gr *group) shadowSlot(ks *keyState, p adaptive.Priority, key string, t0 int64) Pass {
	ps := gr.shadowPass(adaptive.RejectNone, p, key, t0)
	if ks != nil {
		if ps.how.shadow.within {
			ks.held.Add(1)
			ps.ks = ks
		} else {
			gr.keys.leave(ks)
		}
	}
	return ps
}

// slotsHeld is the group's slots in use at t0 (ns), for the fair share:
// those of the model of enforcement in a shadowed group.
func (gr *group) slotsHeld(t0 int64) int {
	if gr.mode.Load()&shadowGroup != 0 {
		return gr.c.model.inService(t0, gr.conc.Limit())
	}
	return gr.conc.InFlight()
}

// leaveBeyond ends a request admitted without a slot.
func (gr *group) leaveBeyond() { gr.c.beyond.Add(-1) }

// shadowDone tells the model of enforcement how a request admitted without
// a slot (its mark) ended: after latency, with outcome o.
func (gr *group) shadowDone(mark shadowMark, latency time.Duration, o Outcome) {
	gr.c.model.leave(mark, latency, o)
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
	// Beyond is the requests in flight now beyond the concurrency limit
	// (those of a shadowed group hold no slot: the model of enforcement
	// decides them), Waiting the requests the model has in the queue now.
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
	limit := gr.conc.Limit()
	s := ShadowStatus{Mode: c.Mode, Queued: gr.c.shadowQueued.Load(),
		Beyond:  min(int(gr.c.beyond.Load()), max(0, gr.inFlight()-limit)),
		Waiting: gr.c.model.waiting(gr.gate.nanos(), limit)}
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
// they were rejections and, in a shadowed group, the rest of the interval
// as the model of enforcement saw it (its in-flight count, completions,
// queue and latency: see enforcement), so that in shadow the law learns
// what it would learn enforcing. now ends the interval, on the gate's
// clock (ns).
func (gr *group) shadowSample(s *adaptive.Sample, cur, prev *countSnap, now int64) {
	addRejections(s, &cur.shadow, &prev.shadow)
	for p := range s.ByPriority {
		s.ByPriority[p].Rejected += int(cur.shadowStage[p] - prev.shadowStage[p])
	}
	if gr.mode.Load()&shadowGroup != 0 {
		gr.c.model.tick(now, gr.conc.Limit(), s)
	}
}
