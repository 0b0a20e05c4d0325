// Package rls serves Envoy's rate limit service protocol,
// envoy.service.ratelimit.v3.RateLimitService (ShouldRateLimit over gRPC,
// go-control-plane's generated types), on sluice's gate: a front-end
// beside the proxy, so that a mesh where Envoy already is the proxy gets
// sluice's groups, keys, rate algorithms and global quotas.
//
// # Rate quotas only
//
// Envoy's protocol has no release and no latency: Envoy asks before the
// request and never reports how it ended. Through it sluice serves rate
// quotas, local or global (scope "global", decided in Redis), and nothing
// else: no concurrency slot is taken, the resource guard and the priority
// floor are not applied, and the group's law learns nothing from these
// requests. Each descriptor is one decision of its group's rate stage
// (Gate.AllowRate). For concurrency limits and adaptive control, put
// sluice's proxy in the request path, or use the permit service.
//
// # Mapping
//
// A Mapping names, per domain, descriptors and the group each spends: its
// entries, in order, as Envoy's rate_limits actions produce them
// (remote_address, request_headers' descriptor_key, generic_key,
// header_match, destination_cluster, ...). An entry with a value matches
// that value; one without matches any value, and those values, in order,
// make the sluice key (joined by 0x1f when there are several), so that
// {remote_address} is a quota per client address. Give such a group a key
// of some kind in its config (key = "ip" will do: the service sets the key
// itself) so its rate limit is kept per key; without one, every value
// shares the group's single limit. A descriptor matches only a mapped one
// with exactly its entries; the first in the mapping's order wins.
//
// A descriptor of a domain the mapping does not have, or that its domain
// does not map, is answered OK with no limit, as envoyproxy/ratelimit
// answers a descriptor without a limit; so is one of a group that a
// reload removed. The request's overall code is OVER_LIMIT when any
// descriptor is.
//
// # Cost
//
// A descriptor's hits_addend, else the request's, is the number of units
// it spends; zero or unset is the group's configured cost (rate.cost,
// default 1), as Envoy counts an unset hits_addend as one hit. A
// descriptor with is_negative_hits (a refund) spends nothing and is
// answered OK with no limit: sluice's limiters give nothing back. A
// descriptor's own limit override is ignored: the group's quota applies.
//
// # Answers
//
// Each status carries the group's limit as current_limit, what remains of
// it as limit_remaining and when it is whole again as duration_until_reset
// (exact, from the limiter). current_limit is the quota the proxy's
// RateLimit-Policy field states, q units per w whole seconds, in Envoy's
// largest unit that divides w, with unit_multiplier for the rest: 100 per
// 90 s is 100 per SECOND × 90, 10 per 5 min is 10 per MINUTE × 5. A quota
// that requests_per_unit and a unit cannot state exactly is stated as that
// field states it: a token bucket (rate r, burst b) as b per b/r seconds,
// the time its burst takes to refill; a window that is not a whole number
// of seconds is rounded up to one, and one beyond a day cut to a day, the
// quota scaled in proportion and rounded down (a bucket of 20 at 100/s is
// 100 per SECOND; of 3 at 2/s, 4 per SECOND × 2), never stating more than
// the limiter allows.
//
// response_headers_to_add carries, by Mapping.Headers: the IETF
// RateLimit-Policy and RateLimit fields (draft -10, one item per
// descriptor with a limit, rendered by the gate as the proxy renders them;
// the default), or the older X-RateLimit-Limit, -Remaining and -Reset of
// the descriptor with the least remaining (draft-polli-03), or none (Envoy
// can render X-RateLimit-* itself from the statuses: its filter's
// enable_x_ratelimit_headers). On OVER_LIMIT it adds Retry-After (jittered
// whole seconds, the longest of the descriptors over their limit) and
// Sluice-Reason, as the proxy's 429 does.
//
// Shadow mode: a descriptor over the limit of a group or rate rule with
// mode = "shadow" (or whose group Params.Shadow names) is answered OK, its
// figures kept and no Retry-After, and counted as shadowed (and by the gate
// as a would-be rejection, reason "rate"). Envoy's RateLimitResponse has no
// shadow field (go-control-plane's envoy/service/ratelimit/v3 holds
// overall_code, statuses, headers, raw_body, dynamic_metadata and quota):
// the answer is a plain OK, and the shadowed count is in sluice's metrics
// (sluice_front_decisions_total, decision "shadowed").
//
// # Errors
//
// A request that is not well formed (no domain, no descriptors, more than
// MaxDescriptors, a descriptor without entries or with more than
// MaxEntries, an entry without a key) is answered with INVALID_ARGUMENT;
// one that gRPC cannot decode is refused by gRPC before the service.
//
// # Authentication and bounds
//
// On a TCP listener every call must carry gRPC metadata
// "authorization: Bearer TOKEN" (in Envoy: the rate_limit_service's
// grpc_service.initial_metadata); a TCP listener without a token is
// refused at start. The token is checked before anything is allocated for
// a call: a new connection reaches the gRPC server only once the headers
// of its first stream carried it (one without is answered UNAUTHENTICATED,
// sent GOAWAY and closed), and each later stream is refused as its headers
// arrive, before a goroutine is made for it or its message read. A unix
// socket (an Envoy pipe address) takes no token: it is created with mode
// 0660 (ServerParams.SocketMode).
//
// A Server holds at most 1,024 connections at once (front.DefaultMaxConns;
// one more is closed at once), 100 calls at once on each (Envoy opens
// another connection for more), header fields of 16 KiB and requests of
// 256 KiB; a new connection has 10 s to send its first stream's headers.
//
// Service and Server are safe for concurrent use.
package rls
