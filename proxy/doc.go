// Package proxy is sluice's HTTP reverse proxy: it forwards requests to one
// upstream over HTTP/1.1 or h2c (gRPC), asks the admission pipeline (a
// gate.Gate) whether each request may pass, reports every admitted request's
// outcome and latency back to it exactly once, and keeps a circuit breaker on
// the upstream.
//
// # Data path
//
// For each request ServeHTTP
//
//  1. classifies the request (gate.Gate.Classify: group, key, priority) and asks
//     the circuit Breaker (one atomic load while closed); an open circuit
//     answers 503 with reason circuit_open at once, counted in the request's
//     group (gate.Gate.Reject);
//  2. asks the gate (gate.Gate.EnterClass; a nil gate admits everything): a
//     gate.Rejection is answered as the gate renders it (429 for a client over
//     its quota, 503 for overload, with a jittered Retry-After, Sluice-Reason
//     and, for rate limits, the RateLimit-Policy and RateLimit fields) — or,
//     for gRPC, as a trailers-only response with those fields, grpc-status
//     RESOURCE_EXHAUSTED (over quota) or UNAVAILABLE (overload) and
//     grpc-retry-pushback-ms;
//  3. forwards the request: HTTP/1.1 through the proxy's own client (a pool of
//     upstream connections, the head written straight from the request, the
//     response head parsed straight into the client's header map, small bodies
//     copied out of the connection's read buffer, no goroutine per request unless
//     the request body streams), gRPC through net/http's h2c Transport;
//  4. finishes: the gate.Outcome (success: 1xx–3xx, gRPC OK; dropped: 5xx,
//     timeouts, connection failures, gRPC overload and server faults; ignored:
//     4xx, the caller's gRPC errors, a client that went away) goes to the
//     breaker and, with the upstream latency, to the gate (gate.Pass.DoneAfter).
//
// Bodies stream both ways without buffering: the proxy flushes to the client
// whenever it would otherwise wait for the upstream. WebSocket and other
// HTTP/1.1 upgrades are spliced once the upstream answers 101 with Connection:
// upgrade and the Upgrade the client offered (else 502, and no tunnel); h2c is
// never offered to an HTTP/1.1 upstream. X-Forwarded-For and X-Forwarded-Proto
// are set as Params.Forwarding says; hop-by-hop fields and those named by
// Connection are dropped in both directions.
//
// # Framing
//
// The HTTP/1.1 client is never laxer than net/http's Transport, and
// proxy/diff_test.go checks it against net/http on a table of raw exchanges. A
// pooled connection is looked at (a non-blocking peek) each time it leaves the
// pool: one the upstream closed, or that holds bytes no request asked for (a
// second response, a body after HEAD, 204 or 304, a body beyond its length), is
// closed, so that no client ever reads another's response; so is one whose
// response left bytes beyond its end, or a 204 that announced a body. Chunk
// lines and trailers end in CRLF only, a chunk size has at most 16 digits, and
// chunk framing and extensions may cost 16 bytes per chunk plus twice the data,
// with 16 KiB to spare (net/http's bounds); a Content-Length is one decimal
// number (repeated identical fields are taken, a list is not); Transfer-Encoding
// in an HTTP/1.0 response is refused; at most 5 interim (1xx) responses precede
// the final one and share its head budget. A response without Content-Type gets
// none added (net/http's server would sniff one).
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
// NewServer builds the http.Server in front of a Proxy (HTTP/1.1 and h2c), to be
// served on a GuardListener, which refuses (400, and the connection closed) the
// request framing net/http's server tolerates but nginx refuses: Content-Length
// with Transfer-Encoding, Transfer-Encoding in HTTP/1.0. Slow
// clients are bounded by ReadHeaderTimeout, IdleTimeout and MaxHeaderBytes there,
// and by the Proxy's ClientTimeout, a progress deadline on body reads and
// response writes, instead of a whole-request ReadTimeout or WriteTimeout that
// would cut long streams.
package proxy
