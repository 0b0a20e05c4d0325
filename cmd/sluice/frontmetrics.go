package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/rls"
)

// frontCollector exports what the front-ends count on their own, beside
// what the gate sees of them (their admissions, rejections by reason and
// outcomes are in the gate's metrics, with the proxy's). It reads them at
// scrape time; either may be nil. No label carries a key.
type frontCollector struct {
	permit *permit.Service
	rls    *rls.Service
}

var (
	frontDecisionsDesc = prometheus.NewDesc("sluice_front_decisions_total",
		"Decisions of the front-ends beside the proxy, by front (permit, rls), group and decision: permit granted, refused (the reason is in sluice's rejection metrics) or canceled (the caller went away while queued); rls ok, over_limit, or shadowed (over the limit, answered OK).",
		[]string{"front", "group", "decision"}, nil)
	permitReleasesDesc = prometheus.NewDesc("sluice_permit_releases_total",
		"Permits ended, by group and result: released in time with an outcome (success, dropped, ignored), expired (the lease ran out unreleased: its holder died or hung; no drop to the law), late (released after it expired: freed nothing).",
		[]string{"group", "result"}, nil)
	permitHeldDesc = prometheus.NewDesc("sluice_permit_held",
		"Permits held now, over every group.", nil, nil)
	permitCapacityDesc = prometheus.NewDesc("sluice_permit_capacity",
		"The most permits held at once (permit.max_leases).", nil, nil)
	permitFullDesc = prometheus.NewDesc("sluice_permit_full_total",
		"Permit requests refused because permit.max_leases were held.", nil, nil)
	rlsCallsDesc = prometheus.NewDesc("sluice_rls_calls_total",
		"ShouldRateLimit calls, by result: answered, or invalid (refused with INVALID_ARGUMENT).",
		[]string{"result"}, nil)
	rlsUnlimitedDesc = prometheus.NewDesc("sluice_rls_unlimited_total",
		"Descriptors answered OK with no limit, by why: unknown_domain, unmatched (the domain maps no such descriptor), refund (is_negative_hits).",
		[]string{"why"}, nil)
)

func (c frontCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{frontDecisionsDesc, permitReleasesDesc, permitHeldDesc, permitCapacityDesc,
		permitFullDesc, rlsCallsDesc, rlsUnlimitedDesc} {
		ch <- d
	}
}

func (c frontCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, n uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(n), labels...)
	}
	if c.permit != nil {
		st := c.permit.Stats()
		ch <- prometheus.MustNewConstMetric(permitHeldDesc, prometheus.GaugeValue, float64(st.Live))
		ch <- prometheus.MustNewConstMetric(permitCapacityDesc, prometheus.GaugeValue, float64(st.Capacity))
		counter(permitFullDesc, st.Full)
		for _, g := range st.Groups {
			var refused uint64
			for _, n := range g.Refused {
				refused += n
			}
			counter(frontDecisionsDesc, g.Granted, "permit", g.Name, "granted")
			counter(frontDecisionsDesc, refused, "permit", g.Name, "refused")
			counter(frontDecisionsDesc, g.Canceled, "permit", g.Name, "canceled")
			for o, n := range g.Released {
				counter(permitReleasesDesc, n, g.Name, gate.Outcome(o).String())
			}
			counter(permitReleasesDesc, g.Expired, g.Name, "expired")
			counter(permitReleasesDesc, g.Late, g.Name, "late")
		}
	}
	if c.rls != nil {
		st := c.rls.Stats()
		counter(rlsCallsDesc, st.Calls-st.Invalid, "answered")
		counter(rlsCallsDesc, st.Invalid, "invalid")
		counter(rlsUnlimitedDesc, st.UnknownDomain, "unknown_domain")
		counter(rlsUnlimitedDesc, st.Unmatched, "unmatched")
		counter(rlsUnlimitedDesc, st.Refunds, "refund")
		for _, g := range st.Groups {
			counter(frontDecisionsDesc, g.OK, "rls", g.Name, "ok")
			counter(frontDecisionsDesc, g.OverLimit, "rls", g.Name, "over_limit")
			counter(frontDecisionsDesc, g.Shadowed, "rls", g.Name, "shadowed")
		}
	}
}
