package proxy

import "sync/atomic"

// Stats counts what the proxy did on its own, beside what the gate sees: the
// requests its circuit breaker refused and the upstream failures it answered.
// Counters only grow.
type Stats struct {
	CircuitRejected uint64 // refused with 503, reason circuit_open
	ConnectErrors   uint64 // the upstream could not be reached (502)
	Timeouts        uint64 // the upstream made no progress in time (504, or cut mid-body)
	ResetErrors     uint64 // the upstream closed or reset the connection (502, or cut mid-body)
	ProtocolErrors  uint64 // the upstream sent a malformed response (502)
	LocalErrors     uint64 // this side ran out of file descriptors, buffers or ports (503, Sluice-Error: local)
	Retries         uint64 // requests sent again after a reused connection failed first
	Upgrades        uint64 // connections upgraded (WebSocket) and spliced
	IdleConns       int    // idle HTTP/1.1 connections to the upstream now

	// Abandoned counts the requests whose client went away after they
	// were sent upstream; AbandonedInFlight is those whose upstream has not
	// answered yet, each holding its slot of the concurrency limit until it
	// does (or the upstream timeout passes): the upstream is still working on
	// them.
	Abandoned         uint64
	AbandonedInFlight int

	// HTTP/2 rapid reset (CVE-2023-44487, see resets.go), over NewServer's
	// server: the streams their client ended within a second of opening
	// them, those refused on a connection that resets most of its streams,
	// and the connections closed for it.
	ResetStreams, ResetRefused, ResetConnections uint64
}

// counters are the atomic counters behind Stats; they are touched only off the
// success path.
type counters struct {
	circuitRejected, connect, timeout, reset, protocol, local, retries, upgrades atomic.Uint64
	resetStreams, resetRefused, resetConns                                       atomic.Uint64
	abandonedH2                                                                  atomic.Uint64 // h2c's abandoned requests (the pool counts HTTP/1.1's)
	abandonedH2InFlight                                                          atomic.Int64
}

// Stats returns a snapshot of the proxy's counters. Safe for concurrent use.
func (p *Proxy) Stats() Stats {
	c := &p.stats
	abandoned, finishing := p.pool.Abandoned()
	return Stats{
		Abandoned:         abandoned + c.abandonedH2.Load(),
		AbandonedInFlight: finishing + int(c.abandonedH2InFlight.Load()),
		CircuitRejected:   c.circuitRejected.Load(),
		ConnectErrors:     c.connect.Load(),
		Timeouts:          c.timeout.Load(),
		ResetErrors:       c.reset.Load(),
		ProtocolErrors:    c.protocol.Load(),
		LocalErrors:       c.local.Load(),
		Retries:           c.retries.Load(),
		Upgrades:          c.upgrades.Load(),
		IdleConns:         p.pool.IdleCount(),

		ResetStreams:     c.resetStreams.Load(),
		ResetRefused:     c.resetRefused.Load(),
		ResetConnections: c.resetConns.Load(),
	}
}
