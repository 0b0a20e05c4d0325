package main

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicehq/sluice/gate"
)

// rejectionLogEvery is how often the daemon logs, per group that rejected
// requests since the last time, one line: how many, and the key rejected
// most. One line a group a period at most, whatever the rate of rejections.
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
// this line and /v1/groups/{name} say who is being limited.
type rejectionLog struct {
	gate *gate.Gate
	log  hclog.Logger
	prev map[string]uint64 // rejections per group at the last period
}

// period logs one line for every group that rejected requests since the
// last period: the number, and the key it rejects most (over about the last
// two minutes, from the gate's summary of rejected keys) with its latest
// reason. A group's first period sets its baseline.
func (rl *rejectionLog) period() {
	seen := make(map[string]uint64, len(rl.prev))
	for _, st := range rl.gate.Groups() {
		var n uint64
		for _, r := range st.Rejected {
			n += r
		}
		seen[st.Name] = n
		last, known := rl.prev[st.Name]
		if !known || n <= last {
			continue
		}
		args := []any{"group", st.Name, "rejected", n - last}
		if len(st.RejectedKeys) > 0 {
			k := st.RejectedKeys[0]
			args = append(args, "top_key", k.Key, "top_key_reason", k.Reason.String(), "top_key_recent", k.Count)
		}
		rl.log.Info("rejecting", args...)
	}
	rl.prev = seen
}
