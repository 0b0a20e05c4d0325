// Package redis keeps global rate quotas in Redis, so that every node of a
// service enforces one quota together ("5,000 req/s for the whole API,
// 100 req/s per tenant across all replicas"), while each node keeps its own
// adaptive concurrency limit.
//
// # Model
//
// A Store is a connection to one Redis server or Redis Cluster; a Limiter
// is one quota on it, applied per key, with the algorithm and Result
// semantics of the package limits type of the same name: TokenBucket and
// LeakyBucket (GCRA, in integer nanoseconds), FixedWindow and SlidingWindow
// (epoch-aligned windows). Its method AllowAt(key, now, n) has the shape of
// limits.Keyed's. From the same state at the same instants, a Limiter and
// the local algorithm return the same Result (TestExact), with two
// exceptions: Redis decides at its own time (the now passed in only serves
// the fallback), and a window limiter whose Redis clock went back to an
// earlier window starts a fresh one (the local one keeps counting in the
// later window).
//
// Each decision is made by a Lua script run with EVALSHA (the script is sent
// again with EVAL only when Redis has lost it), one round trip. On a single
// server, the decisions of concurrent callers are batched: one script call
// decides every request queued while the previous calls were on the wire,
// in order, so Redis pays the cost of a call (and of reading its clock)
// once per batch, and reads and writes each key of the batch once, however
// many of its requests are for that key (a quota without a per-key split
// costs one GET and one SET per batch). On a Redis Cluster, whose keys a batch could not mix,
// each decision is a call of its own and go-redis's auto-pipeliner sends
// the calls of concurrent callers together. Either way one Redis serves
// many decisions per round trip.
//
// The scripts read the time from Redis (TIME), never from the node. A key
// holds its state as one integer (the GCRA's theoretical arrival time in
// Unix ns, or a window's index and counts) and expires by itself once its
// state is fresh again, so idle keys cost nothing. Keys are
//
//	KeyPrefix + Name + ":" + {gcra|fw|sw} + ":{" + key + "}"
//
// hash-tagged by the caller's key, for Redis Cluster. Redis 5 or later
// (tested with 7.0).
//
// # Failure
//
// A decision waits at most the store's Timeout (5 ms by default). A
// decision that fails or times out is answered by the Fallback: local (this
// node's share of the quota, the quota divided by the node count), open, or
// closed. When three decisions in a row have failed and none has succeeded
// for ten times the Timeout (Redis is dead, or cannot keep up at all; a
// slow Redis that still answers some decisions in time is not), the store
// stops calling Redis for a backoff that starts at BackoffMin and doubles
// up to BackoffMax; after each pause one decision probes Redis, and the
// first that succeeds brings every limiter of the store back to Redis.
// Status reports the mode, the last error and the decision counts. A
// decision that timed out may still be applied by Redis later: during a
// slow spell the quota is charged both in Redis and locally, never less.
//
// # Node count
//
// The local share divides by the larger of the configured node count and
// the nodes seen alive: each store registers its node in a sorted set in
// Redis (KeyPrefix + "nodes") every Heartbeat, and a node is counted for
// three heartbeats. During an outage the last count seen is kept.
//
// Core package: it does not log; callers read Status. (go-redis logs dial
// failures through its own process-wide logger, redis.SetLogger.)
package redis
