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
//  1. normalises the request's path (see Paths), classifies the request
//     (gate.Gate.ClassifyPath: group, key, priority) and asks
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
//     upstream connections, package proxy/h1's, the head written straight from the request, the
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
// never offered to an HTTP/1.1 upstream. Hop-by-hop fields and those named by
// Connection are dropped in both directions.
//
// # Paths
//
// Groups match, and the upstream is sent, one path: the request's path as
// gate.NormalPath normalises it. Percent-encoded unreserved characters are
// decoded ("%2e" is ".", "%41" is "A"), other encodings kept (hex in upper
// case); empty segments are dropped ("//a" is "/a", as nginx's merge_slashes);
// "." and ".." segments are resolved (RFC 3986 §5.2.4; "/a/." is "/a/"). So
// "//limited/a", "/./limited/a", "/x/../limited/a" and "/%2e/limited/a" are all
// counted in the group of /limited/ and forwarded as "GET /limited/a". The
// query is forwarded as it came. What upstreams read in different ways, or
// no client sends, is answered 400 with Sluice-Error: path, and reaches
// neither the gate nor the upstream: ".." above the root (nginx answers 400
// too), an encoded slash "%2F", any backslash, raw or "%5C", a "." or ".."
// segment with ";" parameters raw or encoded ("/..;/", which Tomcat reads as
// "/../"), a malformed escape or one of a control character ("%00", "%0A"),
// a raw "#", space or control character (an HTTP/2 :path can hold one), and
// a segment that begins or ends with an encoded space ("/login%20", which
// some upstreams trim). nginx, for comparison, matches its locations on the
// decoded, merged, dot-resolved path too, "%2F" decoded into a separator,
// but proxy_pass without a URI forwards the raw request line, which the
// upstream may read another way than the location did; Apache answers
// "%2F" with 404 by default (AllowEncodedSlashes Off). Path parameters
// (";x" in other segments, raw or "%3B") are forwarded as they came and set
// aside for matching, as Tomcat and Spring route them: "/limited;x/a" is
// counted in the group of /limited/. A group may also match its path
// ignoring case or a trailing slash (match.case_insensitive,
// match.trailing_slash), for an upstream that routes so. A request that
// sends its group's key header twice is answered 400 with Sluice-Error: key.
//
// # Forwarding
//
// The forwarding fields are believed only from a trusted peer (the gate's
// config's server.trusted_proxies, Gate.TrustedProxies; Params.TrustedProxies
// without a gate). From a trusted peer, X-Forwarded-For is passed on with the
// peer's address appended, and X-Forwarded-Proto, X-Forwarded-Host, Forwarded
// and X-Real-IP are kept. From any other peer they are replaced, never
// appended to: X-Forwarded-For is the peer's address alone, X-Forwarded-Proto
// the scheme it connected with, X-Forwarded-Host is set only when Params.Host
// rewrites Host (to the client's Host), Forwarded and X-Real-IP are dropped.
// Names of those fields spelled with underscores ("X_Forwarded_For"), which
// CGI-style upstreams read as the fields themselves, are dropped from every
// peer. The gate's "ip" key is the right-most X-Forwarded-For address not
// trusted, walking from the peer (gate.TrustedProxies.ClientAddr): the address
// the upstream is told and the one a quota counts are the same.
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
// Sluice-Error header naming the class (connect, reset, protocol, timeout) and
// count as dropped. A failure of this side's own making (no file descriptor,
// buffer or local port left: EMFILE, ENFILE, ENOBUFS, ENOMEM, EADDRNOTAVAIL)
// is no sign of the upstream's health: it is 503 with Sluice-Error: local and
// Retry-After: 1, counts as ignored (the breaker and the gate's law do not see
// it) and goes to Params.OnLocalError. Every change of the breaker's state
// goes to breaker.Params.OnChange, with a reason ("5 failures in a row (last:
// connect)"), and Breaker.Status says the state, since when and why. A request that
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
// H1Server, sluice's own HTTP/1.1 server, serves a Proxy on plain text (the
// daemon's default, server.http1 = "sluice"): it reads each request head with
// the proxy's one request parser (package proxy/h1: net/http's server's rules,
// made stricter where a proxy must not be lax, RFC 9112 §6 and §11), serves it on
// the connection's goroutine with its fields read in place, writes a gate's
// refusal from prebuilt bytes, and hands a connection that opens with HTTP/2's
// preface to net/http's server (h2c).
//
// NewServer builds net/http's http.Server in front of a Proxy (HTTP/1.1 and
// h2c; over TLS, HTTP/2 too), to be served on a GuardListener, which reads each
// head with the same parser and refuses (400, and the connection closed) what
// it refuses, among it the framing net/http's server tolerates but nginx
// refuses (Content-Length with Transfer-Encoding, Transfer-Encoding in
// HTTP/1.0), never passing a request on unread: the two servers decide a
// request's framing alike. For HTTPS, GuardTLSListener terminates TLS under
// the same guard. Under either server, a LimitListener bounds the connections open at once (server.max_connections)
// and answers one beyond the bound with 503 and Connection: close. Slow
// clients are bounded by ReadHeaderTimeout, IdleTimeout and MaxHeaderBytes there,
// and by the Proxy's ClientTimeout, a progress deadline on body reads and
// response writes, instead of a whole-request ReadTimeout or WriteTimeout that
// would cut long streams. The deadline holds HTTP/2 streams (gRPC's included) as
// it holds HTTP/1 connections: a stream whose client grants no flow-control
// window, or does not send the body it announced, ends (reset, or 408) and
// gives its concurrency slot back; one connection opens at most
// MaxConcurrentStreams (100) streams at once.
package proxy
