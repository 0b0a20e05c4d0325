// Package admin is sluice's operator surface: a JSON API to read and steer
// the gate, Prometheus metrics, a live dashboard, health checks and pprof,
// all on one HTTP listener apart from the proxy's.
//
// # Endpoints
//
//	GET   /v1/status          version, uptime, config source and hash, control
//	                          loop, state file, resource signals (unknown ones
//	                          with their reason), the link to Redis of the
//	                          global quotas (mode, since, last error, next
//	                          probe, nodes, the leased quotas' bounds), the
//	                          upstream's circuit breaker (state, since,
//	                          reason), the front-ends beside the proxy
//	                          (permit service, Envoy's rate limit service:
//	                          address, token, counts)
//	GET   /v1/groups          every group's read-out, in match order
//	GET   /v1/groups/{name}   one group's read-out
//	PATCH /v1/groups/{name}   a runtime override of the group's targets,
//	                          concurrency bounds or fixed limit, rate and queue
//	GET   /v1/groups/{name}/global     the group's global quota in force here
//	PATCH /v1/groups/{name}/global     change it on every node, through Redis
//	DELETE /v1/groups/{name}/global    every node back to its own config
//	POST  /v1/reload          re-read the config (Params.Load) and apply it
//	GET   /v1/history         the last minutes of every group, sampled each
//	                          second on the server (?since=UNIX_MS for the
//	                          points after an instant)
//	GET   /metrics            Prometheus text or protobuf exposition
//	GET   /livez, /readyz     liveness; readiness (Params.Ready)
//	GET   /debug/pprof/       the runtime profiles
//	GET   /                   the live dashboard, one embedded page
//	GET   /v1/openapi.json    the OpenAPI 3.1 document of every endpoint
//	                          above, with the schemas of their JSON answers
//	                          (package admin/api's types)
//
// Every answer of the API is JSON; an error is {"error": MESSAGE, "field":
// PATH, "problems": [{"field": PATH, "error": MESSAGE}, ...]}, with field set
// when one field is at fault, as the TOML names it ("targets.latency").
//
// # PATCH
//
// The body holds the fields to change, named as in the TOML and in
// configs' JSON, durations as strings, plus "keep_on_reload":
//
//	{"targets": {"latency": "150ms"}, "concurrency": {"max": 400}, "keep_on_reload": true}
//
// Only the fields gate.Overridable lists may change; any other (the match,
// the law, the algorithm, ...) is refused by name, as is an unknown one. The
// changed group is checked as the file is (configs.Config.ReplaceGroup, by
// the gate's Override) and every problem is reported. When a new min or max
// leaves the configured initial limit outside them and the body does not set
// concurrency.initial, the initial limit is moved to the nearest bound and the
// answer's "notes" say so. The override shows in the group's read-out until a
// reload clears it; "keep_on_reload": true keeps it over reloads, re-applied
// onto the new file, until a later PATCH of the group without it.
//
// # Global quotas
//
// A global quota (rate scope "global") is shared by every node through
// Redis, and so is its definition: PATCH /v1/groups/{name}/global writes
// new amounts, merged onto those in force ({"rate": 50}, {"burst": 10} for
// the buckets, {"limit": 600, "window": "1m"} for the windows; the
// algorithm stays the group's), to Redis beside the quota's state, with the
// next version number. The node that takes the PATCH applies it at once;
// every other node at its next refresh (each redis heartbeat, 1s). The
// answer, and GET, show the quota in force on this node with its version
// and source: "redis" (a definition, version ≥ 1) or "config" (version 0).
// DELETE removes the definition (a mutation: it needs the token and the
// JSON content type, as POST /v1/reload does).
//
// Who wins: a definition in Redis wins over every node's TOML, at a reload
// (POST /v1/reload, SIGHUP) and at a restart, until a DELETE; then each node
// applies its own TOML again (at once for the node that takes the DELETE,
// at its next refresh for the others). While Redis holds none, each node
// applies its own TOML. A definition for an algorithm that keeps another
// state than the node's is not applied there, and the group's read-out says
// why (rate.global.quota_error). A body with an unknown field or a value of
// the wrong type is a 400 naming it; amounts the algorithm refuses a 422; a
// group without a global quota a 409; Redis failing a 503 (nothing is
// changed). Sync (exact or leased) is the node's TOML and is not shared: a
// leased node's over-admission bound follows the quota in force.
//
// # Security
//
// The listener's address decides the mode (Params.Listen, checked again on
// the address actually bound):
//
//   - loopback (a loopback IP, "localhost", a unix socket): reads are open to
//     local users; mutations need the bearer token, and with no token the API
//     is read-only (403);
//   - anything else: every request needs the token, but /livez, /readyz,
//     /v1/openapi.json and the dashboard page itself, which hold no data
//     (the page's data calls carry the token the operator types in).
//     Without a token, New and Serve refuse to start.
//
// The token is compared in constant time (of SHA-256 digests, so its length
// does not leak either). The Host header must name the listener: a loopback
// name or IP on loopback; off loopback also any IP literal, this machine's
// host name, the listen host and Params.Hosts; anything else is a 403, which
// defeats DNS rebinding. A unix socket is not checked (no browser reaches it).
// Mutations with a body need "Content-Type: application/json" (415), and
// bodies are cut at Params.MaxBodyBytes (413); one without a body (DELETE, a
// plain reload) needs no content type.
//
// # Metrics
//
// A collector reads the gate's read-outs at scrape time (no per-request
// work, no per-key labels, series bounded by the config's groups); the
// per-request histograms come from Metrics, which the gate feeds through its
// Observer hook. With the Go and process collectors, /metrics serves:
//
//	sluice_decisions_total{group,decision,outcome,reason}
//	                                               decision admitted (outcome: success,
//	                                               dropped, ignored), rejected (reason:
//	                                               why), canceled (reason: client_gone),
//	                                               shadow_rejected (reason: what a group
//	                                               or rate rule in shadow mode would have
//	                                               refused), shadow_queued (would have
//	                                               waited); shadowed requests are admitted
//	                                               and count as admitted too
//	sluice_concurrency_limit{group}, _min, _max    the limit and its bounds
//	sluice_inflight_requests{group}
//	sluice_queue_length{group}, sluice_queue_capacity{group}
//	sluice_queue_wait_bound_seconds{group}         the CoDel bound now
//	sluice_streams_open{group}, sluice_streams_max{group}, sluice_streams_opened_total{group}
//	                                               long-lived streams: open now, bound, opened
//	sluice_queue_wait_seconds{group}               histogram of queue waits
//	sluice_request_duration_seconds{group,outcome} histogram of upstream latency
//	sluice_end_to_end_duration_seconds{group,outcome}
//	                                               histogram of the wait for a slot plus
//	                                               the upstream latency
//	sluice_latency_target_seconds{group}, sluice_latency_target_quantile{group}
//	sluice_cpu_target_ratio{group}, sluice_memory_target_ratio{group}
//	sluice_cpu_utilization_ratio, sluice_memory_utilization_ratio
//	sluice_token_rate{group}                       groups with a rate limit
//	sluice_priority_floor{group}                   shedding below this priority
//	sluice_tracked_keys{group}, sluice_override_active{group}
//	sluice_limit_changes_total{group}              (Metrics.ObserveChange)
//	sluice_state_saves_total{result}               (Metrics.ObserveSave)
//	sluice_state_last_save_timestamp_seconds, sluice_state_last_save_success
//	sluice_config_reloads_total{result}, sluice_config_loaded_timestamp_seconds
//	sluice_config_info{source,hash}, sluice_build_info{version,revision,goversion}
//	sluice_control_ticks_total
//	sluice_redis_up, sluice_redis_nodes,           global quotas (rate scope "global"): the
//	sluice_redis_observed_nodes                    link to Redis, the node count the local
//	                                               fallback shares each quota by
//	sluice_redis_decisions_total{group,source}     source: redis, fallback
//	sluice_redis_errors_total{group,kind}          kind: error, timeout
//	sluice_redis_lease_bound_units{group}          leased global quotas (rate sync
//	sluice_redis_lease_outstanding_units{group}    "leased"): the over-admission bound
//	sluice_redis_lease_held_units{group}           (1.5 × rate × lease_period), the units
//	                                               leased out to all nodes and held here
//	sluice_redis_lease_decided_units_total{group,result}  result: admitted, refused
//	sluice_redis_lease_renewals_total{group,result}       result: ok, error
//
// Deprecated, kept for one release after this one and then removed:
// sluice_requests_total{group,decision,reason} (its reason label held the
// outcome of admitted requests: use sluice_decisions_total) and
// sluice_latency_seconds{group,percentile} (a gauge of the last control
// interval, absent when it had no success: use histogram_quantile over the
// histograms, which works at any scrape interval). Their help texts say so.
//
// A figure that is not known (a target that is off, a resource that cannot
// be read, a latency without samples) is left out rather than exported as 0.
// configs/grafana-dashboard.json draws the dashboard's panels from them.
//
// # Concurrency
//
// A Server is safe for concurrent use. Its one goroutine, the history
// sampler, is started by Serve and stopped by Shutdown.
package admin
