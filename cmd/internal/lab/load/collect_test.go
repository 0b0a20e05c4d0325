package load

import (
	"testing"
	"time"
)

// A refusal's latency counts in its phase's and its priority's figures, by
// the arrival's intended instant, not only in the totals: the refusals of a
// 3×C phase are told apart from a quiet phase's.
func TestCollectorRejectLatencyByPhaseAndClass(t *testing.T) {
	p := Params{
		Schedule:   Schedule{{Label: "quiet", For: time.Second, From: 10, To: 10}, {Label: "3C", For: time.Second, From: 30, To: 30}},
		Priorities: Mix{{Name: "critical", Weight: 1}, {Name: "sheddable", Weight: 1}},
		SLO:        time.Second,
	}
	c := newCollector(p)
	try := func(intended, lat time.Duration, prio int) {
		c.add(event{intended: intended, sentAt: intended, latency: lat, kind: KindRejected, tenant: -1, priority: prio})
		c.add(event{final: true, intended: intended, latency: lat, kind: KindRejected, status: 503, sent: true, tenant: -1, priority: prio})
	}
	try(100*time.Millisecond, 2*time.Millisecond, 0)
	try(1500*time.Millisecond, 80*time.Millisecond, 1)
	r := c.result(time.Now(), p)
	if got := r.Phases[0].RejectLatency; got.Count != 1 || got.Max > 2.1 {
		t.Errorf("quiet phase: %+v", got)
	}
	if got := r.Phases[1].RejectLatency; got.Count != 1 || got.Max < 79 {
		t.Errorf("3C phase: %+v", got)
	}
	if got := r.Priorities[1].RejectLatency; got.Count != 1 || got.Max < 79 {
		t.Errorf("sheddable: %+v", got)
	}
	if got := r.Totals.RejectLatency; got.Count != 2 {
		t.Errorf("totals: %+v", got)
	}
}
