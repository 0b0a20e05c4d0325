package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/proxy"
	"github.com/sluicehq/sluice/proxy/breaker"
)

// upstreamCollector exports what the proxy counts on its own, beside what
// the gate sees: the circuit breaker's state, the upstream failures the
// proxy answered, and the HTTP/2 streams its clients reset. It reads the
// proxy at scrape time.
type upstreamCollector struct{ p *proxy.Proxy }

var (
	upstreamCircuitDesc = prometheus.NewDesc("sluice_upstream_circuit_state",
		"State of the upstream's circuit breaker: 1 for the current state, 0 for the others.",
		[]string{"state"}, nil)
	upstreamErrorsDesc = prometheus.NewDesc("sluice_upstream_errors_total",
		"Upstream exchanges that failed and the proxy answered itself (502/504 or a response cut mid-body), by kind; kind local: this side ran out of file descriptors, buffers or ports (503, not counted against the upstream).",
		[]string{"kind"}, nil)
	upstreamCircuitRejectedDesc = prometheus.NewDesc("sluice_upstream_circuit_rejected_total",
		"Requests refused with 503 because the upstream's circuit was open.", nil, nil)
	upstreamRetriesDesc = prometheus.NewDesc("sluice_upstream_retries_total",
		"Requests sent again after a reused upstream connection failed before answering.", nil, nil)
	upstreamUpgradesDesc = prometheus.NewDesc("sluice_upstream_upgrades_total",
		"Connections upgraded (WebSocket) and spliced to the upstream.", nil, nil)
	upstreamIdleDesc = prometheus.NewDesc("sluice_upstream_idle_connections",
		"Idle HTTP/1.1 connections to the upstream.", nil, nil)
	upstreamAbandonedDesc = prometheus.NewDesc("sluice_upstream_abandoned_total",
		"Requests whose client went away after they were sent upstream: each keeps its concurrency slot until the upstream has answered (read and dropped) or the upstream timeout passes, as the upstream goes on working on it.", nil, nil)
	upstreamAbandonedInFlightDesc = prometheus.NewDesc("sluice_upstream_abandoned_in_flight",
		"Requests in flight whose client went away: the upstream has not answered yet, and each holds a concurrency slot (counted in sluice_inflight_requests).", nil, nil)
	h2ResetsDesc = prometheus.NewDesc("sluice_h2_resets_total",
		"HTTP/2 streams their client reset (rapid reset, CVE-2023-44487): what=early, ended within a second of opening; what=refused, answered 503 on a connection that resets most of its streams; what=connection, connections closed for it.",
		[]string{"what"}, nil)
)

func (upstreamCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upstreamCircuitDesc, upstreamErrorsDesc,
		upstreamCircuitRejectedDesc, upstreamRetriesDesc, upstreamUpgradesDesc, upstreamIdleDesc,
		upstreamAbandonedDesc, upstreamAbandonedInFlightDesc, h2ResetsDesc} {
		ch <- d
	}
}

func (c upstreamCollector) Collect(ch chan<- prometheus.Metric) {
	if b := c.p.Breaker(); b != nil {
		now := b.State()
		for _, s := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
			v := 0.0
			if s == now {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(upstreamCircuitDesc, prometheus.GaugeValue, v, s.String())
		}
	}
	st := c.p.Stats()
	for _, e := range []struct {
		kind string
		n    uint64
	}{{"connect", st.ConnectErrors}, {"timeout", st.Timeouts}, {"reset", st.ResetErrors}, {"protocol", st.ProtocolErrors}, {"local", st.LocalErrors}} {
		ch <- prometheus.MustNewConstMetric(upstreamErrorsDesc, prometheus.CounterValue, float64(e.n), e.kind)
	}
	ch <- prometheus.MustNewConstMetric(upstreamCircuitRejectedDesc, prometheus.CounterValue, float64(st.CircuitRejected))
	ch <- prometheus.MustNewConstMetric(upstreamRetriesDesc, prometheus.CounterValue, float64(st.Retries))
	ch <- prometheus.MustNewConstMetric(upstreamUpgradesDesc, prometheus.CounterValue, float64(st.Upgrades))
	ch <- prometheus.MustNewConstMetric(upstreamIdleDesc, prometheus.GaugeValue, float64(st.IdleConns))
	ch <- prometheus.MustNewConstMetric(upstreamAbandonedDesc, prometheus.CounterValue, float64(st.Abandoned))
	ch <- prometheus.MustNewConstMetric(upstreamAbandonedInFlightDesc, prometheus.GaugeValue, float64(st.AbandonedInFlight))
	ch <- prometheus.MustNewConstMetric(h2ResetsDesc, prometheus.CounterValue, float64(st.ResetStreams), "early")
	ch <- prometheus.MustNewConstMetric(h2ResetsDesc, prometheus.CounterValue, float64(st.ResetRefused), "refused")
	ch <- prometheus.MustNewConstMetric(h2ResetsDesc, prometheus.CounterValue, float64(st.ResetConnections), "connection")
}
