// Package proxy is sluice's HTTP reverse proxy: it forwards requests to one
// upstream over HTTP/1.1 or h2c (gRPC), asks an Admitter whether each request may
// pass, reports every admitted request's outcome and latency back exactly once,
// and keeps a circuit breaker on the upstream.
//
// # Data path
//
// For each request ServeHTTP
//
//  1. asks the circuit Breaker (one atomic load while closed); an open circuit
//     answers 503 with reason circuit_open at once;
//  2. asks the Admitter (nil admits everything); a Rejection becomes 429 (rate)
//     or 503 (overload) with a jittered Retry-After, Sluice-Reason and, for rate
//     limits, the RateLimit-Policy and RateLimit fields — or, for gRPC, a
//     trailers-only response with grpc-status RESOURCE_EXHAUSTED or UNAVAILABLE;
//  3. forwards the request: HTTP/1.1 through the proxy's own client (a pool of
//     upstream connections, the head written straight from the request, the
//     response head parsed straight into the client's header map, small bodies
//     copied out of the connection's read buffer, no goroutine per request unless
//     the request body streams), gRPC through net/http's h2c Transport;
//  4. finishes: the Outcome (success, dropped, ignored; see Outcome) goes to the
//     breaker and to the Admitter's Finish.
//
// Bodies stream both ways without buffering: the proxy flushes to the client
// whenever it would otherwise wait for the upstream. WebSocket and other
// HTTP/1.1 upgrades are spliced once the upstream answers 101. X-Forwarded-For
// and X-Forwarded-Proto are set as Params.Forwarding says; hop-by-hop fields and
// those named by Connection are dropped in both directions.
//
// # Failures
//
// A refused or reset upstream connection or a malformed response is 502, an
// upstream that makes no progress within UpstreamTimeout is 504; both carry a
// Sluice-Error header naming the class and count as dropped. A request that
// fails on a reused connection before any response byte arrived is sent once
// more on a fresh connection when that is safe. A response cut mid-body is
// aborted (http.ErrAbortHandler), never passed on as complete. A client that
// goes away closes the upstream connection, so the upstream can stop working on
// the request; its outcome is ignored. An upstream that answers before taking
// the whole request body (413, say) has its answer passed on at once; the rest of
// the body is then read and dropped for a while (2 s, 256 KiB) before the client's
// connection closes, so that the client is not reset while it still writes.
//
// # Servers and slow clients
//
// NewServer builds the http.Server in front of a Proxy (HTTP/1.1 and h2c). Slow
// clients are bounded by ReadHeaderTimeout, IdleTimeout and MaxHeaderBytes there,
// and by the Proxy's ClientTimeout, a progress deadline on body reads and
// response writes, instead of a whole-request ReadTimeout or WriteTimeout that
// would cut long streams.
//
// Everything the admission pipeline (package gate) must provide is in
// admission.go.
package proxy
