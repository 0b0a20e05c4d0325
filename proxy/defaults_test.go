package proxy

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/configs"
)

// TestDefaultsAreTheDaemons: a zero field of Params and ServerParams means
// what the daemon runs when its file leaves the key out (configs.New), so
// that the library and the daemon never state one default twice and
// differently (they held 512 and 256 idle connections, 60s and 30s of
// upstream timeout, 64 KiB and 1 MiB of request head).
func TestDefaultsAreTheDaemons(t *testing.T) {
	cfg := configs.New()
	px, err := New(Params{Upstream: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	u := &cfg.Upstream
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"upstream timeout (upstream.response_header_timeout)", px.upstreamTimeout, time.Duration(u.ResponseHeaderTimeout)},
		{"dial timeout (upstream.dial_timeout)", px.pool.Dialer.Timeout, time.Duration(u.DialTimeout)},
		{"idle connections (upstream.max_idle_conns_per_host)", px.pool.MaxIdle(), u.MaxIdleConnsPerHost},
		{"idle connection timeout (upstream.idle_conn_timeout)", px.pool.IdleTimeout(), time.Duration(u.IdleConnTimeout)},
	} {
		if c.got != c.want {
			t.Errorf("proxy.Params' default %s is %v, the daemon's %v", c.name, c.got, c.want)
		}
	}

	srv, err := NewServer(ServerParams{Handler: px})
	if err != nil {
		t.Fatal(err)
	}
	s := &cfg.Server
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"read header timeout (server.read_header_timeout)", srv.ReadHeaderTimeout, time.Duration(s.ReadHeaderTimeout)},
		{"idle timeout (server.idle_timeout)", srv.IdleTimeout, time.Duration(s.IdleTimeout)},
		{"max header bytes (server.max_header_bytes)", srv.MaxHeaderBytes, s.MaxHeaderBytes},
	} {
		if c.got != c.want {
			t.Errorf("proxy.ServerParams' default %s is %v, the daemon's %v", c.name, c.got, c.want)
		}
	}
}
