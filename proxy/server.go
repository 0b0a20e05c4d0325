package proxy

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/internal/defaults"
)

// ServerParams configures the HTTP server in front of a Proxy. A zero field means
// its default.
//
// Slow clients are bounded without cutting long streams: ReadHeaderTimeout bounds
// the request head, IdleTimeout a keep-alive connection between requests (an
// HTTP/2 connection without an open stream), MaxHeaderBytes the head's size;
// the body and the response, over HTTP/1 and HTTP/2 alike, are bounded by the
// Proxy's ClientTimeout, a progress deadline renewed on every read and write.
// http.Server's ReadTimeout and WriteTimeout stay off: they bound a whole request
// and would kill uploads, downloads, server-sent events and gRPC streams that run
// longer.
type ServerParams struct {
	// Addr is the listen address, as for http.Server.
	Addr string
	// Handler is the Proxy (or the Proxy wrapped). Required.
	Handler http.Handler
	// ReadHeaderTimeout bounds reading a request head. Default 10s.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle for longer. Default 2m.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request head. Default 1 MiB.
	MaxHeaderBytes int
	// MaxConcurrentStreams bounds the streams open at once on one HTTP/2
	// connection; the client is told in its SETTINGS, and a stream beyond it
	// is reset (REFUSED_STREAM). Default 100: RFC 9113 §6.5.2's recommended
	// floor, and HAProxy's default (nginx's is 128, net/http's 250). Each
	// stream may hold a concurrency slot, for as long as its client makes
	// progress within the Proxy's ClientTimeout.
	MaxConcurrentStreams int
	// DisableH2C turns unencrypted HTTP/2 (prior knowledge, as gRPC clients use)
	// off, leaving HTTP/1.1 only. Over TLS it does nothing.
	DisableH2C bool
	// TLS says the server is served over TLS, on GuardTLSListener (with
	// Serve): HTTP/2 is then negotiated by ALPN and read, decrypted, as HTTP/2
	// with prior knowledge. The certificates are GuardTLSListener's.
	TLS bool
	// ErrorLog receives the server's own errors (bad requests, panics); nil is
	// net/http's default, the standard logger.
	ErrorLog *log.Logger
}

// Defaults: those of the listener are the daemon's [server] defaults too
// (package internal/defaults holds them once).
const (
	defaultReadHeaderTimeout = defaults.ReadHeaderTimeout
	defaultIdleTimeout       = defaults.IdleTimeout
	defaultMaxHeaderBytes    = defaults.MaxHeaderBytes
	defaultMaxStreams        = 100
)

// Validate reports every problem with p, joined; nil if p is usable.
func (p ServerParams) Validate() error {
	var errs []error
	if p.Handler == nil {
		errs = append(errs, errors.New("proxy: server handler is required"))
	}
	if p.ReadHeaderTimeout < 0 {
		errs = append(errs, fmt.Errorf("proxy: read header timeout must not be negative, got %v", p.ReadHeaderTimeout))
	}
	if p.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("proxy: idle timeout must not be negative, got %v", p.IdleTimeout))
	}
	if p.MaxHeaderBytes < 0 {
		errs = append(errs, fmt.Errorf("proxy: max header bytes must not be negative, got %d", p.MaxHeaderBytes))
	}
	if p.MaxConcurrentStreams < 0 {
		errs = append(errs, fmt.Errorf("proxy: max concurrent streams must not be negative, got %d", p.MaxConcurrentStreams))
	}
	return errors.Join(errs...)
}

// NewServer returns an http.Server for p, serving HTTP/1.1 and, unless disabled,
// h2c with prior knowledge (net/http's native support: no h2c Upgrade dance, which
// RFC 9113 deprecates and gRPC does not use); with p.TLS, HTTP/1.1 and HTTP/2
// over TLS. The caller runs and shuts it down.
//
// Serve it (Serve, not ServeTLS) on GuardListener(ln, p.MaxHeaderBytes), or with
// p.TLS on GuardTLSListener(ln, config, p.MaxHeaderBytes): net/http's server
// alone serves requests whose framing a proxy must refuse (Content-Length with
// Transfer-Encoding, Transfer-Encoding in HTTP/1.0), and answers a head
// unfinished at ReadHeaderTimeout with a misleading 400.
//
// On a guarded listener, the guard also tells the proxy when an HTTP/1
// client goes away, so that a request whose context is the server's own needs
// no context.AfterFunc of its own to abort its upstream exchange.
func NewServer(p ServerParams) (*http.Server, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(true) // over a *tls.Conn, were one served
	// Over GuardTLSListener the server sees the decrypted stream: HTTP/2
	// negotiated by ALPN reaches it as HTTP/2 with prior knowledge.
	protos.SetUnencryptedHTTP2(p.TLS || !p.DisableH2C)
	return &http.Server{
		Addr:              p.Addr,
		Handler:           watchedHandler{p.Handler},
		ConnContext:       serverConnContext,
		Protocols:         &protos,
		ReadHeaderTimeout: orDuration(p.ReadHeaderTimeout, defaultReadHeaderTimeout),
		IdleTimeout:       orDuration(p.IdleTimeout, defaultIdleTimeout),
		MaxHeaderBytes:    orInt(p.MaxHeaderBytes, defaultMaxHeaderBytes),
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: orInt(p.MaxConcurrentStreams, defaultMaxStreams),
		},
		ErrorLog: p.ErrorLog,
	}, nil
}
