package redis

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCerts makes a CA and a certificate for 127.0.0.1 signed by it, as
// PEM files in dir: ca.pem, server.pem, server.key.
func writeCerts(t *testing.T, dir string) {
	t.Helper()
	caKey := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER := must(x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey))
	key := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER := must(x509.CreateCertificate(rand.Reader, leaf, must(x509.ParseCertificate(caDER)), &key.PublicKey, caKey))
	keyDER := must(x509.MarshalECPrivateKey(key))
	for name, block := range map[string]*pem.Block{
		"ca.pem": {Type: "CERTIFICATE", Bytes: caDER}, "server.pem": {Type: "CERTIFICATE", Bytes: leafDER},
		"server.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTLSAndPassword talks to a redis-server that speaks only TLS and wants
// a password, with the CA and the password read from files, as the
// [redis] section names them.
func TestTLSAndPassword(t *testing.T) {
	certs := t.TempDir()
	writeCerts(t, certs)
	srv := newServer(t,
		"--tls-cert-file", filepath.Join(certs, "server.pem"), "--tls-key-file", filepath.Join(certs, "server.key"),
		"--tls-ca-cert-file", filepath.Join(certs, "ca.pem"), "--tls-auth-clients", "no", "--requirepass", "s3cret")
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(must(os.ReadFile(filepath.Join(certs, "ca.pem"))))
	srv.TLS = &tls.Config{RootCAs: roots}
	srv.Start()
	pwFile := filepath.Join(certs, "password")
	if err := os.WriteFile(pwFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(p StoreParams) *Limiter {
		t.Helper()
		p.Address, p.Heartbeat, p.Timeout = srv.Addr(), -1, time.Second
		l, err := New(Params{StoreParams: p, LimiterParams: LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 1, Burst: 2}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}

	l := open(StoreParams{TLS: &tls.Config{MinVersion: tls.VersionTLS12}, CAFile: filepath.Join(certs, "ca.pem"), PasswordFile: pwFile})
	if r := l.Allow("k", 1); !r.Allowed || r.Remaining != 1 || l.Status().RedisDecisions != 1 {
		t.Fatalf("over TLS with the password: %+v, %+v", r, l.Status())
	}
	for _, c := range []struct {
		name string
		p    StoreParams
		want string
	}{
		{"untrusted certificate", StoreParams{TLS: &tls.Config{}, PasswordFile: pwFile}, "certificate"},
		{"wrong password", StoreParams{TLS: &tls.Config{}, CAFile: filepath.Join(certs, "ca.pem"), Password: "nope"}, "WRONGPASS"},
		{"no TLS", StoreParams{Password: "s3cret"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := open(c.p)
			l.Allow("k", 1)
			if st := l.Status(); st.RedisDecisions != 0 || st.Errors != 1 || !strings.Contains(st.LastError, c.want) {
				t.Fatalf("want one failed call mentioning %q, got %+v", c.want, st)
			}
		})
	}
	for _, c := range []struct {
		p    StoreParams
		want string
	}{
		{StoreParams{Address: srv.Addr(), CAFile: "/x"}, "only used with TLS"},
		{StoreParams{Address: srv.Addr(), TLS: &tls.Config{}, CAFile: pwFile}, "no PEM certificate"},
		{StoreParams{Address: srv.Addr(), TLS: &tls.Config{}, CAFile: filepath.Join(certs, "missing")}, "reading the CA file"},
		{StoreParams{Address: srv.Addr(), PasswordFile: filepath.Join(certs, "missing")}, "reading the password file"},
		{StoreParams{SentinelAddresses: []string{srv.Addr()}, MasterName: "m", SentinelPasswordFile: filepath.Join(certs, "missing")},
			"reading the sentinel password file"},
	} {
		if _, err := Open(c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v) = %v, want an error with %q", c.p, err, c.want)
		}
	}
}
