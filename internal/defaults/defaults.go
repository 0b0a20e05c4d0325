// Package defaults holds the figures that packages which cannot import one
// another each take for a setting left unset: the daemon's config (package
// configs, the TOML schema) and the libraries it configures (proxy, its
// server and circuit breaker, limits/redis, permit, rls, the listeners of
// internal/listen). Each figure is written here once; every package that
// defaults the setting reads it from here, so that a zero parameter of a
// library and an absent key of the file mean the same thing.
//
// It imports nothing, so that it can sit below every package of sluice.
// A figure only one package needs stays in that package.
package defaults

import "time"

// The proxy's listener ([server], proxy.ServerParams and proxy.H1Server).
const (
	// ReadHeaderTimeout bounds reading a request head (slowloris).
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes a client's keep-alive connection idle this long.
	IdleTimeout = 2 * time.Minute
	// MaxHeaderBytes bounds a request's line and header fields, in bytes:
	// net/http's http.DefaultMaxHeaderBytes.
	MaxHeaderBytes = 1 << 20
)

// The proxy's upstream ([upstream], proxy.Params).
const (
	// DialTimeout bounds connecting to the upstream: a dead upstream fails
	// fast.
	DialTimeout = 2 * time.Second
	// UpstreamTimeout is the longest the proxy waits for the upstream to
	// make progress: for the response head, and between reads of the body
	// ([upstream] response_header_timeout).
	UpstreamTimeout = 30 * time.Second
	// IdleConnTimeout closes an idle upstream connection.
	IdleConnTimeout = 90 * time.Second
	// MaxIdleConns is how many idle HTTP/1.1 connections are kept to the
	// upstream ([upstream] max_idle_conns_per_host).
	MaxIdleConns = 256
)

// The upstream's circuit breaker ([upstream.circuit], breaker.Params):
// open at 5 failures in a row, or once the last 10s hold 20 requests of
// which half failed; stay open 5s, then close after 3 probes succeed. A
// sidecar's upstream that restarts is back within seconds, so the circuit
// does not stay open long.
const (
	BreakerWindow              = 10 * time.Second
	BreakerMinRequests         = 20
	BreakerFailureRatio        = 0.5
	BreakerConsecutiveFailures = 5
	BreakerOpenDuration        = 5 * time.Second
	BreakerProbes              = 3
)

// Global quotas in Redis ([redis], limits/redis.StoreParams and
// LeaseParams, gate/spec.Rate).
const (
	// RedisTimeout bounds one quota decision.
	RedisTimeout = 5 * time.Millisecond
	// RedisKeyPrefix starts every key sluice writes.
	RedisKeyPrefix = "sluice:"
	// LeasePeriod is how often a node renews the leases of a leased quota.
	LeasePeriod = 100 * time.Millisecond
	// LeaseExpiry is how long a renewal keeps a node's lease (at least
	// three lease periods).
	LeaseExpiry = 2 * time.Second
)

// The permit service ([permit], package permit).
const (
	// PermitLease is how long a permit may be held before it is counted as
	// expired and its slot freed.
	PermitLease = 30 * time.Second
	// PermitMaxLeases bounds the permits outstanding at once.
	PermitMaxLeases = 1 << 14
	// PermitListen is where the permit service listens: loopback TCP,
	// which needs a bearer token (every local user can reach the port).
	PermitListen = "127.0.0.1:7070"
)

// The rate limit service for Envoy ([rls], package rls).
const (
	// RLSListen is where it listens: a unix socket, which needs no token
	// (an Envoy cluster reaches it through a pipe address).
	RLSListen = "unix:///run/sluice/rls.sock"
)

// SocketMode is the file mode of a unix socket sluice listens on when none
// is given ([server], [admin], [permit] and [rls] socket_mode,
// internal/listen): read and write, which is connect, for its owner and
// group.
const SocketMode = 0o660
