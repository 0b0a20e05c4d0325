// Package redis keeps global rate quotas in Redis, so that every node of a
// service enforces one quota together ("5,000 req/s for the whole API,
// 100 req/s per tenant across all replicas"), while each node keeps its own
// adaptive concurrency limit.
//
// # Model
//
// A Store is a connection to one Redis deployment: a server, a Redis
// Cluster, or a master found through Redis Sentinel (the store follows a
// failover to the replica the sentinels promote). A Limiter is one quota on
// it, applied per key, with the algorithm and Result semantics of the
// package limits type of the same name: TokenBucket and LeakyBucket (GCRA,
// in integer nanoseconds), FixedWindow and SlidingWindow (epoch-aligned
// windows). Its method AllowAt(key, now, n) has the shape of
// limits.Keyed's. A quota is shared in one of two ways (LimiterParams.Sync):
//
//   - exact (the default): Redis makes every decision. From the same state
//     at the same instants, a Limiter and the local algorithm return the
//     same Result (TestExact), with two exceptions: Redis decides at its
//     own time (the now passed in only serves the fallback), and a window
//     limiter whose Redis clock went back to an earlier window starts a
//     fresh one (the local one keeps counting in the later window). For
//     strict quotas (billing).
//   - leased: each node leases blocks of the quota from Redis and decides
//     locally against them, at the cost of a local limiter; Redis serves a
//     renewal per node and period, however many decisions the nodes make.
//     The nodes together may admit a little more than the exact quota: at
//     most the units leased out (see Accuracy). For the algorithms whose
//     quota is a stock of units that can be cut into blocks: the buckets
//     and the fixed window (not the sliding window, whose estimate weighs
//     two windows: NewLimiter refuses it, saying so).
//
// # Exact mode
//
// Each decision is made by a Lua script run with EVALSHA (the script is sent
// again with EVAL only when Redis has lost it), one round trip. On a single
// server (and behind Sentinel), the decisions of concurrent callers are
// batched: one script call decides every request queued while the previous
// calls were on the wire, in order, so Redis pays the cost of a call (and
// of reading its clock) once per batch, and reads and writes each key of
// the batch once, however many of its requests are for that key (a quota
// without a per-key split costs one GET and one SET per batch). On a Redis
// Cluster, whose keys a batch could not mix, each decision is a call of its
// own and go-redis's auto-pipeliner sends the calls of concurrent callers
// together. Either way one Redis serves many decisions per round trip.
//
// What bounds exact decisions is Redis's own work per decision, not the
// client: reading and writing the key and the script's arithmetic take
// Redis about 3.5 µs of its time per decision over many keys, where an
// INCR takes 0.25 µs (redis-µs/decision of BenchmarkDecisions, redis-µs/op
// of BenchmarkINCR). rueidis, a client built around auto-pipelining, was
// measured beside go-redis in one run on the same scripts (EVALSHA): the
// batched decisions per second were the same within the noise (0.97 to
// 1.07 times go-redis's), a call per decision (a cluster's path) 1.46
// times; not enough to carry a second client, so the package stays on
// go-redis.
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
// # Leased mode
//
// A leased quota's state is the exact quota's own key (the stock: a bucket's
// tokens, a window's units left), so exact and leased decisions, and nodes
// of either mode, share one quota. Beside it, a hash per key,
//
//	KeyPrefix + Name + ":lease:{" + key + "}"
//
// records the leases: per node, the units it may hold, its demand and its
// lease's expiry, with their sums (lua/lease.lua). A node's decision on a
// key it leases takes units from its lease (limits.Allowance: one
// compare-and-swap, no lock, no Redis); with none left it is refused
// locally, with RetryAfter the time to the next renewal. Its other
// decisions are exact. Every Period (default 100 ms) one background
// goroutine renews the node's leases, one script call for up to 32 keys on
// a single server (one per key, pipelined, on a cluster); a lease that runs
// low while the quota has room is renewed sooner (at most four times a
// period). A renewal reports the node's demand (the units it admitted and
// refused per second), gives back what it holds beyond about 1.5 periods of
// that demand, and asks to be topped up to it. Redis grants what the stock
// has, or, while the nodes together want more than the quota's rate, shares
// the rate max-min fair: a node whose demand is under the fair level gets
// its demand, the others split what is left equally (each its fraction
// level/rate of the refill since its last renewal; for a window, of the
// window's limit), as the gate does for tenants inside one node
// (TestLeasedShares: 60/30/10 % of the demand gives 35/35/30 % of the
// admitted units; TestLeasedUneven: 5,000/500/500 a second against 2,000
// gives the quiet nodes their 500). A node's units are valid until its lease
// expires as the node sees it, TTL (default 2 s) after its last renewal
// was sent (for a fixed window, no later than the window's end), which is
// before Redis expires the lease. A stopping node (Limiter.Close,
// Store.Close) gives back what it holds.
//
// A node that dies holding a lease (kill -9) stops counting against the
// quota when its lease expires: the first renewal after that, by any node,
// drops it (its units are not given back: it may have used them), and the
// others' fair parts grow. A node that joins decides a new key exactly;
// promoteAt (4) exact decisions of one key in one period get it a lease at
// its next renewal, with the demand those decisions measured, and its
// share at once.
//
// Keys of a quota split per key (per tenant) cannot all be leased to every
// node: a lease costs a renewal a period per node and per key, and units
// held on every node. So a node leases only the keys busy on it, the
// busiest first, at most Lease.MaxKeys (default 16) at once, and decides
// the others exactly. A key is leased once its exact decisions on that node
// reach promoteAt in a period, so that its renewal (one a period, a few
// more while its demand rises and the quota has room) replaces several
// decisions; a lease whose demand stays under half of that for quietRounds
// (10) renewals gives its units back and ends. A quota without a per-key
// split (one key) is simply leased once busy.
//
// # Accuracy
//
// Let S be the stock (S ≤ Burst, refilled at Rate), H the units the nodes
// hold, and consider any interval of length Δ. The units admitted in it
// come out of H: admitted ≤ H(start) + granted − given back − H(end); and
// the stock pays for the grants: granted − given back ≤ S(start) − S(end) +
// Rate·Δ ≤ Burst + Rate·Δ (units given back beyond the capacity are lost,
// never stored). So the nodes together admit at most Burst + Rate·Δ +
// H(start), where exact mode admits Burst + Rate·Δ: the over-admission is
// at most the units held when the interval starts, itself at most the
// outstanding units Redis counts (#O: what each node held plus what it was
// granted at its last renewal; a node's holding only shrinks between its
// renewals, and it drops lapsed units before Redis expires them). Each
// Limiter reports that bound as Status.Outstanding (for metrics); it is
// about 1.5 periods of the admitted rate, as each node asks for 1.5 periods
// of its demand (more while renewals come late: a busy machine). The bound
// costs nothing to the nodes and ties the Period to the trade: Redis serves
// nodes/Period renewals a second, and the bound is about 1.5·Rate·Period.
// From a state where nothing is leased, nothing is ever over-admitted
// (TestLeasedShares checks admitted ≤ Burst + Rate·Δ in Redis's time).
// A fixed window's units are granted from the current window and lapse at
// its end, so leased windows never admit more than the limit in a window.
// Keep Period well under Burst/Rate: a renewal takes at most what the stock
// holds, and refill beyond the capacity between two renewals is lost.
//
// # Quota definitions
//
// A quota's amounts can be changed at runtime for every node at once:
// Store.SetQuota writes a definition (the algorithm, its amounts, a
// version) in Redis beside the quota's state, at KeyPrefix + Name + ":def",
// and every node's limiter of that name applies it at its store's next
// refresh (every Heartbeat, and Store.Refresh), in exact and in leased mode.
// Who wins: a definition in Redis wins over every node's configuration, at
// a reload and at a restart (NewLimiter reads it, waiting at most the
// Timeout), until Store.ClearQuota removes it or Redis loses its data;
// while Redis holds none, each node applies its own configuration. A
// definition whose algorithm keeps another state than the node's is not
// applied, and Status.QuotaError says why.
//
// # Failure
//
// A decision waits for Redis at most its budget: the store's Timeout (5 ms
// by default), adapted to Redis's latency (below). A decision that fails,
// or that Redis is skipped for while it is down, is answered by the
// Fallback: local (this node's share of the quota, the quota divided by
// the node count), open, or closed; one that times out, within a bound
// (below). When three decisions (or renewals) in a row have failed and none
// has succeeded for ten times the Timeout (Redis is dead, or cannot keep up
// at all; a slow Redis that still answers some decisions in time is not),
// the store stops calling Redis for a backoff that starts at BackoffMin and
// doubles up to BackoffMax; after each pause one decision or renewal probes
// Redis, and the first that succeeds brings every limiter of the store back
// to Redis. A leased limiter's renewer probes besides once a lease period,
// whatever the backoff, so that every node is back within a period or two
// of Redis's return (TestLeasedBackWithinPeriods): a node that waited out
// its backoff (up to BackoffMax) decided by its share meanwhile and then
// debited all of that from the stock the nodes already back were living on,
// and they ran dry. Its probes cost Redis what its renewals cost while Redis
// is up, one call a period; a refused connection costs less, and a probe of
// a hung Redis waits at most the renewal's budget, on the renewer's own
// goroutine. On one server, a probe (and the heartbeat, while the link is
// down) first dials Redis itself, and calls it only once it accepts:
// go-redis's pool stops dialling after as many failed dials as its size
// (10 a core, counted over the client's life) and then dials once a second
// by itself, which brought a node back up to a second after Redis. Status reports the mode, the last error and the decision counts.
// A decision that timed out may still be applied by Redis later: during a
// slow spell the quota is charged both in Redis and locally, never less.
//
// Exact mode under load: the Timeout is the least a decision waits; the
// budget adapts to twice the 99th percentile of Redis's answers over the
// last second (doubling while more than 1 % come late), up to 100 ms, so
// a busy host's Redis is waited for instead of missed. A decision that
// still runs out of it while Redis is taken for up (a slow spell, not an
// outage) is decided by the Fallback within a local bound: with
// limits.FallbackLocal, the node's share of the quota and a local limiter
// of Overshoot (1 %) of the quota over the node count must both admit it,
// so the nodes together admit at most 1 % over the quota however many
// decisions time out (TestExactLateBounded; Status.LateBound states it);
// with limits.FallbackClosed it is refused; with limits.FallbackOpen
// admitted, counted and unbounded.
//
// In leased mode, a renewal that fails (its budget is half a period, far
// longer than a decision's) takes the store to ModeFallback at once, and
// from that round on (within one period of the outage) each lease decides
// by the fallback: first the units the node still holds (Redis counted
// them), then, with limits.FallbackLocal, a local limiter of the node's
// fallback share that starts empty, so that what it held counts toward the
// share.
// The share is answered by every renewal: the max-min fair split of the
// quota's rate over the nodes' demands (the nodes without a lease on the
// key keep their equal share, and the spare is split evenly), capped so
// that the shares recorded in Redis never add up to more than the rate
// (the demands each renewal sees are those of the others' last renewals),
// so through an outage the nodes together admit at most the rate plus the
// units they held when it began, the bound (TestLeasedOutage: killed and
// hung, at least 90 % of min(offered, quota) throughout). The units a node
// admitted by its share are debited from the stock by its next answered
// renewal, so a slow spell that put it in fallback is not paid twice.
// A token or leaky bucket's lease that has run dry admits besides what its
// fallback share allows since its last grant (up to 1.5 periods of it),
// beyond what the lease admitted meanwhile, debited by its next renewal:
// the share's floor. It keeps a node at its share while its grants fall
// short, late (a renewal waiting on a hung Redis for its budget, a starved
// renewer) or thin (the first grants after an outage, from a stock its
// debits emptied); at saturation the grants are the shares and the floor
// admits nothing (TestLeasedReturnNoDip). Status, the decision counts (fallback) and Store.Changed
// tell it at that moment. The renewals, in the background, bring the node
// back to leases by themselves once Redis answers.
// A renewal that Redis applied but whose answer came after its budget (a
// starved host) is undone by the lease's next answered renewal: each
// renewal is numbered and names the last one its node received, so the
// grant that never reached the node goes back to the stock, and what it
// gave back or debited is not counted twice (TestLeasedAbandonedRenewal;
// before, the grant was lost to the quota).
//
// A Redis that comes back empty is not a fresh quota. Each lease hash holds
// an epoch (the Redis time of its creation), answered by every renewal. The
// first node of an earlier epoch to renew on a hash that is gone empties
// the fresh stock (what the nodes admitted by their shares meanwhile is not
// in it), a node of the earlier epoch that comes back later debits only
// what its share admitted since the new epoch began (TestLeasedRestartDebit),
// and every node that finds a new epoch takes from Redis no more
// than the share it decided by, until as many leases are back as there
// were or until the others must have probed Redis again (1.2 × BackoffMax
// and two periods); so across a restart the nodes admit at most the quota
// plus the units held when Redis went away (TestLeasedRestartEmpty).
//
// # Node count
//
// The local share divides by the larger of the configured node count and
// the nodes seen alive: each store registers its node in a sorted set in
// Redis (KeyPrefix + "nodes") every Heartbeat, and a node is counted for
// three of its own heartbeats, so that nodes with different heartbeats count
// each other. During an outage the last count seen is kept.
//
// Core package: it does not log; callers read Status. (go-redis logs dial
// failures through its own process-wide logger, redis.SetLogger.)
package redis
