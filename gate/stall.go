package gate

import (
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// silence is what a group knows of its service's silence, for
// adaptive.Silent: an arrival that finds the service stalled is refused at
// once (queue_full), free slot or not, in a group that queues (queue.max >
// 0: one that does not only refuses a full limit, as it refuses a stalled
// queue's arrivals by adaptive.Positions), has a latency target (without
// one, nothing says a request held up by the stall is late: queue.max_wait
// alone bounds its wait) and enforces (in shadow the model of enforcement
// decides, shadowmodel.go).
//
// Concurrency: the hot path reads it and notes completions, the control
// loop publishes the mean; every field is atomic.
type silence struct {
	// last is when the service was last heard from, ns on the gate's clock
	// (at adaptive.SilenceGrain): a completion, or a request admitted with
	// nothing else in flight.
	last atomic.Int64
	// meanNs is the upstream latency's mean over the last control interval
	// that completed something (0: none yet).
	meanNs atomic.Int64
}

// heard notes a completion at now (ns on the gate's clock).
func (s *silence) heard(now int64) {
	if now-s.last.Load() >= int64(adaptive.SilenceGrain) {
		s.last.Store(now)
	}
}

// busy notes that a request was admitted at now with nothing else in
// flight: the silence starts there.
func (s *silence) busy(now int64) { s.last.Store(now) }

// refusesSilence reports whether gr refuses an arrival of priority p at now,
// with n other requests in flight, to a silent service (adaptive.Silent):
// only in a group that queues and has a latency target. The silence is
// judged first: it reads only what completions rarely write.
func (gr *group) refusesSilence(p adaptive.Priority, n int, now int64) bool {
	s := &gr.silence
	return adaptive.Silent(p, n, time.Duration(now-s.last.Load()), time.Duration(s.meanNs.Load())) &&
		gr.conc.MaxQueue() > 0 && gr.cfg.Load().Targets.Latency > 0
}

// silenced counts, and returns, the refusal of a request of key to a silent
// service: queue_full in the read-outs, and apart from the concurrency
// stage's rejections (by priority too) in the law's sample
// (Sample.Silenced).
func (gr *group) silenced(key string) Rejection {
	gr.c.silenced.Add(1)
	gr.c.rejected[adaptive.RejectQueueFull].Add(1)
	if key != "" {
		gr.c.rejectedKeys.Add(key, uint8(adaptive.RejectQueueFull))
	}
	return Rejection{Reason: adaptive.RejectQueueFull, Group: gr.name, RetryAfter: overloadRetry}
}
