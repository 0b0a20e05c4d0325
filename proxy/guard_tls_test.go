package proxy

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/tlstest"
)

// serveTLS serves h as sluice run does over TLS: NewServer with TLS set, on
// GuardTLSListener. It returns the address and a client config that trusts
// the server's certificate.
func serveTLS(t *testing.T, h http.Handler) (addr string, client *tls.Config) {
	t.Helper()
	return serveTLSWith(t, ServerParams{Handler: h})
}

// serveTLSWith is serveTLS with the server's params p (TLS and DisableH2C
// set).
func serveTLSWith(t *testing.T, p ServerParams) (addr string, client *tls.Config) {
	t.Helper()
	cert, pool := tlstest.Cert(t)
	p.TLS, p.DisableH2C = true, true
	srv, err := NewServer(p)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(GuardTLSListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}}, 0)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), &tls.Config{RootCAs: pool}
}

// TestTLSListener serves the proxy over TLS: HTTP/2 is negotiated by ALPN,
// HTTP/1.1 too when the client offers only that, the proxy's handler sees
// r.TLS as under ServeTLS, and the upstream learns the original scheme from
// X-Forwarded-Proto.
func TestTLSListener(t *testing.T) {
	protos := make(chan string, 1)
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos <- r.Header.Get("X-Forwarded-Proto")
	}), false)
	px, err := New(Params{Upstream: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	seen := make(chan *tls.ConnectionState, 1)
	addr, cc := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.TLS
		px.ServeHTTP(w, r)
	}))
	for _, c := range []struct {
		name  string
		h2    bool
		alpn  string
		major int
	}{{"h2", true, "h2", 2}, {"http/1.1", false, "http/1.1", 1}} {
		t.Run(c.name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: cc.Clone(), ForceAttemptHTTP2: c.h2}
			if !c.h2 {
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
				tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
			}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.ProtoMajor != c.major {
				t.Fatalf("status %d over HTTP/%d, want 200 over HTTP/%d", resp.StatusCode, resp.ProtoMajor, c.major)
			}
			if st := recv(t, seen, "the request at the proxy"); st == nil || !st.HandshakeComplete || st.NegotiatedProtocol != c.alpn {
				t.Errorf("r.TLS %+v, want the handshake done with ALPN %q", st, c.alpn)
			}
			if p := recv(t, protos, "the upstream request"); p != "https" {
				t.Errorf("X-Forwarded-Proto %q, want https", p)
			}
		})
	}
}

// TestGuardTLSListenerCipherSuites: a TLS 1.2 client that offers only a CBC
// suite, which HTTP/2 forbids, is refused; one that offers an AEAD suite is
// served.
func TestGuardTLSListenerCipherSuites(t *testing.T) {
	addr, cc := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, c := range []struct {
		suite uint16
		ok    bool
	}{{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, false}, {tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, true}} {
		cfg := cc.Clone()
		cfg.MaxVersion, cfg.CipherSuites = tls.VersionTLS12, []uint16{c.suite}
		conn, err := tls.Dial("tcp", addr, cfg)
		if err == nil {
			conn.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("%s: handshake error %v, want success %v", tls.CipherSuiteName(c.suite), err, c.ok)
		}
	}
}

// TestGuardTLSListenerHandshakeTimeout: a client that connects and never
// starts its TLS handshake is closed at ReadHeaderTimeout, as one that never
// sends its request head is: the handshake runs under the server's deadline
// for a head, and holds no goroutine of Accept meanwhile (a second client is
// served while the first one waits).
func TestGuardTLSListenerHandshakeTimeout(t *testing.T) {
	addr, cc := serveTLSWith(t, ServerParams{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
		ReadHeaderTimeout: 100 * time.Millisecond})
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	served, err := tls.Dial("tcp", addr, cc) // while the silent one waits
	if err != nil {
		t.Fatalf("a second client, while the first never speaks: %v", err)
	}
	served.Close()
	if err := silent.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil { // half the default ReadHeaderTimeout
		t.Fatal(err)
	}
	n, err := silent.Read(make([]byte, 1))
	if err != io.EOF {
		t.Errorf("the silent client read %d bytes, %v; want the connection closed (EOF) at ReadHeaderTimeout", n, err)
	}
}
