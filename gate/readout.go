package gate

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/internal/topk"
	"github.com/sluicehq/sluice/probe"
)

// GroupStatus is a group's state for the admin API and the metrics: a copy,
// owned by the caller. Live figures (limit, in flight, queue, counters) are
// read at the call; window figures (latency, throughput) are those of the
// last control tick.
type GroupStatus struct {
	Name string
	Law  Law
	// Limit is the concurrency limit now; Min and Max its bounds (both the
	// limit for law "fixed").
	Limit, Min, Max int
	// InFlight is the requests admitted and not done, in shadow mode those
	// admitted beyond the limit included (Shadow.Beyond).
	InFlight int
	// Queued is the number of waiters now; QueueMax the queue's bound.
	Queued, QueueMax int
	// QueueWait is the longest a request below critical may wait now (the
	// CoDel bound), QueueWaitCritical a critical one's.
	QueueWait, QueueWaitCritical time.Duration
	// QueueLIFO reports whether the queue serves newest first now.
	QueueLIFO bool
	// TokenRate is the group's rate limit in cost units per second (as the
	// law manages it, where it does); 0 without a rate limit.
	TokenRate float64
	// RateManaged reports whether the law manages TokenRate.
	RateManaged bool
	// Global is, for a rate with scope "global", where its decisions are
	// made now (the shared store, or the fallback while it is down), the link's last
	// error, the node count the fallback shares the quota by, and the
	// decision counts since the group was first built (reloads keep them);
	// nil for a local rate or none.
	Global *GlobalStatus

	// Latency is the upstream latency over the last control interval
	// (successes only, queue wait excluded), with MinRTT over the last 120
	// intervals; QueueWaits the waits of requests that left the queue in it.
	// Their Time and Span count ticks, not wall time: use Tick.
	Latency    probe.Snapshot
	QueueWaits probe.Snapshot
	// Throughput is completions (successes and drops) per second over the
	// last interval.
	Throughput float64
	// Sample is the last adaptive.Sample the law was given, and Decision the
	// law's answer: Decision.Reason.String() says why it moved or held.
	Sample   adaptive.Sample
	Decision adaptive.Decision
	// Tick is the instant of the last control tick, zero before the first.
	Tick time.Time

	// Cumulative counts since the group was built: requests that arrived,
	// completions by Outcome (as of the last tick), rejections by reason
	// (indexed by adaptive.RejectReason), and requests whose client left while
	// they waited.
	Arrived   uint64
	Completed [3]uint64
	Rejected  [adaptive.NumRejections]uint64
	Canceled  uint64
	// Shadow is the group's mode and what shadow mode would have refused.
	Shadow ShadowStatus
	// Streams is the group's long-lived streams: open, bound, opened.
	Streams StreamsStatus

	// Floor is the lowest priority admitted now and the reason given below it.
	Floor adaptive.Floor
	// Unmoved is the resource targets the law ignores as of the last tick,
	// because cutting the limit did not move them; the resource guard does
	// not shed on them either. Empty for laws other than "target".
	Unmoved adaptive.Unmoved
	// Keys is how many keys the fair share tracks; RateKeys how many the
	// per-key rate limit holds.
	Keys, RateKeys int

	// RejectedKeys are the keys rejected most (at most 10, most first), over
	// about the last two minutes: a Space-Saving summary whose counts halve
	// every minute. Empty for a group without a key. RejectedKeysSkipped
	// counts rejections the summary skipped because another was being
	// counted at that instant (it never makes a request wait).
	RejectedKeys        []RejectedKey
	RejectedKeysSkipped uint64

	// LastChange is the law's last change of the limit or rate, nil before
	// the first.
	LastChange *LimitChange
	// Override is the runtime override in force, nil when none.
	Override *Override
}

// RejectedKey is one of a group's most rejected keys.
type RejectedKey struct {
	Key string
	// Count estimates the key's rejections over about the last two minutes;
	// it is at most Error above the true count.
	Count, Error uint64
	// Reason is the reason of the key's latest rejection.
	Reason adaptive.RejectReason
}

// topKeys reads the keys a summary counted most (at most rejectedKeysShown,
// most first), with its count of skipped additions.
func topKeys(sum *topk.Summary) ([]RejectedKey, uint64) {
	top, _, skipped := sum.Top(rejectedKeysShown)
	var keys []RejectedKey
	for _, e := range top {
		keys = append(keys, RejectedKey{Key: e.Key, Count: e.Count, Error: e.Error, Reason: adaptive.RejectReason(e.Tag)})
	}
	return keys, skipped
}

// LimitChange is one change of a group's limit or rate by its law.
type LimitChange struct {
	At             time.Time
	From, To       int
	RateFrom, Rate float64 // requests per second; 0 when not managed
	// Reason is the law's reason, such as "p99 310ms > target 200ms".
	Reason string
}

// Groups returns the status of every group, in match order.
func (g *Gate) Groups() []GroupStatus {
	t := g.table.Load()
	out := make([]GroupStatus, 0, len(t.routes))
	for _, r := range t.routes {
		out = append(out, r.g.status())
	}
	return out
}

// Group returns the status of the group called name.
func (g *Gate) Group(name string) (GroupStatus, bool) {
	gr := g.table.Load().byName[name]
	if gr == nil {
		return GroupStatus{}, false
	}
	return gr.status(), true
}

func (gr *group) status() GroupStatus {
	c := gr.cfg.Load()
	s := GroupStatus{
		Name:              gr.name,
		Law:               c.Concurrency.Law,
		Limit:             gr.conc.Limit(),
		Min:               c.Concurrency.Min,
		Max:               c.Concurrency.Max,
		InFlight:          gr.inFlight(),
		Queued:            gr.conc.Queued(),
		QueueMax:          gr.conc.MaxQueue(),
		QueueWait:         gr.bound.Load().Wait,
		QueueWaitCritical: gr.bound.Load().Critical,
		QueueLIFO:         gr.conc.Order() == orderOf(true),
		RateManaged:       manageable(c) > 0,
		Floor:             adaptive.UnpackFloor(gr.floor.Load()),
		Canceled:          gr.c.canceled.Load(),
		Override:          gr.override.Load(),
	}
	if c.Concurrency.FixedLimit() {
		s.Min, s.Max = c.Concurrency.Limit, c.Concurrency.Limit
	}
	if c.Rate != nil {
		s.TokenRate = c.Rate.PerSecond()
	}
	if info := gr.info.Load(); info != nil {
		s.Latency, s.QueueWaits, s.Sample, s.Decision, s.Tick = info.latency, info.queueWait, info.sample, info.decision, info.at
		s.Throughput = info.sample.Throughput
		s.Unmoved = info.unmoved
	}
	if s.RateManaged {
		if u := math.Float64frombits(gr.rate.managed.Load()); u > 0 {
			s.TokenRate = u
		}
	}
	for p := range gr.c.arrived {
		s.Arrived += gr.c.arrived[p].Load()
	}
	for i := range s.Completed {
		s.Completed[i] = gr.c.done[i].Load()
	}
	for i := range s.Rejected {
		s.Rejected[i] = gr.c.rejected[i].Load()
	}
	if gr.keys != nil {
		s.Keys = gr.keys.len()
	}
	if gr.rate != nil && gr.rate.keyed != nil {
		s.RateKeys = gr.rate.keyed.Len()
	}
	s.Shadow = gr.shadowStatus(c)
	s.Streams = gr.streamsStatus()
	s.RejectedKeys, s.RejectedKeysSkipped = topKeys(gr.c.rejectedKeys)
	s.Global = gr.globalStatus()
	if ch := gr.change.Load(); ch != nil {
		s.LastChange = &LimitChange{At: ch.at, From: ch.from, To: ch.to, RateFrom: ch.rateFrom, Rate: ch.rate, Reason: ch.reason}
	}
	return s
}

// Status is the gate as a whole, for the admin API.
type Status struct {
	// Started is when the gate was built.
	Started time.Time
	// Resources is the last resource sample; signals that could not be read
	// are unknown and say why (Signal.Reason).
	Resources probe.Resources
	// Ticks counts control ticks; LastTick is the last one's instant.
	Ticks    uint64
	LastTick time.Time
	// ConfigSource and ConfigHash identify the config running, ConfigLoaded
	// when it was applied.
	ConfigSource, ConfigHash string
	ConfigLoaded             time.Time
	// StateFile is the state file ("" for none), LastSave the last write and
	// SaveErr its error; Restore what New found in it.
	StateFile string
	LastSave  time.Time
	SaveErr   error
	Restore   RestoreInfo
}

// gateStatus is what the control loop publishes for Status.
type gateStatus struct {
	resources probe.Resources
	ticks     uint64
	at        time.Time
}

// Status returns the gate's status.
func (g *Gate) Status() Status {
	t := g.table.Load()
	gs := g.status.Load()
	sv := g.saved.Load()
	return Status{
		Started:      g.started,
		Resources:    gs.resources,
		Ticks:        gs.ticks,
		LastTick:     gs.at,
		ConfigSource: t.source,
		ConfigHash:   t.hash,
		ConfigLoaded: t.loaded,
		StateFile:    g.statePath,
		LastSave:     sv.at,
		SaveErr:      sv.err,
		Restore:      g.restore,
	}
}

// unknownResources is a resource sample in which nothing is known, for why.
func unknownResources(now time.Time, why string) probe.Resources {
	u := probe.Signal{Reason: why}
	return probe.Resources{Time: now, CPU: u, Memory: u, CPUPressure: u}
}
