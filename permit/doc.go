// Package permit is sluice's permit service: a front-end beside the proxy,
// on the same gate, for work that is not an HTTP request sluice proxies
// (queue consumers, batch jobs, database clients). A worker asks for a
// permit of a group before a piece of work and releases it after, with the
// work's outcome and latency, so the group's limits, queue, priorities and
// control law cover that work as they cover proxied requests, and the law
// learns from it.
//
// # Model
//
// Acquire classifies the request by group name, key and priority
// (gate.Gate.ClassOf) and runs it through the group's pipeline (floor,
// rate, fair share, a concurrency slot or the queue), waiting in the queue
// for at most the request's wait, the group's queue bound and the caller's
// deadline. The request's cost is the units its rate stage spends (0: the
// group's rate.cost); its concurrency stage takes one slot whatever the
// cost (gate.Gate.EnterClassCost).
//
// A grant holds the gate.Pass under a lease: an ID and a lease length, set
// per group (Leases, DefaultLease 30s). Release(id, outcome, latency)
// finishes the pass exactly once: gate.Pass.DoneAfter with the outcome
// (success, dropped, ignored) and the latency the caller measured, or the
// time since the grant when it measured none. A permit not released before
// its lease expires is counted as expired and its slot freed, by Sweep (Run
// calls it every second) or by its late release, whichever comes first; so
// a client that dies holding permits holds no slot for longer than its
// leases. The gate is told it was ignored: an expiry says its holder
// crashed, hung or lost its way, not that the service is overloaded, so it
// is no drop to the group's law (a worker that dies holding a few permits
// must not collapse the limit); a worker whose work failed for overload
// releases it as dropped. A
// release after expiry, or a second release, frees nothing a second time;
// its answer says which it was (Result).
//
// A refusal carries what the proxy's 429/503 response to the same
// gate.Rejection carries, decided by the gate (Rejection.Answer):
// the reason, the status class (429 over quota: rate, fair_share; 503
// overload), a jittered Retry-After in whole seconds, and for reason rate
// the IETF RateLimit-Policy and RateLimit field values (draft -10).
//
// # Bounds and cost
//
// The lease table is bounded (Params.MaxLeases, DefaultMaxLeases): a
// request beyond it is refused with reason concurrency and counted in its
// group as such. It is sharded (four shards per CPU), each shard behind its
// own mutex; a grant reserves a slot in one shard and fills it after the
// gate admitted (two short locks), a release locks it once, and neither
// allocates. An ID carries its slot and a tag drawn at random at each grant
// (40 bits, from a ChaCha8 stream per shard seeded by crypto/rand): a stale
// ID never releases a later permit, and another client cannot guess a live
// one.
//
// # Transports
//
// A Server serves a Service on one listener, TCP ("127.0.0.1:7070") or a
// unix socket ("unix:///run/sluice/permit.sock"), in two protocols told
// apart by a connection's first bytes: gRPC (service
// sluice.permit.v1.Permits in permitpb, over HTTP/2) and HTTP/JSON (over
// HTTP/1.1):
//
//	POST /v1/permits              {"group": "jobs", "key": "tenant-1",
//	                               "priority": "default", "cost": 1, "wait_ms": 500}
//	  200 {"id": "5f3a0c2e00000007", "group": "jobs", "lease_ms": 30000}
//	      (in shadow mode, beyond what enforcing would grant, also
//	      "shadowed": "concurrency": the reason it would have refused)
//	  429/503 {"group": "jobs", "reason": "rate", "status": 429, "retry_after_s": 2,
//	           "ratelimit_policy": "\"jobs\";q=100;w=1", "ratelimit": "\"jobs\";r=0;t=1"}
//	          with the Retry-After, Sluice-Reason and RateLimit header fields
//	POST /v1/permits/{id}/release {"outcome": "success", "latency_ms": 12.5, "cost": 40}
//	  200 {"result": "released"} or {"result": "already_released"}
//	  410 {"result": "expired", ...}   404 {"result": "unknown", ...}
//
// Only "group" is required; "latency_ms" absent means the service measures.
// A release's "cost" (gRPC ReleaseRequest.cost) is the work's real cost,
// known only at its end: the group's rate stage is charged the difference
// from what the grant spent, or given it back (Service.ReleaseCostIn);
// absent, the grant's charge stands.
// A client may send a session with every call (HTTP header Sluice-Session,
// gRPC metadata sluice-session: 16 hexadecimal digits it drew at random;
// permitclient does): a permit granted in a session is released only in
// it, so that another client holding the token cannot release it even
// knowing its ID (it finds it unknown). A permit granted without one is
// released by its ID alone.
// Errors are {"error": MESSAGE, "field": NAME}: 400 for a field out of
// range or an unknown one, 404 for an unknown group, 401, 413 (bodies are
// cut at 4 KiB), 415 (Content-Type must be application/json).
//
// Over gRPC, Acquire and Release are unary calls, and Session carries the
// same calls on one stream, one after the other, at a fraction of a call's
// cost (permitclient keeps a pool of sessions). A refusal is the response's
// refusal, not an error status; the errors are INVALID_ARGUMENT, NOT_FOUND,
// UNAUTHENTICATED and, while the server shuts down, UNAVAILABLE (on a
// Session: the answer's error; the stream goes on). A Session's message
// carries no deadline: the caller's wait_ms bounds its wait (permitclient
// sends the time left to its context's deadline). permitclient is the Go
// client of both protocols.
//
// Shutdown closes the listener, lets the calls in progress finish (a
// caller waiting in a queue included; an idle Session ends at once, a busy
// one after its call) and then cuts what is left when its context ends.
// The permits granted stay with the Service and their leases run on.
//
// # Authentication and bounds
//
// On a TCP listener every call carries the bearer token (Authorization:
// Bearer TOKEN, or gRPC metadata "authorization", checked again for every
// call of a Session, so that a new token shuts out old sessions), compared
// in constant time; a TCP listener without a token is refused at start
// (ErrNoToken). Over gRPC the token is checked before anything is
// allocated for a call: a new connection reaches the gRPC server only once
// the headers of its first stream carried it (one without is answered
// UNAUTHENTICATED, sent GOAWAY and closed), and each later stream is
// refused as its headers arrive, before a goroutine is made for it or its
// message read. A unix socket takes no token: it is created with mode 0660
// (ServerParams.SocketMode), so its owner and group may connect; put it in
// a folder that only that group can enter (e.g. /run/sluice, 0750).
//
// A Server holds at most 1,024 connections at once, of both protocols
// (front.DefaultMaxConns; one more is closed at once), and a new one has
// 10 s to send its first bytes (over gRPC on TCP: its first stream's
// headers). Over gRPC a connection carries at most permitpb.MaxStreams
// (1,024) calls and Sessions at once, with header fields of 16 KiB;
// permitclient opens no more. Over HTTP/1.1 a request's header has 10 s
// and 16 KiB, its whole read 30 s, and an idle connection is closed after
// 2 minutes.
//
// # Concurrency safety
//
// Service and Server are safe for concurrent use. Run (the sweeper) is one
// goroutine, started and stopped by the caller; Serve runs the listener's
// goroutines and returns once they are gone.
package permit
