package redis

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/tlstest"
)

// TestTLSAndPassword talks to a redis-server that speaks only TLS and wants
// a password, with the CA and the password read from files, as the
// [redis] section names them.
func TestTLSAndPassword(t *testing.T) {
	certs := t.TempDir()
	// The certificate is its own CA: the server's CA file and the client's.
	cert, key, roots := tlstest.Files(t, certs)
	srv := newServer(t, "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", cert, "--tls-auth-clients", "no", "--requirepass", "s3cret")
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

	l := open(StoreParams{TLS: &tls.Config{MinVersion: tls.VersionTLS12}, CAFile: cert, PasswordFile: pwFile})
	if r := l.Allow("k", 1); !r.Allowed || r.Remaining != 1 || l.Status().StoreDecisions != 1 {
		t.Fatalf("over TLS with the password: %+v, %+v", r, l.Status())
	}
	for _, c := range []struct {
		name string
		p    StoreParams
		want string
	}{
		{"untrusted certificate", StoreParams{TLS: &tls.Config{}, PasswordFile: pwFile}, "certificate"},
		{"wrong password", StoreParams{TLS: &tls.Config{}, CAFile: cert, Password: "nope"}, "WRONGPASS"},
		{"no TLS", StoreParams{Password: "s3cret"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := open(c.p)
			l.Allow("k", 1)
			if st := l.Status(); st.StoreDecisions != 0 || st.Errors != 1 || !strings.Contains(st.LastError, c.want) {
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
