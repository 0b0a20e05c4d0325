package proxy

import (
	"crypto/tls"
	"net"
	"sync"
)

// GuardTLSListener is GuardListener for HTTPS: it terminates TLS on each
// connection it accepts, with config, and guards the plain text inside, so
// that requests over TLS are held to the same framing rules as over TCP. (A
// server that terminates TLS itself, ServeTLS, reads the plain text where no
// wrapper can sit.)
//
// ALPN offers h2 and http/1.1. A TLS 1.2 connection is limited to the ECDHE
// AEAD cipher suites unless config names its own (RFC 9113 §9.2.2 forbids the
// others under HTTP/2, as net/http's ServeTLS enforces). The handshake runs at
// the connection's first read, under the server's ReadHeaderTimeout: Accept
// never waits on a client.
//
// Serve it with Serve, never ServeTLS, on a server from NewServer whose
// ServerParams.TLS is set: that server reads HTTP/2 negotiated by ALPN as
// HTTP/2 with prior knowledge on the decrypted stream, and gives every
// request its r.TLS, as ServeTLS does. config is cloned; later changes to it
// do not apply.
func GuardTLSListener(ln net.Listener, config *tls.Config, maxHeaderBytes int) net.Listener {
	c := config.Clone()
	c.NextProtos = []string{"h2", "http/1.1"}
	if c.CipherSuites == nil {
		c.CipherSuites = h2CipherSuites
	}
	if c.MinVersion < tls.VersionTLS12 {
		c.MinVersion = tls.VersionTLS12 // RFC 9113 §9.2
	}
	return &guardListener{Listener: ln, limit: orInt(maxHeaderBytes, defaultMaxHeaderBytes) + 4096, tls: c}
}

// h2CipherSuites are the TLS 1.2 suites HTTP/2 permits that crypto/tls
// implements: ECDHE key exchange with an AEAD. (TLS 1.3's are not
// configurable, and all are permitted.)
var h2CipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// connTLS is the TLS state of a guarded connection over TLS, computed at its
// first request (the handshake is done by then). Concurrency: safe; HTTP/2
// streams of one connection ask at once.
type connTLS struct {
	conn  *tls.Conn
	once  sync.Once
	state *tls.ConnectionState
}

// connectionState returns the connection's TLS state, one value shared by
// all its requests (as net/http shares it between the streams of an HTTP/2
// connection).
func (c *connTLS) connectionState() *tls.ConnectionState {
	c.once.Do(func() {
		st := c.conn.ConnectionState()
		c.state = &st
	})
	return c.state
}
