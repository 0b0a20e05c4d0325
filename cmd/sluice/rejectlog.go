package main

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicehq/sluice/gate"
)

// rejectionLogEvery is how often the daemon logs, per group that rejected
// requests since the last time (or, in shadow mode, would have), one line:
// how many, and the key rejected most. One line a group and kind a period at
// most, whatever the rate of rejections.
const rejectionLogEvery = 10 * time.Second

// logRejections runs a rejectionLog of g at each tick until ctx ends.
func logRejections(ctx context.Context, g *gate.Gate, tick <-chan time.Time, log hclog.Logger) {
	rl := rejectionLog{gate: g, log: log}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			rl.period()
		}
	}
}

// rejectionLog is the sampled log of rejections: metrics carry no key, so
// this line and /v1/groups/{name} say who is being limited, or, in shadow
// mode, who would be.
type rejectionLog struct {
	gate *gate.Gate
	log  hclog.Logger
	prev map[string][len(rejectionKinds)]uint64 // per group, each kind's total at the last period
}

// rejectionKind is what a line of the log counts: real rejections, or
// those shadow mode would have made.
type rejectionKind struct {
	msg, count string // the line's message and the key of its count
	total      func(*gate.GroupStatus) uint64
	keys       func(*gate.GroupStatus) []gate.RejectedKey // most first
}

var rejectionKinds = [...]rejectionKind{
	{"rejecting", "rejected", func(st *gate.GroupStatus) uint64 {
		var n uint64
		for _, r := range st.Rejected {
			n += r
		}
		return n
	}, func(st *gate.GroupStatus) []gate.RejectedKey { return st.RejectedKeys }},
	{"shadow mode would reject", "would_reject", func(st *gate.GroupStatus) uint64 { return st.Shadow.WouldReject() },
		func(st *gate.GroupStatus) []gate.RejectedKey { return st.Shadow.RejectedKeys }},
}

// period logs, for every group and kind (rejections, would-be rejections)
// with new ones since the last period, one line: their number, and the key
// counted most (over about the last two minutes, from the gate's summary)
// with its latest reason. The first line of a group counts every rejection
// since it started (the gate's counters start at zero with the group); a
// counter found below its last total started afresh (a group removed and
// added again) and counts from zero too. The totals of a group that is gone
// are kept, so that one added again with its counters going on (requests
// left in it) is not counted twice.
func (rl *rejectionLog) period() {
	if rl.prev == nil {
		rl.prev = map[string][len(rejectionKinds)]uint64{}
	}
	for _, st := range rl.gate.Groups() {
		last := rl.prev[st.Name]
		var now [len(rejectionKinds)]uint64
		for i, k := range rejectionKinds {
			now[i] = k.total(&st)
			if now[i] < last[i] {
				last[i] = 0
			}
			if now[i] == last[i] {
				continue
			}
			args := []any{"group", st.Name, k.count, now[i] - last[i]}
			if keys := k.keys(&st); len(keys) > 0 {
				args = append(args, "top_key", keys[0].Key, "top_key_reason", keys[0].Reason.String(), "top_key_recent", keys[0].Count)
			}
			rl.log.Info(k.msg, args...)
		}
		rl.prev[st.Name] = now
	}
}
